"""Hostile text for the property tests of every string csorch passes on (an argv, an
environment variable, a parser): spaces, colons, quotes, `=`, `,`, `%`, backslashes,
newlines, NUL, bytes that are not UTF-8 (as Python holds them: surrogateescape), and
very long. Quick and derandomized, so CI cannot flake on a new draw (`make fuzz`'s
profiles are tests/fuzz's)."""

from __future__ import annotations

import os

import pytest

hypothesis = pytest.importorskip(
    "hypothesis", reason="hypothesis is a CPU-machine test dependency (make setup)"
)
from hypothesis import HealthCheck, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

QUICK = settings(
    max_examples=120,
    derandomize=True,
    database=None,  # nothing written into the work tree
    deadline=None,  # 2 shared cores: a slow example is load, not a bug
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: the characters that break a string passed on unquoted
NASTY = " \t\n\r:;,='\"%\\$`*?[]{}()<>|&!#~-+@^/"
_undecodable = st.binary(min_size=1, max_size=4).map(
    lambda b: os.fsdecode(b"\xff" + b)  # never UTF-8: held as surrogates
)
_piece = st.one_of(
    st.text(alphabet=NASTY, min_size=1, max_size=6),
    st.text(min_size=1, max_size=8),
    _undecodable,
    st.sampled_from(["..", "--output=x", "-o", "%p", "%%", "%A", "\\", "\x00", "é", "名"]),
)
#: any text at all, made mostly of the pieces that break quoting
hostile = st.lists(_piece, min_size=1, max_size=8).map("".join)
#: hostile text that can still be a file name's part (no NUL, no slash)
hostile_name = hostile.map(lambda s: s.replace("\x00", "").replace("/", "")).filter(
    lambda s: s not in ("", ".", "..") and len(os.fsencode(s)) < 200
)
#: very long hostile text
long_text = st.builds(lambda s, n: (s * n)[:200_000], hostile, st.integers(1000, 50_000))
