"""A headless Chromium driven over the Chrome DevTools Protocol, for the docs site's browser test.

Debian's ``/usr/bin/chromium`` (``make test`` installs it: Makefile ``browser``), started with a
throw-away profile and ``--remote-debugging-port=0``; the port is read from the profile's
``DevToolsActivePort`` file, the page's WebSocket from ``/json/list``, and commands are sent with
``websockets``' synchronous client. Only what the test needs: navigate, evaluate, type text.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

from websockets.sync.client import connect

CHROMIUM = Path("/usr/bin/chromium")

NAVIGATING = ("Inspected target navigated or closed", "Execution context was destroyed",
              "Cannot find context with specified id")
"""The DevTools errors of an evaluation that met a navigation: the page was replaced under it, not wrong."""


class NavigationRace(RuntimeError):
    """An evaluation that a navigation cut short; ``wait_for`` polls again."""


def _failure(what: str, error: object) -> RuntimeError:
    """The exception for a DevTools ``error`` (or a page's exception details) of ``what``: a
    :class:`NavigationRace` when it names a navigation, else a RuntimeError."""
    kind = NavigationRace if any(n in json.dumps(error) for n in NAVIGATING) else RuntimeError
    return kind(f"{what}: {error}")


def chromium_path() -> str | None:
    """The chromium binary, or None when it is not installed."""
    if CHROMIUM.is_file():
        return str(CHROMIUM)
    return shutil.which("chromium")


class Chromium:
    """One headless Chromium with one page (a context manager; the process is stopped on exit)."""

    def __init__(self, profile: Path, timeout: float = 60.0):
        self.timeout = timeout
        binary = chromium_path()
        assert binary is not None, "chromium is not installed"
        profile.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={profile}", "--remote-debugging-port=0", "--remote-allow-origins=*",
             "--window-size=1400,1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.proc.poll() is not None:
                self.close()
                raise RuntimeError("chromium did not open its DevTools port")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=timeout) as resp:
            pages = [t for t in json.load(resp) if t["type"] == "page"]
        self._connection = connect(pages[0]["webSocketDebuggerUrl"], max_size=None, open_timeout=timeout)
        self.ws = self._connection.__enter__()
        self._id = 0

    def send(self, method: str, **params) -> dict:
        self._id += 1
        self.ws.send(json.dumps({"id": self._id, "method": method, "params": params}))
        deadline = time.monotonic() + self.timeout
        while True:
            message = json.loads(self.ws.recv(timeout=max(0.1, deadline - time.monotonic())))
            if message.get("id") == self._id:
                if "error" in message:
                    raise _failure(method, message["error"])
                return message.get("result", {})

    def evaluate(self, expression: str):
        """The JSON value of ``expression`` evaluated in the page (exceptions raised)."""
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise _failure(expression, result["exceptionDetails"])
        return result["result"].get("value")

    def wait_for(self, expression: str):
        """Poll ``expression`` until it is truthy (returns it), failing after the timeout.

        An evaluation that a navigation cut short (the page it ran in was replaced) counts as not yet.
        """
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                value = self.evaluate(expression)
            except NavigationRace:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {expression}")
            time.sleep(0.1)

    def goto(self, url: str) -> None:
        """Open ``url`` and wait until the document has loaded."""
        self.send("Page.navigate", url=url)
        self.wait_for(f"document.readyState === 'complete' && location.href.startsWith({json.dumps(url.split('#')[0])})")

    def type(self, selector: str, text: str) -> None:
        """Focus ``selector`` and type ``text`` as keyboard input (input events fire)."""
        self.evaluate(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", text=text)

    def close(self) -> None:
        connection = getattr(self, "_connection", None)
        if connection is not None:
            connection.__exit__(None, None, None)
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
