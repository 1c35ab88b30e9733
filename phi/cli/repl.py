"""The interactive ``phi`` (SPEC §15 CLI-2, CLI-3; seed 002 §16.4, §16.8–16.11): a coding session in a terminal.

The main thread owns the terminal. At the prompt it reads an input (:mod:`phi.cli.terminal`; a line
ending in ``\\`` continues on the next; ``/editor`` for long texts). While the session works, the
reply is written by the :class:`~phi.cli.render.Renderer` from the session's threads and the main
thread keeps reading stdin: a line typed meanwhile is sent as steering (``Session.steer``), and an
approval question from a tool's thread is asked and answered here. Ctrl+C during a run aborts that
run only — the conversation stays and the prompt returns; at the prompt, Ctrl+C twice in a row (or
Ctrl+D, or ``/quit``) exits.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TYPE_CHECKING, TextIO

from ..coding import Session, SessionConfig, SessionState
from ..errors import PhiError
from ..log import ROOT as LOG_ROOT
from ..log import get_logger
from ..session.store import default_sessions_dir
from .approval import ApprovalGate, describe
from .batch import interrupt_turn
from .options import CliOptions, key_hint
from .render import Renderer, Style, TurnStats, context_estimate
from .sessions import CliSessions
from .terminal import Terminal

if TYPE_CHECKING:
    from ..coding import ProviderProfile, SessionStream, SubmitResult
    from .approval import Question

log = get_logger(__name__)

#: how long the main thread waits for a line of steering before looking at the run again
POLL_S = 0.05
ABORT_WAIT_S = 10.0
PLAN_INSTRUCTIONS = ("You are in plan mode: you can only read. Study the request and the code, then answer "
                     "with a numbered plan of the changes you would make. Do not try to change anything yet.")


class ScreenLog(logging.Handler):
    """phi's warnings (a retry after a server error, a failed save) as notice lines of the
    conversation, on lines of their own, instead of raw text on stderr across a streaming reply."""

    def __init__(self, renderer: Renderer) -> None:
        super().__init__(logging.WARNING)
        self.renderer = renderer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            colour = "red" if record.levelno >= logging.ERROR else "yellow"
            self.renderer.line(self.renderer.style(colour, f"! {record.getMessage()}"))
        except Exception:
            self.handleError(record)


class Repl:
    """One interactive ``phi`` process (see the module docstring)."""

    def __init__(self, options: CliOptions, profile: ProviderProfile, sessions: CliSessions, *,
                 stdin: TextIO | None = None, out: TextIO | None = None) -> None:
        self.options = options
        self.profile = profile
        self.sessions = sessions
        self.out = out or sys.stdout
        self.term = Terminal(stdin or sys.stdin, self.out, str(default_sessions_dir().parent / "history"))
        terminal = self.out.isatty() and os.environ.get("TERM") != "dumb"
        enabled = options.color == "always" or (options.color == "auto" and terminal
                                                  and os.environ.get("NO_COLOR") is None)
        self.style = Style(enabled)
        self.gate = ApprovalGate(options.approve or "smart")
        self.renderer = Renderer(self.out, self.style, show_thinking=not options.hide_thinking,
                                 tool_kind=self._tool_kind, cwd=options.cwd,
                                 live=terminal and options.color != "never")
        self.reasoning_effort = options.reasoning_effort()
        self.screen_log = ScreenLog(self.renderer)
        logging.getLogger(LOG_ROOT).addHandler(self.screen_log)
        self.plan_mode = False
        self.session: Session = self._new_session()

    # ------------------------------------------------------------------ sessions

    def _tool_kind(self, name: str) -> str:
        registered = self.profile.tool_registry.get(name)
        return registered.kind if registered is not None else "execute"

    def _new_session(self, carry: Session | None = None) -> Session:
        """A coding session for the current profile; ``carry``: continue that one's conversation."""
        from ..tools.environment import LocalExecutionEnvironment

        config = SessionConfig(approval=self.gate, reasoning_effort=self.reasoning_effort, plan_mode=False)
        session = Session(self.profile, LocalExecutionEnvironment(self.options.cwd), config)
        if carry is not None:
            session.agent.restore(carry.agent.checkpoint())
            session.id = carry.id
        self._attach(session)
        self._apply_mode(session)
        self.renderer.model = self.profile.model_config
        self.renderer.auth_hint = key_hint(self.options, self.profile.id)
        return session

    def _attach(self, session: Session) -> None:
        session.subscribe(self.renderer.on_event)
        session.agent.subscribe(self.renderer.on_core_event)
        self.sessions.attach(session.agent)

    def _apply_mode(self, session: Session) -> None:
        session.config.plan_mode = self.plan_mode
        session.config.user_instructions = PLAN_INSTRUCTIONS if self.plan_mode else None

    def replace_session(self, carry: bool, profile: ProviderProfile | None = None) -> None:
        """Close the current session and start another (same conversation when ``carry``)."""
        old = self.session
        if profile is not None:
            self.profile = profile
        if not carry:
            self.gate.trusted.clear()  # "always allow" holds for one conversation
            self.renderer.total = TurnStats()  # and so do the session's cost and context
        self.session = self._new_session(old if carry else None)
        old.close()

    def resume(self, session_id: str, at: str | None = None) -> int:
        """Continue a stored session (its id, agent id and conversation — through loop ``at``, or
        its latest); the number of messages."""
        new = self._new_session()
        try:
            count = self.sessions.restore(session_id, new.agent, at)
        except BaseException:
            new.close()
            raise
        self.gate.trusted.clear()
        self.renderer.total = TurnStats()  # the context is the resumed conversation's (estimated until a call)
        new.id = new.agent.session_id
        old, self.session = self.session, new
        old.close()
        return count

    def set_plan_mode(self, on: bool) -> None:
        self.plan_mode = on
        self._apply_mode(self.session)

    # ------------------------------------------------------------------ the loop

    def banner(self) -> None:
        s = self.style
        where = os.path.abspath(self.options.cwd)
        self.renderer.line(f"{s('bold', 'phi')} · {self.profile.model} ({self.profile.id}) · {where}")
        self.renderer.line(s("grey", f"session {self.session.id} · /help for commands · Ctrl+C aborts a run, "
                                     "twice at the prompt exits"))

    def run(self) -> int:
        self.banner()
        interrupted = False
        while True:
            try:
                text = self.read_input()
            except KeyboardInterrupt:
                if interrupted:
                    self.renderer.line()
                    break
                interrupted = True
                self.renderer.line(self.style("grey", "(Ctrl+C again to exit)"))
                continue
            except EOFError:
                self.renderer.line()
                break
            interrupted = False
            try:
                if not self.handle(text):
                    break
            except KeyboardInterrupt:  # during a command (the editor, a save): back to the prompt
                self.renderer.line(self.style("grey", "(interrupted)"))
        self.close()
        return 0

    def handle(self, text: str) -> bool:
        """One input: a slash command or a message for the model. False ends the program."""
        from .commands import dispatch

        if not text.strip():
            return True
        if text.lstrip().startswith("/"):
            return dispatch(self, text.strip())
        self.run_input(text)
        return True

    def read_input(self) -> str:
        """One input: lines ending in a backslash continue on the next line."""
        mark = "PLAN › " if self.plan_mode else "› "
        lines = [self.term.prompt(self.style("bold", mark))]
        while lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1]
            lines.append(self.term.prompt(self.style("grey", "… ")))
        return "\n".join(lines)

    def run_input(self, text: str) -> SubmitResult | None:
        """Process one input until it is done (or Ctrl+C); then the status line. Returns the result."""
        if self.session.state == SessionState.CLOSED:
            self.replace_session(carry=True)
        self.renderer.start_turn()
        try:
            stream = self.session.submit_stream(text)
            try:
                result = self._watch(stream)
            except KeyboardInterrupt:
                result = self._interrupt(stream)
        except PhiError as error:
            self.renderer.line(self.style("red", f"error: {error}"))
            return None
        except Exception as error:  # a bug in a tool or hook: report it, keep the conversation
            log.debug("the run raised", exc_info=True)  # the line below says it; the trace for debugging
            self.renderer.line(self.style("red", f"the run raised {type(error).__name__}: {error}"))
            return None
        self._after(result)
        return result

    def _watch(self, stream: SessionStream) -> SubmitResult:
        while not stream.done:
            question = self.gate.pending()
            if question is not None:
                self._ask(question)
                continue
            line = self.term.poll_line(POLL_S)
            if line is None or not line.strip():
                continue
            if stream.done:  # typed as the run ended: it is the next input
                self.term.unread(line)
            else:
                self.session.steer(line.strip())
        return stream.result()

    def _ask(self, question: Question) -> None:
        self.renderer.begin_question(question.request.call_id)
        self.renderer.fresh_line()
        self.renderer.write(self.style("yellow", f"? allow {describe(question.request)} — "
                                                 "[y]es, [n]o, [a]lways for this session: "))
        try:
            reply = self.term.read_answer("")
        except KeyboardInterrupt:
            self.gate.answer(question, "n")
            raise
        finally:
            self.renderer.after_typing()
        decision = self.gate.answer(question, reply)
        self.renderer.line(self.style("grey", "allowed" if decision.allowed else "denied"))

    def _interrupt(self, stream: SessionStream) -> SubmitResult:
        """Ctrl+C during a run: stop the run, keep the session."""
        self.gate.deny_all("the run was aborted")
        interrupt_turn(self.session)
        while True:
            try:
                result = stream.result(timeout=ABORT_WAIT_S)
                break
            except KeyboardInterrupt:
                continue  # already stopping
            except TimeoutError:
                self.renderer.line(self.style("red", "the run did not stop; closing the session"))
                self.session.close()
                result = stream.result(timeout=ABORT_WAIT_S)
                break
        self.renderer.line(self.style("yellow", "⏹ aborted — the conversation is kept"))
        return result

    def _after(self, result: SubmitResult) -> None:
        if result.outcome == "error" and result.error and not self.renderer.error_shown:
            self.renderer.line(self.style("red", f"the run failed: {result.error}"))
        mode = "PLAN" if self.plan_mode else ""
        agent = self.session.agent
        estimate = lambda: context_estimate(agent.messages, agent.system_prompt)  # noqa: E731
        self.renderer.line(self.renderer.status(self.profile.context_window_size, mode, estimate))
        self.save(quiet=True)

    def save(self, quiet: bool = False) -> list[str]:
        try:
            saved = self.sessions.save()
        except Exception as error:  # a full disk must not end the conversation
            self.renderer.line(self.style("red", f"could not save the session: {error}"))
            return []
        if not quiet:
            self.renderer.line(f"saved session {self.session.id} to {self.sessions.path_of(self.session.id)}")
        return saved

    def close(self) -> None:
        self.session.close()
        self.save(quiet=True)
        self.term.save_history()
        logging.getLogger(LOG_ROOT).removeHandler(self.screen_log)


__all__ = ["Repl", "Terminal", "PLAN_INSTRUCTIONS"]
