"""A small Chrome DevTools Protocol client for the browser tests: headless Chromium over --remote-debugging-pipe.

The browser reads commands from file descriptor 3 and writes replies and events to descriptor 4, each a
JSON object ended by a NUL byte, so no websocket library is needed. One page is opened (a flat session on
a new target); console messages, uncaught exceptions, browser log entries and network requests of that
page are kept for the tests to inspect.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--font-render-hinting=none",
    "--force-color-profile=srgb",
)


def find_chromium() -> str | None:
    """The browser to drive: $BEAVERTUI_CHROMIUM when set (None if it is not executable), else one on PATH."""
    chosen = os.environ.get("BEAVERTUI_CHROMIUM")
    if chosen is not None:
        return chosen if os.access(chosen, os.X_OK) and Path(chosen).is_file() else None
    for name in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class CdpError(RuntimeError):
    pass


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(self, binary: str, *, width: int = 1280, height: int = 900, timeout: float = 60.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="beavertui-chromium-")
        to_child_r, self._to_child = os.pipe()
        self._from_child, from_child_w = os.pipe()
        # Move the child's ends above 10 so that placing them on 3 and 4 cannot clobber one another.
        hi_r = fcntl.fcntl(to_child_r, fcntl.F_DUPFD, 10)
        hi_w = fcntl.fcntl(from_child_w, fcntl.F_DUPFD, 10)
        os.close(to_child_r)
        os.close(from_child_w)

        def place() -> None:
            os.dup2(hi_r, 3)
            os.dup2(hi_w, 4)

        self.proc = subprocess.Popen(
            [
                binary,
                *FLAGS,
                f"--user-data-dir={self._profile}",
                f"--window-size={width},{height}",
                "--remote-debugging-pipe",
                "about:blank",
            ],
            pass_fds=(3, 4),
            preexec_fn=place,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(hi_r)
        os.close(hi_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.call(f"{domain}.enable", session=True)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=True,
        )

    # ------------------------------------------------------------------ wire

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise CdpError("no answer from the browser in time")
            ready, _, _ = select.select([self._from_child], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_child, 1 << 20)
            if not chunk:
                raise CdpError(f"the browser closed its pipe (exit status {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False) -> Any:
        self._next += 1
        ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        data = json.dumps(message).encode() + b"\0"
        while data:
            data = data[os.write(self._to_child, data) :]
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == ident:
                if "error" in reply:
                    raise CdpError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if "method" in reply:
                self.events.append(reply)

    def wait_event(self, method: str, timeout: float | None = None) -> dict[str, Any]:
        for e in self.events:
            if e["method"] == method:
                self.events.remove(e)
                return e
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method:
                return message
            if "method" in message:
                self.events.append(message)

    # ------------------------------------------------------------------ page

    def open(self, path: Path) -> None:
        """Load a local file and wait for its load event."""
        self.events = [e for e in self.events if e["method"] != "Page.loadEventFired"]
        self.call("Page.navigate", {"url": path.resolve().as_uri()}, session=True)
        self.wait_event("Page.loadEventFired")

    def evaluate(self, expression: str, *, await_promise: bool = False) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": await_promise},
            session=True,
        )
        if "exceptionDetails" in result:
            raise CdpError(f"{expression!r}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 30.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = self.evaluate(expression)
            if value:
                return value
            time.sleep(0.05)
        raise CdpError(f"timed out waiting for {expression!r}")

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the centre of the element."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return null;"
            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
            " return [r.x + r.width / 2, r.y + r.height / 2]; })()"
        )
        if box is None:
            raise CdpError(f"no element {selector!r}")
        x, y = box
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                session=True,
            )

    def key(self, key: str, code: str, key_code: int) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": key, "code": code, "windowsVirtualKeyCode": key_code},
                session=True,
            )

    def screenshot(self) -> bytes:
        data = self.call("Page.captureScreenshot", {"format": "png"}, session=True)["data"]
        return base64.b64decode(data)

    def drain(self) -> None:
        """Read the events already sent (console messages arrive asynchronously)."""
        try:
            while True:
                ready, _, _ = select.select([self._from_child], [], [], 0.2)
                if not ready and b"\0" not in self._buf:
                    return
                self.events.append(self._read_message(time.monotonic() + 1))
        except CdpError:
            return

    def problems(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and error log entries seen so far."""
        self.drain()
        out = []
        for e in self.events:
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append(f"console.{p['type']}: {p.get('args')}")
            elif e["method"] == "Runtime.exceptionThrown":
                out.append(f"exception: {p.get('exceptionDetails')}")
            elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") in ("error", "warning"):
                out.append(f"log: {p['entry'].get('text')} ({p['entry'].get('url', '')})")
            elif e["method"] == "Network.loadingFailed":
                out.append(f"failed load: {p}")
        return out

    def requests(self) -> list[str]:
        """URLs the page asked for (the page itself included)."""
        self.drain()
        return [
            e["params"]["request"]["url"] for e in self.events if e["method"] == "Network.requestWillBeSent"
        ]

    # ------------------------------------------------------------------ life

    def close(self) -> None:
        with contextlib.suppress(CdpError, OSError):
            self.call("Browser.close")
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_child, self._from_child):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
