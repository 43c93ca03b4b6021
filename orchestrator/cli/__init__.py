"""The csorch command line: the only package that prints (with Rich) and exits.

One module a verb family (run, gate/compare, bisect/probe, report, verify/doctor); each
registers its commands on `app` when imported below.

Verbs map to pipelines of the stage modules; each verb returns one of `ExitCode`:
0 pass, 1 fail, 2 usage error (bad arguments or config, a checker asked for but
missing; also Click's own code), 3 inconclusive (also an interrupted run, whose bundle
is left marked incomplete). `csorch bisect`/`probe` will speak git's 0/1/125 instead.
"""

from orchestrator.cli import bisect, gate, inspect, report, run, slurm  # noqa: F401 (each registers its verbs)
from orchestrator.cli.common import ExitCode, app  # noqa: F401 (the console script and tests)
