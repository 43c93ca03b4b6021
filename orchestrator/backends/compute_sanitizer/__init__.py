"""The compute-sanitizer backend (memcheck, initcheck, racecheck, synccheck): the log grammar
and its fast path."""
