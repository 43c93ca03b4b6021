"""Check csorch's HTML report in a real headless browser and take its screenshot.

    python tools/html_check.py REPORT.html SHOT.png

Chromium (Debian's `chromium`) opens the page from disk with every host name unresolvable,
so a page that needed the network would show it; the DOM it built must hold the verdict,
the chart (an <svg> with its bars) and the case table, and no <script>. Then it takes a
screenshot, trimmed to the page's content when Pillow is installed (and reduced to a
small palette, for committing). Exit 0 when checked, 1 when the page fails a check,
0 with a "skipped" line when no chromium is installed (`apt-get install chromium`).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser")
#: what a real page's DOM holds, as Chromium serialized it
CHECKS = {
    "the verdict": re.compile(r'<span class="verdict"[^>]*>(PASS|FAIL|INCONCLUSIVE|NOT JUDGED)<'),
    "the chart": re.compile(r"<svg[^>]*>.*?<rect ", re.S),
    "the case table": re.compile(r"<table><tbody><tr><th>case</th>"),
}


def chromium() -> str | None:
    return next((found for b in BROWSERS if (found := shutil.which(b))), None)


def browse(browser: str, page: Path, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="csorch-chromium-") as profile:
        argv = [
            browser,
            "--headless",
            "--no-sandbox",  # as root in a container; the page has no script to contain
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: a fetch would fail
            f"--user-data-dir={profile}",
            *args,
            page.resolve().as_uri(),
        ]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)


def trim(shot: Path) -> str:
    """Crop the white margin and keep 64 colours; what was done, for the log."""
    try:
        from PIL import Image, ImageChops
    except ImportError:
        return "not trimmed (Pillow is not installed)"
    image = Image.open(shot).convert("RGB")
    box = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
    if box:
        pad = 12
        box = (
            max(0, box[0] - pad),
            max(0, box[1] - pad),
            min(image.width, box[2] + pad),
            min(image.height, box[3] + pad),
        )
        image = image.crop(box)
    image.quantize(colors=64).save(shot, optimize=True)
    return f"trimmed to {image.width}x{image.height}, 64 colours"


def main(report: Path, shot: Path) -> int:
    browser = chromium()
    if browser is None:
        print(
            "skipped: no chromium on PATH, so the HTML report was not checked in a browser "
            "(Debian: apt-get install chromium)"
        )
        return 0
    dom = browse(browser, report, "--dump-dom")
    if dom.returncode != 0:
        print(f"{browser} --dump-dom exited {dom.returncode}: {dom.stderr[-2000:]}")
        return 1
    failed = [what for what, pattern in CHECKS.items() if not pattern.search(dom.stdout)]
    if "<script" in dom.stdout:
        failed.append("no script")
    if failed:
        print(f"{report}: the page as {browser} built it lacks: {', '.join(failed)}")
        return 1
    shot.parent.mkdir(parents=True, exist_ok=True)
    done = browse(
        browser, report, f"--screenshot={shot.resolve()}", "--window-size=1100,1400",
        "--hide-scrollbars",
    )  # fmt: skip
    if done.returncode != 0 or not shot.is_file():
        print(f"{browser} --screenshot exited {done.returncode}: {done.stderr[-2000:]}")
        return 1
    print(f"checked {report} in {browser}: {', '.join(CHECKS)}, no script")
    print(f"screenshot: {shot} ({trim(shot)}, {shot.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
