"""The `csorch run` pipeline: options, plan, sources, build, journal and resume, around the
executors and the judge."""
