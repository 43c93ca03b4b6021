"""Renderers of a run's records: the terminal table today; Markdown, JUnit, SARIF and
JSON next (issue #6). Rich is imported only here and in the CLI."""
