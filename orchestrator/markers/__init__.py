"""Case markers: the pytest plugin that prints them into the checker's output, and the reader
that takes them back."""
