"""Peers and helpers for the MCP client tests.

* ``fake_server.py`` — a scriptable stdio server (standard library) for rule and fault tests;
* ``sdk_server.py`` — a server on the official MCP Python SDK (the ``mcp`` test extra), run over
  stdio and over Streamable HTTP on 127.0.0.1;
* ``@modelcontextprotocol/server-everything`` — the reference server from npm, installed by
  ``scripts/install-mcp-everything`` (run by ``scripts/test``) into ``$PHI_MCP_EVERYTHING_CACHE``
  or ``~/.cache/phi-test/mcp-everything``. Its tests skip, saying why, when node or the package is
  missing.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

HERE = Path(__file__).resolve().parent
FAKE_SERVER = str(HERE / "fake_server.py")
SDK_SERVER = str(HERE / "sdk_server.py")
PYTHON = sys.executable
EVERYTHING_PACKAGE = "@modelcontextprotocol/server-everything"


def fake_cmd(mode: str, *extra: str) -> tuple[str, list[str]]:
    return PYTHON, [FAKE_SERVER, mode, *extra]


def sdk_cmd() -> tuple[str, list[str]]:
    return PYTHON, [SDK_SERVER]


def everything_cache() -> Path:
    default = Path.home() / ".cache" / "phi-test" / "mcp-everything"
    return Path(os.environ.get("PHI_MCP_EVERYTHING_CACHE") or default)


def find_everything() -> tuple[tuple[str, list[str]] | None, str]:
    """The command that runs server-everything over stdio, or None and why not."""
    node = shutil.which("node")
    if node is None:
        return None, "node is not installed, so @modelcontextprotocol/server-everything cannot run"
    cache = everything_cache()
    script = cache / "node_modules" / EVERYTHING_PACKAGE / "dist" / "index.js"
    if not script.is_file():
        error = cache / "install-error.txt"
        why = error.read_text(encoding="utf-8").strip() if error.is_file() else "run scripts/install-mcp-everything"
        return None, f"{EVERYTHING_PACKAGE} is not installed in {cache}: {why}"
    return (node, [str(script), "stdio"]), ""


def pid_gone(pid: int) -> bool:
    """True once ``pid`` no longer exists (exited *and* reaped: a zombie still counts as present)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


def wait_until(condition: Callable[[], bool], timeout: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def mcp_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("phi-mcp")]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class HttpServer:
    """The SDK server over Streamable HTTP on 127.0.0.1 (a child process)."""

    def __init__(self, *flags: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen([PYTHON, SDK_SERVER, "http", str(self.port), *flags],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                return
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
                    raise RuntimeError(f"the SDK HTTP server did not start: {err[-2000:]}")
                time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # a test peer: no need to wait for uvicorn's graceful shutdown
            self.proc.wait()
        if self.proc.stderr:
            self.proc.stderr.close()


HTTP_MODES = {"sse": (), "json": ("--json",), "stateless": ("--stateless",), "stateless-json": ("--json", "--stateless")}


@pytest.fixture(scope="module")
def http_servers() -> Iterator[Callable[[str], HttpServer]]:
    """One SDK HTTP server per mode, started on first use and shared by the module's tests."""
    started: dict[str, HttpServer] = {}

    def get(mode: str) -> HttpServer:
        if mode not in started:
            started[mode] = HttpServer(*HTTP_MODES[mode])
        return started[mode]

    yield get
    for server in started.values():
        server.stop()
