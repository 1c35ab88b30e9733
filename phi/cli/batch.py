"""``phi -p TASK`` and ``phi -p TASK --json``: one run for scripts and CI (SPEC §15 CLI-5, CLI-6).

``-p`` prints the final answer to stdout. ``--json`` instead writes every event of the run as one
JSON object per line, in the shapes of the conformance suite (SPEC EVT-1, :func:`phi.events.event_to_json`):
``AgentStart`` first, ``AgentEnd`` (with the outcome, messages and usage) last, so another program
can watch or drive phi. Diagnostics go to stderr. The run is recorded like an interactive one, so
``phi export`` and ``--resume`` work on it.

Exit status: :data:`EXIT_OK` when the run completed (the model answered), :data:`EXIT_FAILED` when
it ended in an error, a limit or an abort, :data:`EXIT_INTERRUPTED` after Ctrl+C, :data:`EXIT_TERMINATED`
after SIGTERM (both stop the run, end the ``--json`` stream with its ``AgentEnd`` and save the session).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Generator, TextIO

from .approval import make_gate
from .options import CliOptions, key_hint
from .sessions import CliSessions

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session
    from ..events import AgentEvent

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # SIGTERM, e.g. a CI job's time limit


class Terminated(KeyboardInterrupt):
    """SIGTERM during an unattended run: handled like Ctrl+C (the run stops, the session is saved)."""


@contextmanager
def sigterm_as_interrupt() -> Generator[None, None, None]:
    """While inside, SIGTERM raises :class:`Terminated` in the main thread (elsewhere: no change)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(signum: int, frame: FrameType | None) -> None:
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


SUCCESS_OUTCOMES = ("completed", "awaiting_input")


class JsonLines:
    """A core-event subscriber writing each event as one JSON line (thread-safe)."""

    def __init__(self, out: TextIO, on_closed: Callable[[], None] | None = None) -> None:
        self.out = out
        self.on_closed = on_closed  # called once when the reader goes away (a broken pipe)
        self.closed = False
        self._lock = threading.Lock()

    def __call__(self, event: AgentEvent) -> None:
        from ..events import event_to_json

        self.write(event_to_json(event))

    def write(self, data: dict[str, Any]) -> None:
        """One JSON object as one line, without any secret phi knows of (SPEC §17 OTEL-11)."""
        from ..providers.secret_registry import redact_encoded

        line = redact_encoded(data, _line(data), _line)[1]
        with self._lock:
            if self.closed:
                return
            try:
                self.out.write(line + "\n")
                self.out.flush()
            except BrokenPipeError:
                self.closed = True
        if self.closed and self.on_closed is not None:
            self.on_closed()


def _line(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))


def interrupt_turn(session: Session) -> None:
    """Stop the running input (its model call, commands and sub-agents) but keep the session: the
    conversation goes on with the next input. (``Session.abort`` would close the session.)"""
    session.subagents.abort_all()
    session.agent.abort()


def unattended_session(options: CliOptions, profile: ProviderProfile, sessions: CliSessions,
                       err: TextIO | None = None) -> Session:
    """A coding session nobody watches: approval ``off`` unless ``--approve`` (then what would be
    asked is denied; the settings files' permission rules apply in every mode), at most
    ``--max-turns`` model calls, resumed when ``--resume``, recorded into ``sessions``."""
    from ..coding import Session, SessionConfig
    from ..tools.environment import LocalExecutionEnvironment

    gate = make_gate(options, options.approve or "off", interactive=False)
    session = Session(profile, LocalExecutionEnvironment(options.cwd),
                      SessionConfig(approval=gate, reasoning_effort=options.reasoning_effort(),
                                    max_turns=options.max_turns, sandbox=options.sandbox_policy()))
    gate.unconfined = session.sandbox.unconfined  # no sandbox here: commands are refused, nobody to ask
    if options.resume:
        warnings = err or sys.stderr

        def warn(text: str) -> None:
            warnings.write(f"phi: warning: {text}\n")

        sessions.restore(options.resume, session.agent, warn=warn)
        session.id = session.agent.session_id
    sessions.attach_session(session)
    return session


def run_print(options: CliOptions, profile: ProviderProfile, sessions: CliSessions, out: TextIO | None = None,
              err: TextIO | None = None) -> int:
    """Run ``options.prompt`` once (see the module docstring); returns the exit status."""
    # new names: sys.stdout is typed "TextIO | Any", so `out = out or sys.stdout` would stay "TextIO | None"
    stdout: TextIO = out or sys.stdout
    stderr: TextIO = err or sys.stderr
    session = unattended_session(options, profile, sessions, stderr)
    lines = JsonLines(stdout, on_closed=session.agent.abort)
    if options.json:
        session.agent.subscribe(lines)
    from ..coding import EventKind
    from ..providers.secret_registry import redact

    error_kinds: set[str] = set()
    session.subscribe(lambda event: error_kinds.add(event.data.get("kind", ""))
                      if event.kind == EventKind.ERROR else None)
    try:
        stream = session.submit_stream(options.prompt or "")
        try:
            with sigterm_as_interrupt():
                result = stream.result()
        except KeyboardInterrupt as stop:
            interrupt_turn(session)
            stream.result(timeout=10)
            terminated = isinstance(stop, Terminated)
            stderr.write(f"phi: {'terminated' if terminated else 'interrupted'}\n")
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        session.close()
        try:
            if sessions.save() or os.path.exists(sessions.path_of(session.id)):  # runs save themselves
                from .recent import remember

                remember(sessions, options.cwd, session.id)
        except Exception as error:
            stderr.write(f"phi: could not save the session: {error}\n")
        fork = session.agent.last_fork
        if fork is not None:  # said on stderr: stdout holds only the answer (or --json's events)
            stderr.write(f"phi: another phi continued this session from the same point; this run continues as "
                         f"branch {fork.loop_id} of it (both are kept)\n")
    if lines.closed:
        _silence(stdout)
        return EXIT_FAILED
    if not options.json:
        try:
            stdout.write(redact(result.text).rstrip("\n") + "\n")  # CLI-8: no key on screen or in CI logs
            stdout.flush()
        except BrokenPipeError:  # `phi -p ... | head -1`: the reader has what it wanted
            _silence(stdout)
    if stderr.isatty():  # a person ran it: say how to come back (scripts find the id in --json's AgentStart)
        stderr.write(f"phi: session {session.id} (phi --resume {session.id})\n")
    if result.outcome in SUCCESS_OUTCOMES:
        return EXIT_OK
    hint = key_hint(options, profile.id) if "auth" in error_kinds else ""
    stderr.write(f"phi: the run ended: {result.outcome}{': ' + redact(result.error) if result.error else ''}"
                 f"{f' ({hint})' if hint else ''}\n")
    return EXIT_FAILED


def _silence(out: TextIO) -> None:
    """The reader of stdout is gone: point it at /dev/null so the exit's flush does not fail."""
    import os

    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), out.fileno())
    except (OSError, ValueError):
        pass


__all__ = ["run_print", "unattended_session", "interrupt_turn", "JsonLines", "EXIT_OK", "EXIT_FAILED",
           "EXIT_INTERRUPTED", "EXIT_TERMINATED", "Terminated", "sigterm_as_interrupt"]
