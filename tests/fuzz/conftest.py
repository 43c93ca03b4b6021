"""Hypothesis profiles for the parser fuzzing, and the count of inputs fed per parser.

- `ci` (the default): a few seconds per parser, derandomized (the same inputs every
  run, so CI cannot flake on a new random draw; `make fuzz` explores).
- `fuzz` (`make fuzz`, or `--hypothesis-profile fuzz`): at least 100,000 inputs per
  parser, freshly random each run; a failure prints the blob that reproduces it.

hypothesis is a test-only dependency installed by `make setup` on CPU machines; where it
is missing (the offline GPU machine) every module here skips with that reason.
"""

from __future__ import annotations

try:
    from hypothesis import HealthCheck, settings
except ImportError:  # the modules skip themselves through pytest.importorskip
    settings = None

if settings is not None:
    _common = dict(
        deadline=None,  # 2 shared cores: a slow example is load, not a bug
        database=None,  # nothing written into the work tree
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    settings.register_profile("ci", max_examples=150, derandomize=True, **_common)
    # per test; each parser has 4 or 5 tests, so >= 100,000 inputs per parser
    settings.register_profile("fuzz", max_examples=26_000, print_blob=True, **_common)
    settings.load_profile("ci")


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    try:
        from fuzzlib import FED
    except ImportError:  # hypothesis missing: nothing was fed
        return
    if FED:
        line = ", ".join(f"{parser} {n:,}" for parser, n in sorted(FED.items()))
        terminalreporter.write_line(f"fuzz inputs fed: {line}")


