"""The interactive ``phi`` (SPEC §15 CLI-2, CLI-3, CLI-9..CLI-12; seed 002 §16.4, §16.8–16.11): a
coding session in a terminal.

The main thread owns the terminal. At the prompt it reads an input (:mod:`phi.cli.terminal`; Enter
sends, a pasted block is one input, a line ending in ``\\`` continues on the next; ``/editor`` for
long texts). While the session works, the reply is written by the
:class:`~phi.cli.render.Renderer` from the session's threads and the main thread keeps reading the
terminal: a line typed meanwhile is sent as steering (``Session.steer``), a line starting with ``/``
is a command (:func:`phi.cli.commands.dispatch_running`), and an approval question from a tool's
thread is asked here — the change it would make first, then one key answers.

Nothing typed is dropped (CLI-9, CLI-10): a paste is a message even when it starts with ``/``, and
a paste at a one-key question answers nothing — it is kept for after the question; a line that
starts with ``/`` but names no command is offered (:meth:`Repl.offer`) — shown again at the prompt
to send or edit, or, while phi works or with more lines behind it, sent with the next line; and what
was sent while phi worked but did not reach the model before the run ended (steering read too late,
after an abort, or refused, and lines still offered) comes back to the prompt. Ctrl+C during a run
aborts that run only — the conversation stays and the prompt returns; at the prompt, Ctrl+C twice in
a row (or Ctrl+D, or ``/quit``) exits.

Start-up (CLI-12): the first screen needs neither the providers nor the coding layer nor the session
store, so they are loaded on a thread (:class:`~phi.cli.startup.Loader`) while the prompt waits for
the first input; :attr:`Repl.session` waits for them. (So the modules the first screen does not need
are imported where they are first used.)

The REPL owns its state. The slash commands, ``@``/``!`` inputs and ``/compact`` act on it through
:class:`~phi.cli.repl_state.ReplState`, and the start-up loader through what it is handed, so none of
them imports this module back.
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable, TextIO, Union

from ..errors import PhiError
from ..log import ROOT as LOG_ROOT
from ..log import get_logger
from .approval import describe, make_gate, summary
from .options import CliOptions, home_dir, key_hint
from .render import Renderer, Style, TurnStats, colour_diff, plural, visible
from .session_setup import SessionSetup, drop_unfit_input
from .startup import Loader, StartupFailed
from .terminal import Terminal, Verbatim

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session, SessionStream, SubmitResult
    from .approval import Question
    from .mcp_servers import McpConnector, McpServers
    from .sessions import CliSessions

log = get_logger(__name__)

#: how long the main thread waits for a line of steering before looking at the run again
POLL_S = 0.05
ABORT_WAIT_S = 10.0
PLAN_INSTRUCTIONS = ("You are in plan mode: you can only read. Study the request and the code, then answer "
                     "with a numbered plan of the changes you would make. Do not try to change anything yet.")
Later = Union["ProviderProfile", Callable[[], "ProviderProfile"]]


class ScreenLog(logging.Handler):
    """phi's warnings (a retry after a server error, a failed save) as notice lines of the
    conversation, on lines of their own, instead of raw text on stderr across a streaming reply."""

    def __init__(self, renderer: Renderer) -> None:
        super().__init__(logging.WARNING)
        self.renderer = renderer

    def emit(self, record: logging.LogRecord) -> None:
        try:
            colour = "red" if record.levelno >= logging.ERROR else "yellow"
            with self.renderer.aside():  # (a reply streaming meanwhile goes on after it, no word split)
                self.renderer.line(self.renderer.style(colour, f"! {record.getMessage()}"))
        except Exception:
            self.handleError(record)


class Repl:
    """One interactive ``phi`` process (see the module docstring). ``profile`` and ``sessions`` may
    be given as functions making them: they are then called on the start-up thread (unless not
    ``background``: with MCP servers to start, whose messages must come before the prompt)."""

    def __init__(self, options: CliOptions, profile: Later,
                 sessions: CliSessions | Callable[[], CliSessions], *,
                 stdin: TextIO | None = None, out: TextIO | None = None, background: bool = True,
                 mcp: McpConnector | None = None, resume: str | None = None) -> None:
        self.options = options
        self.connector = mcp  # MCP servers connecting meanwhile; their tools join between inputs
        self.resume_at_start = resume  # restored into the first session, on the start-up thread
        self.notices: list[str] = []  # said by the start-up thread, shown between inputs
        self.out = out or sys.stdout
        self.term = Terminal(stdin or sys.stdin, self.out, os.path.join(home_dir(), "history"))
        terminal = self.out.isatty() and os.environ.get("TERM") != "dumb"
        enabled = options.color == "always" or (options.color == "auto" and terminal
                                                  and os.environ.get("NO_COLOR") is None)
        self.style = Style(enabled)
        self.gate = make_gate(options, options.approve or "smart")  # a broken settings file stops phi here
        if options.sandbox != "full":
            from ..tools.sandbox import start_probe

            start_probe()  # the banner says what protects commands; the probe runs meanwhile
        self.renderer = Renderer(self.out, self.style, show_thinking=not options.hide_thinking,
                                 tool_kind=self._tool_kind, cwd=options.cwd,
                                 live=terminal and options.color != "never",
                                 width=(lambda: _columns(self.out)) if self.out.isatty() else None)
        self.screen_log = ScreenLog(self.renderer)
        logging.getLogger(LOG_ROOT).addHandler(self.screen_log)
        self.quit_requested = False  # /quit typed while a run streamed
        self.after_reply: list[str] = []  # commands typed while a run streamed, run when it ends
        self.next_profile: ProviderProfile | None = None  # /model typed while a run streamed
        self.setup = SessionSetup.for_options(options, self.gate)  # what every session is made with
        self.setup.compaction_notice = self._compacted
        self.pending_context: list[str] = []  # ``!`` outputs that go with the next message
        self._fork_told: object = None  # the agent's last SessionFork the user was told of
        self._branched_at: str | None = None  # the loop a `/resume ID LOOP` branched from, until the next reply
        self.offered: str | None = None  # lines offered as a message, not sent yet (see offer)
        self._offer_shown = False  # ``offered`` is in the prompt's edit buffer, to send or edit
        self.steered: list[str] = []  # steering sent during this input's run
        self.read_at: float | None = None  # when the last input was read (time.monotonic())
        self.unsent: list[str] = []  # steering the session refused, for the prompt
        self.term.completer = self._complete
        self.loader = Loader(options, profile, sessions, self._first_session)
        if resume is not None:
            self.loader.session_id = resume  # the banner names the session the turns go to
        self.loader.start(background)

    def _complete(self, text: str) -> list[str]:
        from .commands import ALIASES, COMMANDS
        from .extras import complete

        return complete(Path(self.options.cwd), text, [*COMMANDS, *ALIASES])

    # ------------------------------------------------------------------ what start-up loads

    @property
    def profile(self) -> ProviderProfile:
        return self.loader.wait().profile

    @profile.setter
    def profile(self, profile: ProviderProfile) -> None:
        self.loader.wait().profile = profile

    @property
    def sessions(self) -> CliSessions:
        return self.loader.wait().sessions

    @property
    def session(self) -> Session:
        return self.loader.wait().session

    @session.setter
    def session(self, session: Session) -> None:
        self.loader.wait().session = session

    # ------------------------------------------------------------------ what sessions are made with

    @property
    def plan_mode(self) -> bool:
        return self.setup.plan_mode

    @property
    def mcp(self) -> McpServers | None:
        return self.setup.mcp

    # ------------------------------------------------------------------ sessions

    def _first_session(self, session_id: str) -> Session:
        """On the start-up thread, once the profile and the store are loaded: the MCP servers start
        connecting (their tools join between inputs, :meth:`between_inputs`), then the session —
        the resumed one with ``--resume``/``-c``."""
        if self.connector is not None:
            self.connector.start()
        if self.resume_at_start is None:
            return self.new_session(session_id=session_id)
        session = self.new_session()
        try:  # said between inputs: the person may be typing at the prompt meanwhile
            count = self._restore(session, self.resume_at_start, None,
                                  lambda text: self.notices.append(self.style("yellow", f"! {text}")))
        except BaseException:
            session.close()
            raise
        self.notices.append(f"resumed session {session.id}: {count} messages")
        return session

    def between_inputs(self, wait_for_mcp: float = 0.0) -> None:
        """What start-up did meanwhile, said now that nothing else is written (notices, MCP servers
        that connected or failed); tools of servers that connected join the session."""
        while self.notices:
            self.renderer.line(self.notices.pop(0))
        if self.connector is None or not self.loader.ready():  # the first session takes them once it exists
            return
        servers, lines = self.connector.take(wait_for_mcp)
        if servers is not None:
            self.setup.mcp = servers
            servers.register(self.session.profile.tool_registry)
        for line in lines:
            failed = line.startswith("! ")
            self.renderer.line(self.style("red" if failed else "grey", line))

    def _tool_kind(self, name: str) -> str:
        registered = self.profile.tool_registry.get(name)
        return registered.kind if registered is not None else "execute"

    def new_session(self, carry: Session | None = None, session_id: str | None = None) -> Session:
        """A coding session for the current profile (made as in every mode: :mod:`phi.cli.session_setup`);
        ``carry``: continue that one's conversation."""
        profile = self.loader.state.profile
        session = self.setup.new_session(profile, self.loader.state.sessions, carry=carry, session_id=session_id)
        session.subscribe(self.renderer.on_event)
        session.agent.subscribe(self.renderer.on_core_event)
        self.renderer.model = profile.model_config
        self.renderer.auth_hint = key_hint(self.options, profile.id)
        return session

    def _compacted(self, before: int, after: int) -> None:
        """The loop compacted the conversation before a model call (on the run's thread): said, so
        that a context gauge that drops (or a usage warning above 100 %) is explained."""
        self.renderer.line(self.style("yellow", f"! compacted the conversation to stay under "
                                                f"{round(self.setup.compact_at * 100)}% of the context window: "
                                                f"~{before:,} → ~{after:,} tokens"))

    def context_window(self, profile: ProviderProfile | None = None) -> int:
        """The model's window, or the smaller one an overflow showed."""
        return self.setup.context_window(profile or self.profile)

    def replace_session(self, carry: bool, profile: ProviderProfile | None = None) -> None:
        """Close the current session and start another (same conversation when ``carry``)."""
        old = self.session
        if profile is not None:
            self.profile = profile
        if not carry:
            self.renderer.total = TurnStats()  # the session's cost and context start again
        self.session = self.new_session(old if carry else None)
        old.close()

    def resume(self, session_id: str, at: str | None = None) -> int:
        """Continue a stored session (its id, agent id and conversation — through loop ``at``, or
        its latest); the number of messages."""
        self.loader.wait()
        new = self.new_session()
        try:
            count = self._restore(new, session_id, at)
        except BaseException:
            new.close()
            raise
        self.renderer.total = TurnStats()  # the context is the resumed conversation's (estimated until a call)
        old, self.session = self.session, new
        old.close()
        return count

    def _restore(self, new: Session, session_id: str, at: str | None,
                 warn: Callable[[str], None] | None = None) -> int:
        """Give ``new`` the stored conversation (see :meth:`resume`); the number of messages."""
        warn = warn or self.warn_link
        count = self.loader.state.sessions.restore(session_id, new.agent, at, warn=warn)
        self._branched_at = at  # a branch the user asked for is no news when its first run forks
        new.id = self.loader.session_id = new.agent.session_id  # the banner names the session written to
        dropped = drop_unfit_input(new)
        if dropped is not None:
            count = len(new.agent.messages)
            warn(f"the session's last input ({visible(dropped)!r}) never fitted the model's context: it is not "
                 "sent again (the stored session keeps it)")
        return count

    def warn_link(self, text: str) -> None:
        """A stored link that leads nowhere (a crash between two saves): said, never fatal."""
        self.renderer.line(self.style("yellow", f"! {text}"))

    def set_plan_mode(self, on: bool) -> None:
        self.setup.plan_mode = on
        self.setup.mode_instructions = PLAN_INSTRUCTIONS if on else None
        self.setup.apply_mode(self.session)
        self.session.prepare_tools()  # /tools lists what the next input offers

    # ------------------------------------------------------------------ the loop

    def banner(self) -> None:
        s = self.style
        where = os.path.abspath(self.options.cwd)
        profile_id, model = self.loader.names()
        self.renderer.line(f"{s('bold', 'phi')} · {model} ({profile_id}) · {where}")
        resumed = " (resumed)" if self.resume_at_start is not None else ""
        self.renderer.line(s("grey", f"session {self.loader.session_id}{resumed} · /help for commands · Ctrl+C "
                                     "aborts a run, twice at the prompt exits"))
        self.renderer.line(self.sandbox_line())
        self._banner_rules()

    def sandbox_line(self) -> str:
        """``sandbox: workspace-write, network off, .git read-only (Landlock ABI 7 + ...)`` — yellow
        where the machine cannot keep it and every command is asked."""
        from ..tools.sandbox import describe_protection, sandbox_status

        policy, status = self.options.sandbox_policy(), sandbox_status()
        unconfined = policy.sandboxed and not status.available
        return self.style("yellow" if unconfined else "grey", f"sandbox: {describe_protection(policy, status)}")

    def _banner_rules(self) -> None:
        """The approval mode and the permission rules in force (``/approve`` lists them)."""
        self.renderer.line(self.style("grey", summary(self.gate)))

    def run(self) -> int:
        self.banner()
        self.term.paste_mode(True)
        interrupted = False
        while True:
            try:
                text = self.read_input()
            except KeyboardInterrupt:
                if self.term.cleared.strip():  # Ctrl+C on a line being typed clears it, as in a shell
                    interrupted = False
                    self.renderer.line(self.style("grey", "(cleared; Ctrl+C twice on an empty prompt exits)"))
                    continue
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
            except StartupFailed:  # what loads behind the prompt failed: phi exits 2 with the reason
                self.renderer.line(self.style("yellow", f"not sent: {visible(text)}"))
                self.close()  # the terminal as it was (bracketed paste off), the history kept, servers stopped
                raise
        self.close()
        return 0

    def handle(self, text: str) -> bool:
        """One input: a slash command, a ``!`` shell command or a message for the model. False ends
        the program. A paste (a :class:`Verbatim`) is a message. Offered lines (see :meth:`offer`)
        are sent when they come back unchanged from the edit buffer; when they were not shown there,
        with an empty line, or ahead of the next message (a command runs and leaves them waiting)."""
        from .commands import dispatch, is_command

        self.between_inputs()  # what start-up said while this was typed, before the answer to it
        offered, shown = self.offered, self._offer_shown
        self.offered, self._offer_shown = None, False
        stripped = text.strip()
        if offered is not None:
            if text == offered or not stripped and not shown:
                return self._message(Verbatim(offered))
            if not shown:  # lines pasted or typed ahead behind it, or no line editor to show it in
                if _is_message(text, running=False):
                    return self._message(Verbatim(f"{offered}\n{text}"))
                self.offered = offered  # a command runs first; another unknown /line joins it
            # (shown: what comes back is the person's edit of it)
        if not stripped:
            return True
        if isinstance(text, Verbatim):
            return self._message(text)
        if stripped.startswith("/"):
            if is_command(stripped):
                return dispatch(self, stripped)
            self.offer(stripped)
            return True
        if stripped.startswith("!"):
            from .extras import run_shell

            run_shell(self, stripped[1:].strip())
            return True
        return self._message(text)

    def _message(self, text: str) -> bool:
        from .extras import expand_mentions

        message = expand_mentions(self, text)
        if message is not None:
            self.run_input(message, arrived_at=self.read_at)
        return not self.quit_requested

    def offer(self, line: str, running: bool = False) -> None:
        """``line`` starts with ``/`` but names no command (a path, compiler output, a typo): it is
        not dropped. At the prompt, with nothing typed after it yet, it is put back in the edit buffer:
        Enter sends it as it is, or edit it. Otherwise — while phi works, with more lines already
        behind it (a paste the terminal did not mark), or without the line editor — it waits and goes
        with the next line sent (an empty line sends it alone); lines offered one after another wait
        together; a command typed meanwhile runs and leaves them waiting; at the end of a run they come
        back to the prompt."""
        pending = self.offered
        self.offered = line if pending is None else f"{pending}\n{line}"
        if not running and self.term.editing and pending is None and not self.term.waiting():
            self.term.put_back(line)
            self._offer_shown = True
            how = "press Enter to send it as a message, or edit it"
        elif running:
            how = "press Enter to send the line to phi now, or it goes with the next line you type"
        else:
            how = "press Enter on an empty line to send it now, or it goes with your next message"
        name = line.split(maxsplit=1)[0]
        self.renderer.line(self.style("yellow", f"unknown command {name} — {how} (/help lists the commands)"))

    def read_input(self) -> str:
        """One input: lines ending in a backslash continue on the next line (a Verbatim when its
        first line is one)."""
        self.between_inputs()
        mark = "PLAN › " if self.plan_mode else "› "
        first = self.term.prompt(self.style("bold", mark))
        lines = [first]
        while lines[-1].endswith("\\"):
            lines[-1] = lines[-1][:-1]
            try:
                lines.append(self.term.prompt(self.style("grey", "… ")))
            except KeyboardInterrupt:  # the lines before are cleared too: not an empty prompt
                self.term.cleared = "\n".join([*lines, self.term.cleared])
                raise
        text = "\n".join(lines)
        self.read_at = time.monotonic()
        return Verbatim(text) if isinstance(first, Verbatim) else text

    def run_input(self, text: str, retried: bool = False, arrived_at: float | None = None) -> SubmitResult | None:
        """Process one input until it is done (or Ctrl+C); then the status line. Returns the result.
        A context overflow is answered by compacting the conversation and trying once more. What was
        sent meanwhile and not read comes back to the prompt. ``arrived_at``: when the person sent it
        (``time.monotonic()``; see ``Session.submit_stream``)."""
        try:
            return self._run_input(text, retried, arrived_at)
        finally:
            self._return_unsent()

    def _run_input(self, text: str, retried: bool, arrived_at: float | None = None) -> SubmitResult | None:
        from ..coding import SessionState
        from .compact import recover_from_overflow

        if self.next_profile is not None:
            profile, self.next_profile = self.next_profile, None
            self.replace_session(carry=True, profile=profile)
        if self.session.state == SessionState.CLOSED:
            self.replace_session(carry=True)
        self.between_inputs()  # start-up's news, and MCP tools that arrived while this was typed
        self.renderer.start_turn(self._context_guess(text))
        try:
            # an input sent while start-up made the session: the prompt it prepared is as new as the input
            stream = self.session.submit_stream(text, arrived_at=arrived_at)
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
        if self.renderer.error_kind == "context_overflow" and not retried and not self.quit_requested:
            if recover_from_overflow(self, text):
                return self.run_input(text, retried=True)
        self._after(result)
        self._run_queued_commands()
        return result

    def _context_guess(self, text: str) -> int:
        """The estimated size of what the next model call is sent: the conversation and ``text``
        (the status line's figures for a server that reports no usage)."""
        from ..context.tokens import estimate_tokens
        from .render import context_estimate

        agent = self.session.agent
        return context_estimate(agent.messages, agent.system_prompt) + estimate_tokens(text) + 4

    def _watch(self, stream: SessionStream) -> SubmitResult:
        with self.term.running():
            while not stream.done:
                question = self.gate.pending()
                if question is not None:
                    self._ask(question)
                    continue
                line = self.term.poll_line(POLL_S)
                if line is None:
                    continue
                if stream.done:  # typed as the run ended: it is the next input (offered lines wait for it)
                    self.term.unread(line)
                elif not _is_message(line, running=True):
                    if line.strip():
                        from .commands import dispatch_running, is_command

                        with self.renderer.aside():  # not inside the reply's words: on rows of its own
                            if not is_command(line.strip()):
                                self.offer(line.strip(), running=True)
                                continue
                            stop = dispatch_running(self, line.strip()) == "stop"
                        if stop:
                            return self._interrupt(stream)  # (offered lines come back to the prompt)
                    elif self.offered is not None:  # Enter alone: the offered lines go now, as they are
                        self._steer(self._take_offered())
                else:  # offered lines go first, with this one: never dropped
                    self._steer("\n".join(filter(None, (self._take_offered(), line.strip()))))
        return stream.result()

    def _take_offered(self) -> str:
        offered, self.offered = self.offered, None
        return offered or ""

    def _steer(self, text: str) -> None:
        try:
            self.session.steer(text)
            self.steered.append(text)
        except PhiError as error:  # the session is closing: the text waits at the prompt
            log.debug("steering refused: %s", error)
            self.unsent.append(text)

    def _take_back_steering(self) -> list[str]:
        """The steering still queued after the run, when all of it is this run's (else — the run's
        own loop warning waits too — it stays queued for the next input, which is said)."""
        from collections import Counter

        from ..types import UserMessage

        steered, self.steered = self.steered, []
        agent = self.session.agent
        queued = [*agent.steering_queue.snapshot(), *agent.follow_up_queue.snapshot()]
        if not queued:
            return []
        texts = [m.text for m in queued if isinstance(m, UserMessage)]
        if len(texts) == len(queued) and not Counter(texts) - Counter(steered):
            return self.session.take_queued_input()
        mine = [text for text in texts if text in steered]
        if mine:
            self.renderer.line(self.style("yellow", f"↳ not read by the model yet; it goes with your next message: "
                                                    f"{_shown(chr(10).join(mine))}"))
        return []

    def _return_unsent(self) -> None:
        """Steering that never reached the model (queued as the run ended or was aborted, or
        refused), and lines offered while phi worked, come back to the prompt — never dropped.
        Shown in the edit buffer with the line editor (unless lines typed meanwhile come first);
        otherwise an empty line sends them, or they go with the next message."""
        texts, self.unsent = self.unsent, []
        if self.loader.ready():
            texts += self._take_back_steering()
        if self.offered is not None:
            texts.append(self.offered)
        if not texts:
            return
        text = "\n".join(texts)
        shown = _shown(text)
        if self.quit_requested:
            self.offered = None
            self.renderer.line(self.style("yellow", f"↳ not sent to the model (you quit): {shown}"))
            return
        self.offered, self._offer_shown = text, False
        if self.term.editing and not self.term.waiting():
            self.term.put_back(Verbatim(text))
            self._offer_shown = True
            how = "it is back at the prompt: press Enter to send it"
        else:
            how = "press Enter on an empty line to send it, or it goes with your next message"
        self.renderer.line(self.style("yellow", f"↳ not read by the model before the run ended: {shown} — {how}"))

    def _ask(self, question: Question) -> None:
        """Show what the call would change (paged when long), then ask; one key answers."""
        self.renderer.begin_question(question.request.call_id)
        self.renderer.fresh_line()
        try:
            self._show_preview(question)
            self._show_always(question)
            ask = self.style("yellow", f"? allow {describe(question.request)} — "
                                       "[y]es, [n]o, [a]lways for this session: ")
            self.renderer.write(ask)
            reply = self.term.read_key("yna", self.kept_paste(ask))
        except KeyboardInterrupt:
            self.gate.answer(question, "n")
            raise
        except EOFError:
            reply = "n"
        finally:
            self.renderer.after_typing()
        decision = self.gate.answer(question, reply)
        if self.term.tty:  # the key was not echoed
            self.renderer.write(f"{reply}\n")
        self.renderer.line(self.style("grey", "allowed" if decision.allowed else "denied"))

    def _show_always(self, question: Question) -> None:
        """The rule an "always" answer adds, shown before the question (or the ask rule that asks)."""
        rule = self.gate.always_rule(question)
        if rule is not None:
            self.renderer.line(self.style("grey", f"  [a] always allow: {visible(rule.text)}"))
        elif question.asked_by is not None:
            source = f" ({question.asked_by.source})" if question.asked_by.source else ""
            self.renderer.line(self.style("grey", f"  asked because of the rule {question.asked_by}{source}; "
                                                  "[a] allows this call only"))
        else:
            self.renderer.line(self.style("grey", "  [a] allows this call only (no rule can name this exact command)"))

    def _show_preview(self, question: Question) -> None:
        """The diff a write call would make, a page at a time ([space] next page, [q] to the question)."""
        request = question.request
        if request.kind != "write":
            return
        from .preview import preview_diff

        lines, reason = preview_diff(request.tool_name, request.arguments, self.options.cwd)
        self.renderer.previewed[request.call_id] = lines  # the same change is not shown again after the call
        if reason:
            self.renderer.line(self.style("grey", reason))
        shown = colour_diff(lines, self.style)
        page = max(5, shutil.get_terminal_size((100, 24)).lines - 4)
        while shown:
            self.renderer.write("\n".join(shown[:page]) + "\n")
            shown = shown[page:]
            if not shown:
                break
            more = self.style("grey", f"… {plural(len(shown), 'more line')}: [space] next page, "
                                      "[q] skip to the question ")
            self.renderer.write(more)
            key = self.term.read_key(" q", self.kept_paste(more))
            self.renderer.write("\r\x1b[2K" if self.renderer.live else "\n")
            if key == "q":
                break

    def kept_paste(self, question: str) -> Callable[[str], None]:
        """What to do when a paste arrives at a one-key question: it does not answer it (SPEC CLI-9);
        the terminal keeps it as one message for after the question — said here, then the question
        is shown again."""

        def notice(text: str) -> None:
            self.renderer.line(self.style("yellow", "↳ a paste does not answer this question; it is kept and goes "
                                                    f"to phi as one message after it: {_shown(text)}"))
            self.renderer.write(question)

        return notice

    def _interrupt(self, stream: SessionStream) -> SubmitResult:
        """Ctrl+C (or /abort, /quit) during a run: stop the run, keep the session."""
        from .batch import interrupt_turn

        self.gate.deny_all("the run was aborted")
        # a paste kept at a question (or not read yet) is not sent unseen after an abort: it comes back
        self.unsent.extend(line.strip() for line in self.term.take_pastes())
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
        from .render import context_estimate

        if result.outcome == "error" and result.error and not self.renderer.error_shown:
            self.renderer.line(self.style("red", f"the run failed: {result.error}"))
        mode = "PLAN" if self.plan_mode else ""
        agent = self.session.agent
        estimate = lambda: context_estimate(agent.messages, agent.system_prompt)  # noqa: E731
        self.renderer.line(self.renderer.status(self.context_window(), mode, estimate, self.setup.compact_at))
        fork, asked, self._branched_at = agent.last_fork, self._branched_at, None
        if fork is not None and fork is not self._fork_told and fork.follows != asked:
            self._fork_told = fork
            self.renderer.line(self.style("yellow", f"another phi continued this session from the same point; your "
                                          f"conversation continues as branch {fork.loop_id} of it (both are kept)"))
        self.save(quiet=True)

    def _run_queued_commands(self) -> None:
        from .commands import dispatch

        while self.after_reply and not self.quit_requested:
            line = self.after_reply.pop(0)
            self.renderer.line(self.style("grey", f"› {line}"))
            if not dispatch(self, line):
                self.quit_requested = True

    def save(self, quiet: bool = False) -> list[str]:
        try:
            saved = self.sessions.save()
        except Exception as error:  # a full disk must not end the conversation
            self.renderer.line(self.style("red", f"could not save the session: {error}"))
            return []
        if saved or os.path.exists(self.sessions.path_of(self.session.id)):  # the agent saves its runs itself
            from .recent import remember

            remember(self.sessions, self.options.cwd, self.session.id)
        if not quiet:
            self.renderer.line(f"saved session {self.session.id} to {self.sessions.path_of(self.session.id)}")
        return saved

    def close(self) -> None:
        try:
            if self.loader.ready():
                self.session.close()
                self.save(quiet=True)
        finally:
            if self.connector is not None:
                self.connector.close()  # servers still starting stop as they come up
            if self.mcp is not None:
                self.mcp.close()
            self.term.save_history()
            self.term.paste_mode(False)
            logging.getLogger(LOG_ROOT).removeHandler(self.screen_log)


def _columns(out: TextIO) -> int:
    """The terminal's width now (it may have been resized): asked of the terminal itself first, as
    an exported ``COLUMNS`` can be stale."""
    try:
        columns = os.get_terminal_size(out.fileno()).columns
    except (OSError, ValueError):
        columns = 0
    return columns or shutil.get_terminal_size((100, 24)).columns


def _is_message(line: str, running: bool) -> bool:
    """Whether ``line`` is text for the model: a paste, or a typed line that is not a ``/`` line
    (nor, at the prompt, a ``!`` shell line). Empty lines are not."""
    stripped = line.strip()
    if isinstance(line, Verbatim):
        return bool(stripped)
    return bool(stripped) and not stripped.startswith("/") and (running or not stripped.startswith("!"))


def _shown(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[:limit] + "…"


__all__ = ["Repl", "Terminal", "Verbatim", "PLAN_INSTRUCTIONS"]
