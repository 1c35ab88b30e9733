"""A minimal Chrome DevTools Protocol client over ``--remote-debugging-pipe`` (the browser reads
NUL-terminated JSON commands on fd 3 and writes replies and events on fd 4), for the export
browser tests: open a page, collect console messages, exceptions and log entries, evaluate script."""

from __future__ import annotations

import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any


class Browser:
    def __init__(self, binary: str, profile: Path) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # runs in the child before exec: the pipe ends become fds 3 and 4
            ends = os.dup(to_browser_r), os.dup(from_browser_w)  # (either may be 3 or 4 already)
            os.dup2(ends[0], 3)  # dup2 makes the copies inheritable
            os.dup2(ends[1], 4)

        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
             f"--user-data-dir={profile}", "--remote-debugging-pipe", "--window-size=1280,1600", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=wire)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._next = 0
        self._replies: dict[int, queue.Queue] = {}
        self.events: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        with os.fdopen(self._from_browser, "rb", buffering=0) as source:
            while chunk := source.read(65536):
                buffer += chunk
                *messages, buffer = buffer.split(b"\0")
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._replies.setdefault(message["id"], queue.Queue()).put(message)
                    else:
                        self.events.put(message)

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> Any:
        with self._lock:
            self._next += 1
            ident = self._next
            box = self._replies.setdefault(ident, queue.Queue())
            command: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
            if session:
                command["sessionId"] = session
            os.write(self._to_browser, json.dumps(command).encode() + b"\0")
        reply = box.get(timeout=timeout)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        return reply["result"]

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        """The next event named ``method``; the events before it stay in ``seen``."""
        while True:
            event = self.events.get(timeout=timeout)
            self.seen.append(event)
            if event["method"] == method:
                return event

    seen: list[dict] = []
    session: str | None = None

    def open(self, url: str) -> str:
        """Attach to the page, enable the domains that report problems, load ``url``; the session id."""
        self.seen = []
        session = self.session
        if session is None:
            (target,) = [t for t in self.send("Target.getTargets")["targetInfos"] if t["type"] == "page"]
            reply = self.send("Target.attachToTarget", {"targetId": target["targetId"], "flatten": True})
            session = self.session = reply["sessionId"]
            for domain in ("Page", "Runtime", "Log"):
                self.send(f"{domain}.enable", session=session)
        self.send("Page.navigate", {"url": url}, session=session)
        self.wait_for("Page.loadEventFired")
        return session

    def evaluate(self, session: str, expression: str) -> Any:
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=session)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def problems(self) -> list[dict]:
        """Console calls, uncaught exceptions and log entries seen so far (drains pending events)."""
        while not self.events.empty():
            self.seen.append(self.events.get_nowait())
        kinds = {"Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded"}
        return [e for e in self.seen if e["method"] in kinds]

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except Exception:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
