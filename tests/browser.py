"""A headless Chromium driven over the DevTools protocol, for the HTML report's tests.

The protocol runs over a pipe (``--remote-debugging-pipe``: Chromium reads commands on fd 3
and writes replies on fd 4, each a JSON text ended by a NUL byte), so no websocket client and
no browser download are needed: only the system's chromium (CI: ``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

CHROMIUM = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome")) if p), None)
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-dev-shm-usage",
         "--hide-scrollbars", "--remote-debugging-pipe"]


class BrowserError(RuntimeError):
    pass


class Browser:
    """One page in a fresh Chromium profile, ``width`` CSS pixels wide."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        assert CHROMIUM is not None
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()
        # A small Python puts the pipe ends on fds 3 and 4, where Chromium expects them, then
        # becomes Chromium (no preexec_fn: the test process may have threads).
        move = "import os, sys; os.dup2(int(sys.argv[1]), 3); os.dup2(int(sys.argv[2]), 4); os.execv(sys.argv[3], sys.argv[3:])"
        self.proc = subprocess.Popen([sys.executable, "-c", move, str(to_chrome_r), str(from_chrome_w), CHROMIUM,
                                      *FLAGS, f"--user-data-dir={profile}", "about:blank"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     pass_fds=(to_chrome_r, from_chrome_w))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def _send(self, msg: dict[str, Any]) -> None:
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]

    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise BrowserError("no reply from chromium in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the pipe")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, timeout: float = 60, **params: Any) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + timeout
        while True:
            reply = self._next(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise BrowserError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        for i, ev in enumerate(self.events):
            if ev.get("method") == method:
                return self.events.pop(i)
        while True:
            ev = self._next(deadline)
            if ev.get("method") == method:
                return ev
            self.events.append(ev)

    def js(self, expr: str) -> Any:
        """The value of a JavaScript expression in the page (JSON-serialisable results)."""
        res = self.call("Runtime.evaluate", expression=expr, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise BrowserError(f"{expr}: {res['exceptionDetails']}")
        return res["result"].get("value")

    def open(self, page: Path, ready: str = "document.body && document.body.dataset.ready === '1'",
             timeout: float = 60) -> float:
        """Load ``page`` and wait until ``ready`` holds; returns the seconds from navigation to ready."""
        t0 = time.monotonic()
        self.call("Page.navigate", url=page.resolve().as_uri())
        self.wait_event("Page.loadEventFired", timeout)
        while not self.js(ready):
            if time.monotonic() - t0 > timeout:
                raise BrowserError(f"page not ready after {timeout} s")
            time.sleep(0.02)
        return time.monotonic() - t0

    def console(self) -> list[str]:
        """Console messages, uncaught exceptions and log entries seen so far."""
        out = []
        for ev in self.events:
            m, p = ev.get("method"), ev.get("params", {})
            if m == "Runtime.consoleAPICalled":
                out.append(" ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Runtime.exceptionThrown":
                out.append(str(p.get("exceptionDetails", {}).get("exception", {}).get("description")))
            elif m == "Log.entryAdded":
                out.append(f"{p['entry'].get('level')}: {p['entry'].get('text')}")
        return out

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the centre of the first element matching ``selector``."""
        box = self.js(f"(function(){{var e=document.querySelector({json.dumps(selector)});if(!e)return null;"
                      "e.scrollIntoView({block:'center',inline:'center'});var r=e.getBoundingClientRect();"
                      "return [r.left+r.width/2, r.top+r.height/2];})()")
        if box is None:
            raise BrowserError(f"nothing matches {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, path: Path, full: bool = True, max_height: int = 8000) -> None:
        """The whole page (up to ``max_height`` pixels), or what the viewport shows, as a PNG."""
        if full:
            size = self.call("Page.getLayoutMetrics")["cssContentSize"]
            clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max_height), "scale": 1}
            data = self.call("Page.captureScreenshot", format="png", captureBeyondViewport=True, clip=clip)["data"]
        else:
            data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def close(self) -> None:
        with contextlib.suppress(BrowserError, OSError):
            self.call("Browser.close", timeout=10)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._w)
        os.close(self._r)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
