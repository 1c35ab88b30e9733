"""Keeping the conversation inside the model's context window (SPEC §15 CLI-13; SPEC CTX-2, ERR-4).

* **Automatically**: every session gets a :class:`~phi.context.ContextConfig` whose window is the
  ``--compact-at`` share of the model's (85 % by default; the status line says where). Before each
  model call the loop fits the messages into it with the library's compactor (tool outputs cut,
  old turns summarised, the middle dropped), and after a context-overflow error it compacts to a
  tighter budget and retries once. Each time that changes the conversation, a line says so, with
  the sizes before and after (:class:`NoticedCompaction`): a gauge that drops is never unexplained.
* **When that retry failed too** (the server's window is smaller than phi was told), the CLI
  compacts the conversation to a quarter of its size, assumes for the rest of the process the window
  the server's error names (``maximum context length is 4096 tokens``) or else half the one it
  assumed, and sends the input once more (:func:`recover_from_overflow`): an overflow is never a
  dead end.
* **On request**, ``/compact [FOCUS]`` (:func:`compact_now`) asks the model for a summary of the
  whole conversation — with FOCUS saying what matters most — and replaces the conversation with it.
  If that call fails, the mechanical compactor halves the conversation instead, and says so — or,
  when it cannot make it any smaller, leaves it as it is and says that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from ..errors import PhiError
from ..log import get_logger

if TYPE_CHECKING:
    from ..coding import ProviderProfile
    from ..types import AgentMessage, Usage
    from .repl_state import ReplState

log = get_logger(__name__)

SUMMARY_HEAD = "[Summary of the conversation so far, written by /compact]"
SUMMARY_SYSTEM = ("You condense a coding assistant's conversation so that the assistant can carry on from your "
                  "summary alone. Write plain text, no preamble.")
SUMMARY_REQUEST = ("Above is a conversation between a user and a coding assistant. Summarize it for the assistant "
                   "to continue the work: the user's goal and requests, decisions made, files read or changed "
                   "(paths, what they contain now), commands run and their results, errors still open, and the "
                   "next steps. Be specific: names, paths, numbers.")
TRANSCRIPT_TOOL_LINES = 20  # lines of each tool result kept in the transcript the summary is made from


def _estimate(messages: Sequence[AgentMessage], system_prompt: str = "") -> int:
    from .render import context_estimate

    return context_estimate(messages, system_prompt)


def recover_from_overflow(repl: ReplState, text: str) -> bool:
    """After a context overflow the loop's own retry could not fix: compact the conversation to a
    quarter and lower the window for this process (:meth:`SessionSetup.shrink_for_retry
    <phi.cli.session_setup.SessionSetup.shrink_for_retry>`, as in every mode), say so. False when
    there is nothing left to compact."""
    shrunk = repl.setup.shrink_for_retry(repl.session, text)
    if shrunk is None:
        return False
    before, after = shrunk
    repl.renderer.total.context_tokens = after
    repl.renderer.line(repl.style("yellow", f"! the conversation did not fit the model's context: compacted it "
                                            f"(~{before:,} → ~{after:,} tokens); trying once more"))
    return True


def transcript(messages: Sequence[AgentMessage]) -> str:
    """The conversation as plain text (tool results cut), for a summary request of any service."""
    from ..context import truncate_lines
    from ..types import AssistantMessage, ToolResultMessage, UserMessage

    parts: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            parts.append(f"USER: {message.text}")
        elif isinstance(message, AssistantMessage):
            calls = [f"[tool call {c.name} {c.arguments}]" for c in message.tool_calls]
            parts.append("ASSISTANT: " + "\n".join([message.text, *calls]).strip())
        elif isinstance(message, ToolResultMessage):
            marker = " (error)" if message.is_error else ""
            parts.append(f"TOOL RESULT {message.tool_name}{marker}: "
                         f"{truncate_lines(message.text, TRANSCRIPT_TOOL_LINES)}")
    return "\n\n".join(parts)


def _fit(text: str, tokens: int) -> str:
    """``text`` cut in the middle to about ``tokens`` tokens (four bytes each)."""
    limit = tokens * 4
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n\n[... {len(text) - 2 * half:,} characters left out ...]\n\n{text[-half:]}"


def summarize(profile: ProviderProfile, messages: Sequence[AgentMessage], focus: str) -> tuple[str, Usage]:
    """The model's summary of ``messages`` (one call, no tools); raises PhiError when it fails."""
    from ..agent.agent import Agent
    from ..coding.provider_options import resolve_provider

    request = f"{_fit(transcript(messages), int(profile.context_window_size * 0.6))}\n\n---\n{SUMMARY_REQUEST}"
    if focus:
        request += f" Focus on: {focus}"
    helper = Agent(model_config=profile.model_config, system_prompt=SUMMARY_SYSTEM,
                   provider=resolve_provider(profile.model_config, profile.provider))
    try:
        result = helper.run(request)
    finally:
        helper.close()
    if result.error or not result.text.strip():
        raise PhiError(f"the summary call failed: {result.error or 'an empty reply'}")
    return result.text.strip(), result.usage


def compact_now(repl: ReplState, focus: str) -> None:
    """``/compact [FOCUS]`` (see the module docstring)."""
    from ..types import UserMessage

    agent = repl.session.agent
    messages = list(agent.messages)
    if not messages:
        repl.renderer.line("nothing to compact yet")
        return
    before = _estimate(messages, agent.system_prompt)
    repl.renderer.line(repl.style("grey", f"compacting ~{before:,} tokens of conversation…"))
    try:
        summary, usage = summarize(repl.profile, messages, focus)
    except PhiError as error:
        from ..context import ContextConfig, compact_messages

        budget = max(50, before // 2)
        compacted = compact_messages(messages, ContextConfig(max_context_tokens=budget + 1, system_prompt_tokens=0))
        if _estimate(compacted, agent.system_prompt) >= before:  # nothing the compactor could cut
            repl.renderer.line(repl.style("yellow", f"! {error}; the conversation could not be cut mechanically "
                                                    f"either: it is unchanged (~{before:,} tokens)"))
            return
        how = f"{error}; cut mechanically instead"
    else:
        compacted = [UserMessage.from_text(f"{SUMMARY_HEAD}\n\n{summary}")]
        repl.renderer.add_usage(usage)
        how = "summarised by the model" + (f", focused on {focus}" if focus else "")
    agent.messages = compacted
    after = _estimate(compacted, agent.system_prompt)
    repl.renderer.total.context_tokens = after
    repl.renderer.line(f"compacted: ~{before:,} → ~{after:,} tokens ({how})")


__all__ = ["recover_from_overflow", "compact_now", "summarize", "transcript", "SUMMARY_HEAD"]
