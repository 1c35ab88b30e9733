"""One coding session for every way ``phi`` is driven (SPEC §15 CLI-16).

The prompt, ``-p`` and ``--json`` build their session here, so a flag means the same in each:
``--system-prompt`` replaces the base instructions, ``--append-system-prompt`` (and plan mode's
instructions at the prompt) go after them, the MCP servers of ``./.mcp.json`` and ``--mcp`` offer
their tools, ``--max-turns`` bounds the model calls of an input, the sandbox flags confine the
commands, and automatic compaction runs at ``--compact-at`` of the model's window (the window an
overflow showed, once one did).

After a context overflow the loop could not fix, every mode does the same (:func:`shrink_for_retry`):
the conversation is compacted to a quarter, the window assumed for the rest of the process is
halved, and the input is sent once more. An input that still does not fit is taken out of the
conversation that goes on (:func:`drop_unfit_input`), so the next input — in this process or after
``--resume`` — is not sent behind it; the stored session keeps the failed run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Sequence

from ..log import get_logger

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session
    from ..context import ContextConfig
    from ..context.compaction import CompactionStrategy
    from ..types import AgentMessage
    from .approval import ApprovalGate
    from .mcp_servers import McpServers
    from .options import CliOptions
    from .sessions import CliSessions

log = get_logger(__name__)

#: the start of a failed reply's ``error_message`` when the request did not fit (ProviderError's text)
OVERFLOW_PREFIX = "context_overflow"
MIN_WINDOW = 1_000


@dataclass
class SessionSetup:
    """What every session of one ``phi`` process is made with (see the module docstring)."""

    options: CliOptions
    gate: ApprovalGate
    mcp: McpServers | None = None
    compact_at: float = 0.85  # auto-compaction threshold, a fraction of the window (0: off)
    window_cap: int | None = None  # a smaller window than the profile's, learnt from an overflow
    mode_instructions: str | None = None  # plan mode's, at the prompt
    plan_mode: bool = False
    reasoning_effort: str | None = None  # ``--thinking``; at the prompt ``/thinking`` changes it
    compaction_notice: Callable[[int, int], None] | None = None  # told (tokens before, after) of each compaction

    @classmethod
    def for_options(cls, options: CliOptions, gate: ApprovalGate, mcp: McpServers | None = None) -> SessionSetup:
        return cls(options, gate, mcp, compact_at=options.compact_at, reasoning_effort=options.reasoning_effort())

    def context_window(self, profile: ProviderProfile) -> int:
        """The model's window, or the smaller one an overflow showed."""
        window = profile.context_window_size
        return min(window, self.window_cap) if self.window_cap else window

    def new_session(self, profile: ProviderProfile, sessions: CliSessions, *, carry: Session | None = None,
                    session_id: str | None = None) -> Session:
        """A coding session for ``profile``, recorded into ``sessions``; ``carry``: continue that
        one's conversation; ``session_id``: the id it is recorded under."""
        from ..coding import Session, SessionConfig
        from ..tools.environment import LocalExecutionEnvironment

        options = self.options
        if options.system_prompt:
            profile.base_instructions = options.system_prompt
        if self.mcp is not None:
            self.mcp.register(profile.tool_registry)
        # the instructions go in now: the prompt the session prepares first is then the first input's
        config = SessionConfig(approval=self.gate, reasoning_effort=self.reasoning_effort,
                               plan_mode=self.plan_mode, max_turns=options.max_turns,
                               sandbox=options.sandbox_policy(), user_instructions=self._user_instructions())
        session = Session(profile, LocalExecutionEnvironment(options.cwd), config)
        self.gate.unconfined = session.sandbox.unconfined
        if carry is not None:
            session.agent.restore(carry.agent.checkpoint())
            session.id = carry.id
        elif session_id is not None:
            session.id = session.agent.session_id = session_id
        sessions.attach_session(session)
        self.apply_mode(session)
        self.apply_compaction(session)
        return session

    def apply_mode(self, session: Session) -> None:
        """Plan mode and ``--append-system-prompt``: the session's user instructions."""
        session.config.plan_mode = self.plan_mode
        session.config.user_instructions = self._user_instructions()

    def _user_instructions(self) -> str | None:
        parts = [text for text in (self.mode_instructions, self.options.append_system_prompt) if text and text.strip()]
        return "\n\n".join(parts) or None

    def apply_compaction(self, session: Session) -> None:
        apply_auto_compaction(session, self.compact_at, self.context_window(session.profile), self.compaction_notice)

    def shrink_for_retry(self, session: Session, text: str) -> tuple[int, int] | None:
        """After an overflow the loop's own retry could not fix: compact ``session``'s conversation
        to a quarter (without the failed reply and the input ``text``, which is sent again), halve
        the window assumed from now on. ``(tokens before, after)``, or None when nothing is left to
        compact."""
        from ..context import ContextConfig, compact_messages
        from .render import context_estimate

        from ..providers.local_servers import window_from_error
        from ..types import AssistantMessage

        said = next((window for m in reversed(session.agent.messages[-3:]) if isinstance(m, AssistantMessage)
                     if (window := window_from_error(m.error_message)) is not None), None)
        messages = without_failed_input(session.agent.messages, text)
        if not messages:
            return None
        before = context_estimate(messages, "")
        budget = max(50, before // 4)
        compacted = compact_messages(messages, ContextConfig(max_context_tokens=budget + 1, system_prompt_tokens=0))
        session.agent.messages = compacted
        window = self.context_window(session.profile)
        # the server's window is smaller than phi was told: the one its error names, else half
        self.window_cap = said if said is not None and said < window else max(MIN_WINDOW * 4, window // 2)
        self.apply_compaction(session)
        return before, context_estimate(compacted, "")


def reserve_tokens(session: Session) -> int:
    """What the system prompt and the tool definitions take of the window (estimated)."""
    import json

    from ..context.tokens import estimate_tokens

    tools = [t.definition.to_json() if hasattr(t.definition, "to_json") else str(t.definition)
             for t in session.profile.tool_registry.tools()]
    return estimate_tokens(session.agent.system_prompt) + estimate_tokens(json.dumps(tools, default=str))


def auto_limit(window: int, threshold: float) -> int:
    return max(MIN_WINDOW, int(window * threshold))


class NoticedCompaction:
    """The loop's compaction (the library's incremental cascade, or the strategy given) that tells
    ``notice(before, after)`` — estimated tokens — each time it changes the conversation."""

    def __init__(self, notice: Callable[[int, int], None], inner: CompactionStrategy | None = None) -> None:
        if inner is None:
            from ..context.incremental import IncrementalCompaction

            inner = IncrementalCompaction()
        self.inner = inner
        self.notice = notice

    def compact(self, messages: list[AgentMessage], config: ContextConfig) -> list[AgentMessage]:
        given = list(messages)
        compacted = self.inner.compact(messages, config)
        if len(compacted) != len(given) or any(a is not b for a, b in zip(compacted, given)):
            from ..context.tokens import total_tokens

            try:
                self.notice(total_tokens(given, config.counter), total_tokens(compacted, config.counter))
            except Exception:  # telling must never stop the run
                log.debug("the compaction notice failed", exc_info=True)
        return compacted

    def __repr__(self) -> str:
        return f"NoticedCompaction({self.inner!r})"


def apply_auto_compaction(session: Session, threshold: float, window: int | None = None,
                          notice: Callable[[int, int], None] | None = None) -> None:
    """Compact before each call above ``threshold`` of the window (0: never; see the module
    docstring); ``notice(before, after)`` is told of each compaction that changed the conversation."""
    if threshold <= 0:
        session.agent.config.context_config = None
        return
    from ..context import ContextConfig

    limit = auto_limit(window or session.profile.context_window_size, threshold)
    reserve = min(reserve_tokens(session), limit // 2)
    session.agent.config.context_config = ContextConfig(max_context_tokens=limit, system_prompt_tokens=reserve)
    if notice is not None:
        current = session.agent.config.compaction_strategy
        inner = current.inner if isinstance(current, NoticedCompaction) else current
        session.agent.config.compaction_strategy = NoticedCompaction(notice, inner)


def without_failed_input(messages: Sequence[AgentMessage], text: str | None = None) -> list[AgentMessage]:
    """``messages`` without a trailing failed reply and the input it answered (``text``, when given,
    must be that input's text)."""
    from ..types import AssistantMessage, StopReason, UserMessage

    kept = list(messages)
    while kept and isinstance(kept[-1], AssistantMessage) and kept[-1].stop_reason == StopReason.ERROR:
        kept.pop()
    if kept and isinstance(kept[-1], UserMessage) and (text is None or kept[-1].text == text):
        kept.pop()
    return kept


def ends_in_unfit_input(messages: Sequence[AgentMessage]) -> bool:
    """The conversation ends with an input the model never answered because it did not fit: a user
    message followed by nothing but failed replies, the last one a context overflow."""
    from ..types import AssistantMessage, StopReason, UserMessage

    index = len(messages) - 1
    overflowed = False
    while index >= 0:
        message = messages[index]
        if not (isinstance(message, AssistantMessage) and message.stop_reason == StopReason.ERROR
                and not message.content):
            break
        overflowed = overflowed or (message.error_message or "").startswith(OVERFLOW_PREFIX)
        index -= 1
    return overflowed and index >= 0 and isinstance(messages[index], UserMessage)


def drop_unfit_input(session: Session) -> str | None:
    """Take an input that did not fit the model's context out of the conversation that goes on
    (see the module docstring); its text, shortened, when one was taken out."""
    agent = session.agent
    messages = agent.messages
    if not ends_in_unfit_input(messages):
        return None
    kept = without_failed_input(messages)
    dropped = messages[len(kept)]
    agent.messages = kept
    text = " ".join(getattr(dropped, "text", "").split())
    return text if len(text) <= 60 else text[:57] + "..."


__all__ = ["SessionSetup", "NoticedCompaction", "apply_auto_compaction", "auto_limit", "reserve_tokens", "MIN_WINDOW", "drop_unfit_input", "ends_in_unfit_input", "without_failed_input", "OVERFLOW_PREFIX"]
