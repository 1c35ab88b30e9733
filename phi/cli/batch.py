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
import time
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, Any, Callable, Generator, TextIO

from .approval import make_gate
from .options import CliOptions, key_hint
from .sessions import CliSessions

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session, SessionEvent, SessionStream, SubmitResult
    from ..events import AgentEvent
    from .session_setup import SessionSetup

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
            except OSError:  # the reader went away, or the disk is full: nobody can read more
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
                       err: TextIO | None = None) -> Unattended:
    """A coding session nobody watches, made as at the prompt (:mod:`phi.cli.session_setup`: the
    system-prompt flags, MCP servers, ``--max-turns``, the sandbox, automatic compaction): approval
    ``off`` unless ``--approve`` (then what would be asked is denied; the settings files'
    permission rules apply in every mode), resumed when ``--resume``, recorded into ``sessions``.
    Warnings (a server that did not start, a stored link that leads nowhere) go to ``err``."""
    from .extras import command_environment
    from .mcp_servers import connect_mcp
    from .session_setup import SessionSetup, drop_unfit_input

    warnings = err or sys.stderr

    def warn(text: str) -> None:
        warnings.write(f"phi: warning: {text}\n")

    gate = make_gate(options, options.approve or "off", interactive=False)
    mcp = connect_mcp(options, command_environment(), warn)  # a malformed config: ConfigError, exit 2
    setup = SessionSetup.for_options(options, gate, mcp)
    setup.compaction_notice = lambda before, after: warn(
        f"compacted the conversation to stay under {round(setup.compact_at * 100)}% of the context window: "
        f"~{before:,} → ~{after:,} tokens")
    try:
        session = setup.new_session(profile, sessions)
        # no sandbox here: commands are refused, nobody to ask (set by new_session from the sandbox)
        if options.resume:
            sessions.restore(options.resume, session.agent, warn=warn)
            session.id = session.agent.session_id
            dropped = drop_unfit_input(session)
            if dropped is not None:
                warn(f"the session's last input ({dropped!r}) never fitted the model's context: it is not sent "
                     "again (the stored session keeps it)")
    except BaseException:
        if mcp is not None:
            mcp.close()
        raise
    return Unattended(session, setup, sessions, warn)


class Unattended:
    """An unattended session with what ends it: its MCP servers are stopped by :meth:`close`; an
    input that overflowed the model's context is compacted and sent once more (:meth:`after`); a
    session an error closed (an overflow, a rejected key) is followed by a new one carrying the
    conversation, as at the prompt, so ``--json`` takes the next input."""

    def __init__(self, session: Session, setup: SessionSetup, sessions: CliSessions,
                 warn: Callable[[str], None]) -> None:
        self.session = session
        self.setup = setup
        self.sessions = sessions
        self.warn = warn
        self.error_kinds: list[str] = []  # of the current input's errors, in order
        self.retried = False  # the current input is on its second try
        self.retry_text = ""  # the input :meth:`after` sent again
        self._pending: list[str] = []  # follow-ups a closing session refused: for the next one
        self._pending_steering: list[str] = []
        self._core_listeners: list[Callable[[AgentEvent], None]] = []
        self._listen(session)

    def _note(self, event: SessionEvent) -> None:
        from ..coding import EventKind

        if event.kind == EventKind.ERROR:
            self.error_kinds.append(str(event.data.get("kind", "")))

    def _listen(self, session: Session) -> None:
        session.subscribe(self._note)
        for listener in self._core_listeners:
            session.agent.subscribe(listener)

    def subscribe(self, listener: Callable[[AgentEvent], None]) -> None:
        """Hear every core event of this session and of those that follow it."""
        self._core_listeners.append(listener)
        self.session.agent.subscribe(listener)

    def abort(self) -> None:
        self.session.agent.abort()

    def submit(self, text: str, arrived_at: float | None = None) -> SessionStream:
        """Start ``text`` (``arrived_at``: see ``Session.submit_stream``)."""
        self._open()
        self.error_kinds.clear()
        return self.session.submit_stream(text, arrived_at=arrived_at)

    def _open(self) -> None:
        """After an error closed the session: a new one carrying the conversation, with what was
        given to the closed one (follow-ups, steering) handed on."""
        from ..coding import SessionState

        if self.session.state != SessionState.CLOSED:
            return
        old = self.session
        # what was given to the closed session goes to the next one, each as what it was given as
        steered = old.take_queued_input(follow_ups=False)
        queued = old.take_queued_input(steering=False)
        self.session = self.setup.new_session(old.profile, self.sessions, carry=old)
        self._listen(self.session)
        for waiting in [*queued, *self._pending]:
            self.session.follow_up(waiting)
        for steering in [*steered, *self._pending_steering]:
            self.session.steer(steering)  # at the start of the next input
        self._pending, self._pending_steering = [], []

    def follow_up(self, text: str) -> None:
        """``text`` once the running input is done (a session an error is closing keeps it for the
        next one)."""
        from ..coding import SessionClosed

        self._open()
        try:
            self.session.follow_up(text)
        except SessionClosed:
            self._pending.append(text)

    def steer(self, text: str) -> None:
        """Steering for the running input, or the next one (see :meth:`follow_up`)."""
        from ..coding import SessionClosed

        self._open()
        try:
            self.session.steer(text)
        except SessionClosed:
            self._pending_steering.append(text)

    def take_queued_input(self) -> list[str]:
        """The follow-ups no run took (a failed run takes none), in order. Steering stays: it goes
        with the next input, never becomes one."""
        taken = [*self.session.take_queued_input(steering=False), *self._pending]
        self._pending = []
        return taken

    def failed_input(self, text: str) -> str:
        """The input a failed run failed on: the last user message before its failed reply (a
        follow-up the run took), else ``text``."""
        from ..types import UserMessage
        from .session_setup import without_failed_input

        messages = self.session.agent.messages
        kept = without_failed_input(messages)
        if len(kept) < len(messages) and isinstance(last := messages[len(kept)], UserMessage):
            return last.text
        return text

    def after(self, text: str, result: SubmitResult) -> SessionStream | None:
        """Once ``text``'s run ended: the stream of its second try when it overflowed the context
        (the conversation compacted first, as at the prompt), else None. An input that did not fit
        even then is taken out of the conversation that goes on."""
        from .session_setup import drop_unfit_input

        overflowed = result.outcome == "error" and "context_overflow" in self.error_kinds
        retried, self.retried = self.retried, False
        if not overflowed:
            return None
        text = self.retry_text = self.failed_input(text)  # a follow-up the run took may be what overflowed
        if not retried:
            shrunk = self.setup.shrink_for_retry(self.session, text)
            if shrunk is not None:
                before, after = shrunk
                self.warn(f"the conversation did not fit the model's context: compacted it (~{before:,} → "
                          f"~{after:,} tokens); trying once more")
                stream = self.submit(text)
                self.retried = True
                return stream
        if drop_unfit_input(self.session) is not None:
            self.warn("the input did not fit the model's context even after compaction: it is not kept in the "
                      "conversation (the stored session keeps the failed run)")
        return None

    def close(self) -> None:
        try:
            self.session.close()
        finally:
            if self.setup.mcp is not None:
                self.setup.mcp.close()


def run_print(options: CliOptions, profile: ProviderProfile, sessions: CliSessions, out: TextIO | None = None,
              err: TextIO | None = None) -> int:
    """Run ``options.prompt`` once (see the module docstring); returns the exit status."""
    # new names: sys.stdout is typed "TextIO | Any", so `out = out or sys.stdout` would stay "TextIO | None"
    stdout: TextIO = out or sys.stdout
    stderr: TextIO = err or sys.stderr
    arrived = time.monotonic()  # the prompt came with the command line: the session is made after it
    unattended = unattended_session(options, profile, sessions, stderr)
    lines = JsonLines(stdout, on_closed=unattended.abort)
    if options.json:
        unattended.subscribe(lines)
    from ..providers.secret_registry import redact

    try:
        text = options.prompt or ""
        stream = unattended.submit(text, arrived)
        try:
            with sigterm_as_interrupt():
                result = stream.result()
                while (again := unattended.after(text, result)) is not None:  # an overflow: compacted, once more
                    stream = again
                    result = stream.result()
        except KeyboardInterrupt as stop:
            interrupt_turn(unattended.session)
            stream.result(timeout=10)
            terminated = isinstance(stop, Terminated)
            stderr.write(f"phi: {'terminated' if terminated else 'interrupted'}\n")
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    finally:
        unattended.close()
        session = unattended.session
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
    hint = key_hint(options, profile.id) if "auth" in unattended.error_kinds else ""
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


__all__ = ["run_print", "unattended_session", "Unattended", "interrupt_turn", "JsonLines", "EXIT_OK", "EXIT_FAILED",
           "EXIT_INTERRUPTED", "EXIT_TERMINATED", "Terminated", "sigterm_as_interrupt"]
