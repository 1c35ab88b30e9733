"""Fixtures of the ``phi`` command's tests: a scripted model speaking the Anthropic Messages stream
on 127.0.0.1 (tests/coding/wire.py), a project directory, and the command in a pty."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import pytest
from coding.wire import ScriptedModelServer
from providers.conftest import Reply

from cli.terminal_helpers import PtyPhi


class SlowServer(ScriptedModelServer):
    """A scripted model whose replies to some conversations trickle out (``slow(key, ...)``)."""

    def __init__(self) -> None:
        super().__init__()
        self.pacing: dict[str, dict[str, Any]] = {}

    def slow(self, key: str, chunk_size: int = 64, delay: float = 0.1, silent_after: int | None = None) -> SlowServer:
        """Replies of this conversation come ``chunk_size`` bytes every ``delay`` s; with ``silent_after``
        the server sends that many body bytes, then nothing more (the socket stays open)."""
        self.pacing[key] = {"chunk_size": chunk_size, "delay": delay, "silent_after": silent_after}
        return self

    def _respond_scripted(self, request: Any) -> Any:
        """A script entry may be a :class:`Reply` (an HTTP error, a stalled stream) instead of a Turn:
        the request it falls on gets that reply."""
        from coding.wire import first_user_text, protocol_of

        protocol, body = protocol_of(request.path), request.json()
        first = first_user_text(protocol, body)
        with self._script_lock:
            key = next((k for k in sorted(self.scripts, key=len, reverse=True) if first.startswith(k)), None)
            turns, index = self.scripts.get(key, []), len(self.seen.get(key, []))
            if key is not None and index < len(turns) and isinstance(turns[index], Reply):
                self.seen.setdefault(key, []).append((protocol, body))
                return turns[index]
        reply = super()._respond_scripted(request)
        for key, pacing in self.pacing.items():
            if first.startswith(key):
                return replace(reply, **pacing)
        return reply


@pytest.fixture
def model() -> Iterator[SlowServer]:
    server = SlowServer()
    yield server
    server.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    return root


@pytest.fixture
def phi_home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def launch(model: SlowServer, project: Path, phi_home: Path) -> Iterator[Any]:
    """``launch(*args, env=...)`` starts the interactive command against the scripted model."""
    started: list[PtyPhi] = []

    def start(*args: str, env: dict[str, str] | None = None) -> PtyPhi:
        full_env = {"ANTHROPIC_API_KEY": "sk-test-key", "PHI_HOME": str(phi_home), **(env or {})}
        phi = PtyPhi(["--provider", "anthropic", "--base-url", model.url, *args], project, full_env)
        started.append(phi)
        return phi

    yield start
    for phi in started:
        phi.close()
