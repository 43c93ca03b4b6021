"""report.html: the HTML page of real ASan bundles is self-contained (no script, nothing
fetched), escapes what the bundle says, and shows the verdict, the table and the chart."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from orchestrator import bundle
from orchestrator.report import html, markdown
from unit.report.test_markdown import edited


class Page(HTMLParser):
    """Every start tag with its attributes, and the text, as a browser's parser sees it."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(text)

    def handle_starttag(self, tag, attrs):  # type: ignore[no-untyped-def]
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data):  # type: ignore[no-untyped-def]
        self.text.append(data)

    def named(self, tag: str) -> list[dict[str, str]]:
        return [a for t, a in self.tags if t == tag]


def page(path: Path) -> tuple[str, Page]:
    text = html.render(*bundle.read(path))
    return text, Page(text)


def test_self_contained_no_script_nothing_fetched(cprog_bundles) -> None:
    for path in cprog_bundles.values():
        text, doc = page(path)
        assert text.startswith("<!DOCTYPE html>")
        assert not doc.named("script") and not doc.named("link") and not doc.named("iframe")
        assert not any(k.startswith("on") for _, attrs in doc.tags for k in attrs)
        (csp,) = [m for m in doc.named("meta") if m.get("http-equiv")]
        assert csp["content"] == html.CSP and "default-src 'none'" in csp["content"]
        # the only URL is the SVG namespace, which is a name, not a fetch
        assert set(re.findall(r"https?://[^\s\"'<>]+", text)) <= {"http://www.w3.org/2000/svg"}
        assert not any("src" in attrs or "href" in attrs for _, attrs in doc.tags)


def test_verdict_table_and_chart_of_the_fail_bundle(cprog_bundles) -> None:
    text, doc = page(cprog_bundles["fail"])
    words = " ".join(doc.text)
    assert "FAIL" in words and "c-oob-nofix" in words
    assert any("still shows" in t for t in doc.text)  # the judge's reason
    cells = [t.strip() for t in doc.text if t.strip().startswith("passed")]
    # plain runs: "passed"; memcheck (asan) runs: the one overflow in each variant
    assert sorted(cells) == ["passed", "passed", "passed 1", "passed 1"]
    (svg,) = doc.named("svg")
    bars = doc.named("rect")
    # one bar per case x checker column (fixed and control memcheck), plus the legend's two
    assert len(bars) == 4 and svg["aria-label"].startswith("findings per case")
    assert [b["height"] for b in bars[:2]] == ["156", "156"]  # both at the top: 1 of 1
    assert "heap-buffer-overflow" in words and "1 finding(s)" in text


def test_what_the_bundle_says_is_escaped(cprog_bundles, tmp_path) -> None:
    def hostile(results: dict[str, Any]) -> None:
        results["experiment"]["description"] = '<script>alert("x")</script><img src=x>'

    text, doc = page(edited(cprog_bundles["pass"], tmp_path, hostile))
    assert not doc.named("script") and not doc.named("img")
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text


CHECK = Path(__file__).resolve().parents[3] / "tools" / "html_check.py"


def check(page: Path, shot: Path, path: str | None = None):
    import os
    import subprocess
    import sys

    env = {**os.environ, **({"PATH": path} if path is not None else {})}
    return subprocess.run(
        [sys.executable, str(CHECK), str(page), str(shot)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip


@pytest.mark.process
def test_make_html_check_in_a_real_browser(cprog_bundles, tmp_path) -> None:
    import shutil

    if not any(shutil.which(b) for b in ("chromium", "chromium-browser")):
        pytest.skip("no chromium here (Debian: apt-get install chromium)")
    good = tmp_path / "good.html"
    good.write_text(html.render(*bundle.read(cprog_bundles["fail"])))
    done = check(good, tmp_path / "good.png")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "checked" in done.stdout and (tmp_path / "good.png").read_bytes()[:4] == b"\x89PNG"
    # a page without its chart (as a page that fetched it from elsewhere would be) fails
    broken = tmp_path / "broken.html"
    broken.write_text(re.sub(r"<svg.*?</svg>", "", good.read_text(), flags=re.S))
    done = check(broken, tmp_path / "broken.png")
    assert done.returncode == 1 and "lacks: the chart" in done.stdout


@pytest.mark.process
def test_html_check_skips_with_a_message_without_chromium(tmp_path) -> None:
    page = tmp_path / "p.html"
    page.write_text("<!DOCTYPE html>")
    done = check(page, tmp_path / "p.png", path=str(tmp_path))  # no browser on this PATH
    assert done.returncode == 0 and done.stdout.startswith("skipped: no chromium on PATH")


def test_every_table_scrolls_in_its_own_box_and_no_machine_path_shows(cprog_bundles) -> None:
    """At 390 px a table wider than the phone widened the whole page; the page carried the
    paths of the machine that ran (the repository's, the bundle's, the cache's)."""
    lhtml = pytest.importorskip("lxml.html", reason="lxml: CPU machines only (offline GPU)")
    path = cprog_bundles["inconclusive"]
    text = html.render(*bundle.read(path))
    doc = lhtml.fromstring(text)
    tables = doc.xpath("//table")
    assert tables and all(t.getparent().get("class") == "scroll" for t in tables)
    assert ".scroll{overflow-x:auto;max-width:100%}" in text and "overflow-wrap:anywhere" in text
    root = str(Path(__file__).resolve().parents[3])
    for machine in (root, str(path), str(Path.home())):
        assert machine not in text, machine


def test_an_unbuilt_variant_is_a_labelled_gap_not_a_bar_of_zero(cprog_bundles) -> None:
    lhtml = pytest.importorskip("lxml.html", reason="lxml: CPU machines only (offline GPU)")
    doc = lhtml.fromstring(html.render(*bundle.read(cprog_bundles["inconclusive"])))
    bars = {r.findtext("title"): r for r in doc.xpath("//svg//rect[title]")}
    fixed = [t for t in bars if ": fixed / memcheck" in t]
    assert fixed == ["sum: fixed / memcheck: not built"], list(bars)
    assert bars[fixed[0]].get("class") == "unbuilt"
    assert any(t.startswith("sum: control / memcheck: 1 finding") for t in bars)


def test_frames_carry_file_and_line(cprog_bundles) -> None:
    text = html.render(*bundle.read(cprog_bundles["fail"]))
    # they were bare function names (the signature's frames, which drop line numbers)
    assert re.search(r"sum \(pick\.c:\d+\) &larr; main \(pick\.c:\d+\)", text), text


# --- what the Markdown says, said here from the same views -----------------------------

HOSTILE = '<script>alert("x")</script>'


def headed(text: str, row_head: str) -> list[list[str]]:
    """The text of each cell of every row headed `row_head`, as a browser's parser reads it."""
    lhtml = pytest.importorskip("lxml.html", reason="lxml: CPU machines only (offline GPU)")
    doc = lhtml.fromstring(text)
    found = [r for r in doc.xpath("//tr") if r[0].text_content() == row_head]
    return [[c.text_content() for c in row[1:]] for row in found]


def cells(text: str, row_head: str) -> list[str]:
    """The cells of the one row headed `row_head`."""
    (row,) = headed(text, row_head)
    return row


def test_the_cases_table_says_why_a_cell_did_not_pass(cprog_bundles) -> None:
    """The Markdown's reason column: the HTML showed "not built" with the why only in a
    tooltip, which a phone and a printed page never show."""
    text = html.render(*bundle.read(cprog_bundles["inconclusive"]))
    assert "<th>reason</th>" in text
    why = cells(text, "sum")[-1]
    assert why.startswith("fixed/plain, fixed/memcheck: not built: patch ./tests/fixtures/e2e/")
    assert "stale.patch does not apply" in why
    # the Markdown's reason, word for word (its long reasons go in full under the table)
    assert why in markdown.render(*bundle.read(cprog_bundles["inconclusive"]))
    passed = html.render(*bundle.read(cprog_bundles["pass"]))
    assert cells(passed, "sum")[-1] == ""  # every cell passed: nothing to say


def test_targets_setup_and_digests_as_the_markdown_states_them(cprog_bundles, tmp_path) -> None:
    def warm(results: dict[str, Any]) -> None:  # a build that the compile cache served
        results["builds"][0].update(cached=False, compile_hits=3, compile_misses=1)

    path = edited(cprog_bundles["fail"], tmp_path, warm)
    results, manifest = bundle.read(path)
    text, md = html.render(results, manifest), markdown.render(results, manifest)
    target = "checker=asan kind=heap-buffer-overflow access=read function=sum"
    assert "<h2>Targets</h2>" in text
    # the FAIL: the control and the fix both show the target, in every repeat
    assert headed(text, target) == [["control", "memcheck", "1/1"], ["fixed", "memcheck", "1/1"]]
    # the setup: every fact the Markdown's table has, and how the run was made
    facts = re.findall(
        r"^\| (\w[\w-]*) \| ", md.split("### Setup", 1)[1].split("###", 1)[0], flags=re.M
    )
    assert {"backend", "sandbox", "compilers", "command"} <= set(facts)
    for fact in facts:
        assert f"<tr><th>{fact}</th><td>" in text, fact
    assert "unshare" in cells(text, "sandbox")[0] or "none" in cells(text, "sandbox")[0]
    # the variants' identities and their full digests: tree, binaries, config
    assert "compile cache 3/4 hits" in cells(text, results["builds"][0]["variant"])[3]
    for source in results["sources"]:
        assert source["digest"] in text
    for build in results["builds"]:
        for artifact in build["artifacts"]:
            assert artifact["sha256"] in text and artifact["sha256"] in md
    assert manifest["config"]["sha256"][:12] in cells(text, "config")[0]
    # the digests the manifest holds over the trees and binaries, which `verify` re-checks
    for source in manifest["sources"]:
        assert source["digest"] in text
    for build in manifest["builds"]:
        for binary in build["binaries"]:
            assert binary["sha256"] in text
    # this machine's paths written as the Markdown writes them, and shown: a bare
    # `<bundle>` in HTML is an element, which a browser shows as nothing
    command = cells(text, "command")[0]
    assert command.endswith("--backend asan --out <bundle> --cache-dir <cache>"), command
    root = str(Path(__file__).resolve().parents[3])
    cache = str(Path(manifest["command"][-1]))
    for machine in (root, str(path), cache):
        assert machine not in text, machine


def test_a_hostile_case_name_and_reason_render_as_text(cprog_bundles, tmp_path) -> None:
    """A bundle is input: a case name, a build error (the reason column) and a judge's
    reason holding markup must show as text, never as elements."""

    def rename(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: rename(v) for k, v in value.items()}
        if isinstance(value, list):
            return [rename(v) for v in value]
        return HOSTILE if value == "sum" else value

    def hostile(results: dict[str, Any]) -> None:
        renamed = rename(results)
        results.clear()
        results.update(renamed)
        for build in results["builds"]:
            if not build["ok"]:
                build["error"] = f"<img src=x onerror=alert(1)> {HOSTILE}"
        results["judgement"]["reasons"].append(HOSTILE)

    text, doc = page(edited(cprog_bundles["inconclusive"], tmp_path, hostile))
    assert not doc.named("script") and not doc.named("img")
    assert not any(k.startswith("on") for _, attrs in doc.tags for k in attrs)
    shown = "".join(doc.text)
    assert HOSTILE in shown  # the case's name and the judge's reason, as text
    (why,) = [c for c in cells(text, HOSTILE) if c.startswith("fixed/plain")]
    assert "not built: <img src=x onerror=alert(1)> <script>" in why


# --- a gate's directory: one page --------------------------------------------------------


@pytest.mark.process
def test_a_gate_directory_is_one_page_its_verdict_first(tmp_path) -> None:
    """`csorch report GATE_DIR -f html` said "--format html renders one bundle" (exit 2)."""
    import os
    import shutil
    import subprocess
    import sys

    if shutil.which("gcc") is None or shutil.which("make") is None:
        pytest.skip("the C-program gate needs gcc and make")
    lhtml = pytest.importorskip("lxml.html", reason="lxml: CPU machines only (offline GPU)")
    root = Path(__file__).resolve().parents[3]
    e2e = root / "tests" / "fixtures" / "e2e"
    config = tmp_path / "gate.yaml"
    names = ("c-oob", "c-oob-nofix", "c-oob-badpatch")
    listed = ", ".join(str(e2e / f"{n}.yaml") for n in names)
    config.write_text(f"name: three\nexperiments: [{listed}]\npolicy:\n  unexpected: fail\n")
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "200"}

    def csorch(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "orchestrator", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env=env)  # fmt: skip

    done = csorch("gate", str(config), "--backend", "asan", "--out", str(tmp_path / "out"),
                  "--cache-dir", str(tmp_path / "cache"))  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]  # one FAIL
    done = csorch("report", str(tmp_path / "out"), "-f", "html", "-o", str(tmp_path / "g.html"))
    assert done.returncode == 0, done.stdout + done.stderr
    text = (tmp_path / "g.html").read_text()
    doc = lhtml.fromstring(text)
    spans = [s.text_content() for s in doc.xpath("//span[@class='verdict']")]
    # the gate's verdict first; each experiment's in its row, then in its own section
    assert spans == ["FAIL", "PASS", "FAIL", "INCONCLUSIVE", "PASS", "FAIL", "INCONCLUSIVE"]
    assert doc.xpath("//h1")[0].text_content() == "Release gate three"
    links = {a.text_content(): a.get("href") for a in doc.xpath("//table//a")}
    assert list(links) == list(names)
    for name, href in links.items():
        (section,) = doc.xpath(f"//section[@id='{href[1:]}']")
        assert section.xpath(".//h2")[0].text_content() == name
        assert section.xpath(".//table//th[text()='case']")  # the bundle's whole section
    assert len(doc.xpath("//section//h3[text()='Variants']")) == 3
    # the repository, the gate's directory, its bundles and the cache, written relative
    for machine in (root, tmp_path / "out", tmp_path / "cache"):
        assert str(machine) not in text, machine
    assert "--out <gate> --cache-dir <cache>" in doc.text_content()
    assert not doc.xpath("//script") and text.count("<!DOCTYPE html>") == 1


# --- the layout, in a real browser at a desktop's and a phone's width ------------------


@pytest.mark.process
def test_no_page_is_wider_than_a_phone_or_a_desktop_window(cprog_bundles, tmp_path) -> None:
    import shutil

    if not any(shutil.which(b) for b in ("chromium", "chromium-browser")):
        pytest.skip("no chromium here (Debian: apt-get install chromium)")
    for verdict, path in cprog_bundles.items():
        report = tmp_path / f"{verdict}.html"
        report.write_text(html.render(*bundle.read(path)))
        done = check(report, tmp_path / f"{verdict}.png")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "1280 px wide in 1280 px" in done.stdout, done.stdout
        assert "390 px wide in 390 px" in done.stdout, done.stdout
        for shot in (f"{verdict}.png", f"{verdict}-390.png"):
            assert (tmp_path / shot).read_bytes()[:4] == b"\x89PNG"
    # the check has teeth: a block wider than a phone (700 px and the body's 8 px margin)
    # makes the page scroll sideways
    wide = tmp_path / "wide.html"
    wide.write_text(
        (tmp_path / "fail.html")
        .read_text()
        .replace("<h2>", '<div style="width:700px">x</div><h2>', 1)
    )
    done = check(wide, tmp_path / "wide.png")
    assert done.returncode == 1 and "708 px wide in a 390 px window" in done.stdout, done.stdout
