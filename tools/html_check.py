"""Check csorch's HTML report in a real headless browser and take its screenshot.

    python tools/html_check.py REPORT.html SHOT.png

Chromium (Debian's `chromium`) opens the page from disk with every host name unresolvable,
so a page that needed the network would show it; the DOM it built must hold the verdict,
the chart (an <svg> with its bars) and the case table, and no <script>. Then it lays the
page out in a desktop window (1280 px) and a phone's (390 px, as a phone: DevTools'
device metrics over --remote-debugging-pipe, no network port): the document must be no
wider than the window at either (a table or a long word that widens the page makes the
reader scroll sideways), and takes a whole-page screenshot at each (SHOT, and SHOT with
`-390` before its suffix), trimmed to the page's content when Pillow is installed (and
reduced to a small palette, for committing). Exit 0 when checked, 1 when the page fails
a check, 0 with a "skipped" line when no chromium is installed (`apt-get install
chromium`).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser")
#: what a real page's DOM holds, as Chromium serialized it
CHECKS = {
    "the verdict": re.compile(r'<span class="verdict"[^>]*>(PASS|FAIL|INCONCLUSIVE|NOT JUDGED)<'),
    "the chart": re.compile(r"<svg[^>]*>.*?<rect ", re.S),
    "the case table": re.compile(r"<table><tbody><tr><th>case</th>"),
}


#: the windows the page is laid out in: a desktop's, and a phone's (an iPhone's 390 px)
WIDTHS = (1280, 390)
#: Chromium's switches for a page from disk, no network, nothing kept
SWITCHES = (
    "--headless",
    "--no-sandbox",  # as root in a container; the page has no script to contain
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--host-resolver-rules=MAP * ~NOTFOUND",  # no network: a fetch would fail
    "--hide-scrollbars",
)


def chromium() -> str | None:
    return next((found for b in BROWSERS if (found := shutil.which(b))), None)


def browse(browser: str, page: Path, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="csorch-chromium-") as profile:
        argv = [browser, *SWITCHES, f"--user-data-dir={profile}", *args, page.resolve().as_uri()]
        return subprocess.run(argv, capture_output=True, text=True, timeout=120)


class DevTools:
    """Chromium driven over --remote-debugging-pipe: it reads commands on its fd 3 and
    writes answers and events on its fd 4, each a JSON text ended by a NUL byte. The
    page's own policy allows no script; DevTools' evaluation is the browser's, not the
    page's, so it measures the page without loosening that."""

    def __init__(self, browser: str, profile: str) -> None:
        to_chromium, self._write = os.pipe()
        self._read, from_chromium = os.pipe()

        def fds() -> None:  # in the child: its ends at 3 and 4, where Chromium looks
            a = fcntl.fcntl(to_chromium, fcntl.F_DUPFD, 10)
            b = fcntl.fcntl(from_chromium, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        argv = [browser, *SWITCHES, f"--user-data-dir={profile}", "--remote-debugging-pipe"]
        self.process = subprocess.Popen(
            [*argv, "about:blank"], preexec_fn=fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_chromium)
        os.close(from_chromium)
        self._buffer, self._events, self._next = b"", [], 0

    def _message(self, deadline: float) -> dict:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("chromium did not answer over DevTools in time")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed its DevTools pipe")
            self._buffer += chunk
        text, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(text)

    def call(self, method: str, params: dict | None = None, session: str = "") -> dict:
        """One command's result; RuntimeError with DevTools' message when it failed."""
        self._next += 1
        message = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + 60
        while True:
            answer = self._message(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error'].get('message')}")
                return answer.get("result", {})
            self._events.append(answer)

    def wait(self, event: str, session: str) -> None:
        """Until `event` has come for `session` (kept from earlier answers too)."""
        deadline = time.monotonic() + 60
        while True:
            for e in self._events:
                if e.get("method") == event and e.get("sessionId") == session:
                    self._events.remove(e)
                    return
            self._events.append(self._message(deadline))

    def close(self) -> None:
        # it may close its pipe before answering
        with contextlib.suppress(OSError, EOFError, TimeoutError, RuntimeError):
            self.call("Browser.close")
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._write)
        os.close(self._read)


def lay_out(browser: str, page: Path, width: int, shot: Path) -> int:
    """The page's document width laid out in a window `width` px wide (as a phone under
    600 px), its whole-page screenshot written to `shot`."""
    with tempfile.TemporaryDirectory(prefix="csorch-chromium-") as profile:
        tools = DevTools(browser, profile)
        try:
            target = tools.call("Target.createTarget", {"url": "about:blank"})["targetId"]
            session = tools.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
                "sessionId"
            ]
            tools.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600},
                session,
            )
            tools.call("Page.enable", session=session)
            tools.call("Page.navigate", {"url": page.resolve().as_uri()}, session)
            tools.wait("Page.loadEventFired", session)
            sizes = tools.call(
                "Runtime.evaluate",
                {
                    "expression": "[document.documentElement.scrollWidth, "
                    "document.documentElement.scrollHeight]",
                    "returnByValue": True,
                },
                session,
            )["result"]["value"]
            wide, high = int(sizes[0]), int(sizes[1])
            clip = {"x": 0, "y": 0, "width": wide, "height": high, "scale": 1}
            png = tools.call(
                "Page.captureScreenshot",
                {"format": "png", "captureBeyondViewport": True, "clip": clip},
                session,
            )["data"]
        finally:
            tools.close()
    shot.parent.mkdir(parents=True, exist_ok=True)
    shot.write_bytes(base64.b64decode(png))
    return wide


def phone_shot(shot: Path, width: int) -> Path:
    """Where the screenshot at `width` goes: SHOT at the first width, SHOT-390.png after."""
    return shot if width == WIDTHS[0] else shot.with_name(f"{shot.stem}-{width}{shot.suffix}")


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
    laid, shots = [], []
    for width in WIDTHS:
        where = phone_shot(shot, width)
        try:
            wide = lay_out(browser, report, width, where)
        except (OSError, EOFError, TimeoutError, RuntimeError, KeyError) as exc:
            print(f"{browser} over DevTools at {width} px: {exc}")
            return 1
        laid.append(f"{wide} px wide in {width} px")
        if wide > width:
            failed.append(
                f"a page no wider than its window: it is {wide} px wide in a {width} px "
                "window (a table or a long word overflows; the reader scrolls sideways)"
            )
        shots.append(f"screenshot: {where} ({trim(where)}, {where.stat().st_size:,} bytes)")
    if failed:
        print(f"{report}: the page as {browser} laid it out lacks: {', '.join(failed)}")
        return 1
    print(f"checked {report} in {browser}: {', '.join(CHECKS)}, no script; {', '.join(laid)}")
    print("\n".join(shots))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
