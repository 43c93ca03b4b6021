"""suppressions: the tool's suppression XML, read and matched by csorch; matched findings
stay, marked; a suppression that matches nothing is reported."""

from __future__ import annotations

from pathlib import Path

import pytest

from orchestrator.backends.compute_sanitizer.log import parse
from orchestrator.config.experiment import load_experiment
from orchestrator.errors import ConfigError
from orchestrator.findings.suppressions import apply, load, matches, unmatched, why_unmatched

P = "========="
LOG = [
    f"{P} COMPUTE-SANITIZER",
    f'{P} Program hit cudaErrorMemoryAllocation (error 2) due to "out of memory" on CUDA API'
    " call to cudaMalloc.",
    f"{P}     Saved host backtrace up to driver entry point at error",
    f"{P}         Host Frame: cudaMalloc [0x51a2e] in libcudart.so.13",
    f"{P}         Host Frame: grow(unsigned long) [0x1b2c] in /scratch/v/app",
    f"{P}         Host Frame: main [0x1c2d] in /scratch/v/app",
    P,
    f"{P} Invalid __global__ write of size 4 bytes",
    f"{P}     at scale(float *, int)+0x70 in scale.cu:6",
    f"{P}     by thread (3,0,0) in block (0,0,0)",
    f"{P}     Address 0x7f0000000400 is out of bounds",
    P,
    f"{P} ERROR SUMMARY: 2 errors",
]
# the shape `compute-sanitizer --xml --save` writes for an API error (host stack
# innermost first, as the H200 wrote it), edited to a regex
API_XML = """<?xml version="1.0" encoding="utf-8"?>
<ComputeSanitizerOutput>
<record>
<kind>Api</kind>
<what>
<text>Program hit cudaErrorMemoryAllocation (error 2) due to out of memory on CUDA API call \
to cudaMalloc.</text>
<api>cuda.*</api>
<error>cudaErrorMemoryAllocation</error>
<message>out of memory</message>
<result>2</result>
</what>
<hostStack>
<frame><func>cudaMalloc</func><module>libcudart.so.13</module></frame>
<frame><func>grow.*</func><module>app</module></frame>
<frame><func>main</func><module>app</module></frame>
</hostStack>
</record>
<record>
<kind>Precise</kind>
<what><size>8</size><space>global</space></what>
</record>
<record>
<kind>Surprise</kind>
</record>
</ComputeSanitizerOutput>
"""


@pytest.fixture
def xml(tmp_path: Path) -> Path:
    path = tmp_path / "supp.xml"
    path.write_text(API_XML)
    return path


def test_matching_findings_stay_and_are_marked(xml: Path) -> None:
    records = load(xml)
    assert [r.kind for r in records] == ["Api", "Precise", "Surprise"]
    assert records[0].stack == "host" and records[0].frames[0][0] == "cudaMalloc"
    result = apply(parse(LOG), records)
    api, access = result.findings
    assert api.suppressed == f"{xml}#1" and access.suppressed == ""
    # nothing removed: csorch's count still equals the tool's
    assert result.summary_count == len(result.findings) == 2 and result.conclusive
    left = unmatched(records, result.findings)
    assert [r.source for r in left] == [f"{xml}#2", f"{xml}#3"]
    assert "no finding" in why_unmatched(left[0])
    assert "does not know that kind" in why_unmatched(left[1])


def test_integer_fields_match_exactly_and_strings_whole(xml: Path) -> None:
    api = parse(LOG).findings[0]
    record = load(xml)[0]
    assert matches(record, api)
    wrong = record.__class__(record.source, record.kind, (("api", "cuda"), ("result", "2")), (), "")
    assert not matches(wrong, api)  # "cuda" does not match "cudaMalloc" whole
    other = record.__class__(record.source, record.kind, (("result", "3"),), (), "")
    assert not matches(other, api)


def test_a_stack_frame_that_differs_stops_the_match(xml: Path) -> None:
    text = API_XML.replace("<func>grow.*</func>", "<func>shrink</func>")
    xml.write_text(text)
    assert not matches(load(xml)[0], parse(LOG).findings[0])


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("<ComputeSanitizerOutput><record>", "not a valid suppression file"),
        ("<Other/>", "not <ComputeSanitizerOutput>"),
        ("<ComputeSanitizerOutput/>", "has no <record>"),
        ("<ComputeSanitizerOutput><record><what/></record></ComputeSanitizerOutput>", "no <kind>"),
        (
            "<ComputeSanitizerOutput><record><kind>Api</kind><what><api>cuda(</api></what>"
            "</record></ComputeSanitizerOutput>",
            "not a valid regular expression",
        ),
    ],
)
def test_bad_files_name_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bad.xml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load(path)
    assert info.value.file == path and words in str(info.value)


def test_a_run_reads_its_suppressions_relative_to_the_config(tmp_path: Path, xml: Path) -> None:
    (tmp_path / "src").mkdir()
    config = tmp_path / "exp.yaml"
    config.write_text(
        "name: demo\nsource: src\nvariants:\n  - {name: v, build: {kind: command, command: "
        "[echo]}}\nruns:\n  - name: mc\n    checker: memcheck\n    suppressions: [supp.xml]\n"
        "cases:\n  - [echo, hi]\n"
    )
    (run,) = load_experiment(config).runs
    assert [s.source for s in run.suppressions] == [f"{xml}#{i}" for i in (1, 2, 3)]
    assert run.from_dict(run.to_dict()) == run  # the bundle keeps them


H200 = Path(__file__).resolve().parents[2] / "fixtures" / "compute-sanitizer" / "cudabugs-h200"


@pytest.mark.parametrize(
    "name",
    [
        "api_error.control.memcheck",
        "leak.control.memcheck-leak-full",
        "race.control.racecheck",
        "syncdiv.control.synccheck",
    ],
)
def test_the_tools_own_xml_of_a_run_suppresses_that_runs_findings(
    name: str, tmp_path: Path
) -> None:
    """The tool's workflow: `--xml --save` a run, make it generic (here: drop the
    addresses, which change from run to run), use it as suppressions. On the H200's
    captures each XML record marks the findings of the same program's text log (the
    kinds, fields and stacks as the tool writes them), and nothing is dropped."""
    import re

    from orchestrator.model import Checker

    checker = Checker(name.split(".")[2].split("-")[0])
    parsed = parse((H200 / f"{name}.log").read_text().splitlines(), checker=checker)
    generic = tmp_path / "generic.xml"
    generic.write_text(re.sub(r"<address>[^<]*</address>", "", (H200 / f"{name}.xml").read_text()))
    marked = apply(parsed, load(generic))
    assert parsed.findings and len(marked.findings) == len(parsed.findings)
    assert all(f.suppressed for f in marked.findings), [
        f for f in marked.findings if not f.suppressed
    ]
    # and another run's records match none of them
    other = apply(parsed, load(H200 / "oob_write.control.memcheck-destroy-kernel.xml"))
    assert not any(f.suppressed for f in other.findings)
