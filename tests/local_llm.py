"""A real local LLM server for end-to-end tests: llama-cpp-python's OpenAI-compatible server
(``python -m llama_cpp.server --chat_format chatml-function-calling``) serving SmolLM2-135M-Instruct,
both built once by ``scripts/install-local-llm`` into ``$PHI_LOCAL_LLM_CACHE`` (default
``~/.cache/phi-test/local-llm``). Neither is phi's code: the server is a third-party implementation
of the Chat Completions protocol, the model a real (tiny) model.

Use the ``local_llm`` fixture (session-scoped): it starts the server on a free port of 127.0.0.1,
waits until it answers, yields a :class:`LocalLLM` (``base_url``, ``model``), and stops it at the
end of the session. Without the build, tests using it are skipped with the reason the install
script recorded (or how to build it)::

    from local_llm import local_llm  # noqa: F401  (tests/ is on sys.path, see tests/conftest.py)

    def test_something(local_llm):
        mc = ModelConfig.openai_compatible(local_llm.base_url, local_llm.model)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest

START_SECONDS = 120  # loading a 100 MB model takes a few seconds; a busy CI machine more


def cache_dir() -> Path:
    return Path(os.environ.get("PHI_LOCAL_LLM_CACHE") or Path.home() / ".cache" / "phi-test" / "local-llm")


def unavailable_reason() -> str | None:
    """Why the local server cannot be started here (None when it can)."""
    cache = cache_dir()
    python, model = cache / "venv" / "bin" / "python", cache / "model.gguf"
    if python.exists() and model.exists() and list(cache.glob("installed-*")):
        return None
    error = cache / "install-error.txt"
    if error.exists():
        return f"local LLM not built: {error.read_text(encoding='utf-8').strip()}"
    return (f"local LLM not built in {cache}: run scripts/install-local-llm (compiles llama-cpp-python, "
            "about 15 minutes on 2 cores; scripts/test runs it)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class LocalLLM:
    """A running server: its Chat Completions base URL (``…/v1``), the model name to send, and
    the log file of its output."""

    base_url: str
    model: str
    log: Path
    process: subprocess.Popen[bytes]

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])


def start_server(log: Path, n_ctx: int = 4096) -> LocalLLM:
    """Start the server on a free port and wait until it answers ``GET /v1/models``."""
    cache = cache_dir()
    port = free_port()
    command = [str(cache / "venv" / "bin" / "python"), "-m", "llama_cpp.server", "--model", str(cache / "model.gguf"),
               "--chat_format", "chatml-function-calling", "--host", "127.0.0.1", "--port", str(port),
               "--n_ctx", str(n_ctx), "--n_threads", "2", "--verbose", "false"]
    out = log.open("wb")
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    server = LocalLLM(f"http://127.0.0.1:{port}/v1", "smollm2-135m-instruct", log, process)
    deadline = time.monotonic() + START_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the local LLM server exited with {process.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.base_url}/models", timeout=2) as response:
                if response.status == 200:
                    return server
        except OSError:
            time.sleep(0.3)
    stop_server(server)
    raise RuntimeError(f"the local LLM server did not answer within {START_SECONDS}s:\n{server.log_tail()}")


def stop_server(server: LocalLLM) -> None:
    """Stop the server this process started (by its own handle, nothing else)."""
    if server.process.poll() is None:
        server.process.terminate()
        try:
            server.process.wait(10)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait(10)


@pytest.fixture(scope="session")
def local_llm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalLLM]:
    reason = unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    server = start_server(tmp_path_factory.mktemp("local-llm") / "server.log")
    try:
        yield server
    finally:
        stop_server(server)


if __name__ == "__main__":  # print why the local LLM tests would be skipped, or "ready"
    print(unavailable_reason() or f"ready: {cache_dir()}")
    sys.exit(0)
