"""The generative hostile suite's settings and shared places.

Two hypothesis profiles of its own, chosen by the active one: every example here is a
real csorch run (seconds), so the parsers' profiles (`tests/fuzz/conftest.py`: 150 and
26,000 examples) do not fit.
- `hostile-ci` (the default, and what `make test` runs): a handful of examples per test,
  derandomized (CI cannot flake on a new draw), no deadline, no shrinking (each step
  of it is a real run); the whole suite in about a minute and a half on 2 cores.
- `hostile-fuzz` (`make fuzz`, or `--hypothesis-profile hostile-fuzz`; also under the
  parsers' `fuzz` when both run in one session): a hundred
  fresh random examples per test, the blob that reproduces a failure printed.
Neither writes an example database (nothing in the work tree).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis", reason="the generative suite needs hypothesis")
from hypothesis import HealthCheck, Phase, settings  # noqa: E402

from orchestrator import sandbox  # noqa: E402

_COMMON = dict(
    deadline=None,  # a real run on 2 shared cores: a slow example is load, not a bug
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)  # fmt: skip
# no shrinking in CI (each step is a real run: minutes), nor explaining anywhere
settings.register_profile("hostile-ci", max_examples=5, derandomize=True,
                          phases=(Phase.explicit, Phase.generate), **_COMMON)  # fmt: skip
settings.register_profile("hostile-fuzz", max_examples=100, print_blob=True,
                          phases=(Phase.explicit, Phase.generate, Phase.shrink),
                          **_COMMON)  # fmt: skip


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:  # every test here starts csorch, a compiler and the subject
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.process)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module", autouse=True)
def sandbox_on() -> Iterator[None]:
    """The sandbox opted into (`CSORCH_SANDBOX=1`, passed on to every csorch started
    here), as it will be by default; its probe asked afresh."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(sandbox.ENV, "1")
        sandbox.probe.cache_clear()
        yield
    sandbox.probe.cache_clear()


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per session for what the examples share: the build cache (a
    subject's control, the same in every example, is built once) and bundles."""
    if shutil.which("cc") is None or shutil.which("make") is None:
        pytest.skip("the generated subjects need cc and make")
    root = tmp_path_factory.mktemp("generative")
    (root / "cache").mkdir()
    return root
