"""The csorch command line: the only package that prints (with Rich) and exits.

One module a verb (run, scan, gate, compare, bisect, probe, report, verify, doctor, check,
init, schema, and the hidden slurm-task), each registering its command on `app` when imported
below; `common` holds what they share and the one boundary where the library's errors,
interrupts and signals become exit codes, `progress` the listener that shows what run, gate
and compare do while experiments run. A verb turns its flags into a call of the library and
prints; the work is below, and so is every error it raises (the verb translates none).

Verbs map to pipelines of the stage modules; each verb returns one of `ExitCode`:
0 pass, 1 fail, 2 usage error (bad arguments or config, a checker asked for but
missing; also Click's own code), 3 inconclusive (also an interrupted run, whose bundle
is left marked incomplete). `csorch probe` speaks git's 0/1/125 instead.
"""

from orchestrator.cli import (  # noqa: F401 (each registers its verbs)
    bisect,
    check,
    compare,
    doctor,
    gate,
    init,
    probe,
    report,
    run,
    scan,
    schema,
    slurm,
    verify,
)
from orchestrator.cli.common import ExitCode, app  # noqa: F401 (the console script and tests)
