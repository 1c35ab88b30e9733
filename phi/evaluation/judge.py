"""LlmJudgeEvaluation: a model picks the best branch (SPEC §13.3 EVAL-6; seed 000 REQ-201,
REQ-202, REQ-207..209).

The judge sees what a user would: the request and each branch's final answer — never tool calls,
tool results or intermediate turns. Its prompt, one user message::

    Prior conversation context:          (only when there was a conversation before the query)
    User: ... / Assistant: ... / Tool result (name): ...

    Original query:
    <the text of the prompts' user messages; in continue mode the last user message of the base>

    Response 1:
    <the final assistant text of the first successful branch>
    ...

    Which response answers the query best? Reply with the number of that response only (1 to N).

Only successful branches are judged (all of them when none succeeded); with a single candidate, or
after ``cancel``, no judge runs. The judge is an ordinary ``agent_loop`` run with ``judge_config``,
no tools, and the branches' agent and session ids, so its events reach the same sink and session.
When ``judge_config.context_config`` is set, the prompt is fitted into its budget
(:mod:`phi.evaluation.judge_prompt`); if it still does not fit, a ``ProgressMessage`` says so and the judge
runs anyway. The first integer of the judge's answer selects (1-based); no integer, or one out of
range, selects the first candidate and a ``ProgressMessage`` says why. Both messages are emitted
inside the judge's run (after its ``AgentStart``, before its ``AgentEnd``), with its loop id.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Sequence

from ..concurrency.cancel import CancellationToken
from ..context.tokens import USER_OVERHEAD
from ..events import AgentEnd, AgentEvent, ProgressMessage
from ..loop.config import AgentContext, AgentLoopConfig
from ..loop.run import agent_loop
from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    RunOutcome,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .judge_prompt import compact_for_judge
from .model import (
    EvaluationDecision,
    ParallelLoopOutcome,
    Sink,
    candidate_indices,
    final_text,
)

__all__ = ["DEFAULT_JUDGE_SYSTEM_PROMPT", "JUDGE_PROGRESS_NAME", "JudgeInput", "LlmJudgeEvaluation",
           "build_judge_prompt", "judge_input", "parse_choice", "transcript"]

DEFAULT_JUDGE_SYSTEM_PROMPT = (
    "You compare candidate answers to a user's request. Read the request and every numbered response, decide "
    "which one serves the user best (correct, complete, clear and to the point), and reply with the number of "
    "that response only."
)

JUDGE_PROGRESS_NAME = "llm_judge"  # the tool_name of the judge's ProgressMessages

_PRIOR_HEADER = "Prior conversation context:\n"
_INTEGER = re.compile(r"-?\d+")


@dataclass
class JudgeInput:
    """The texts the judge's prompt is made of."""

    prior: str
    query: str
    responses: list[str]


def _text_of(content: Sequence[Content]) -> str:
    return "\n".join(block.text for block in content if isinstance(block, TextContent))


def transcript(messages: Sequence[AgentMessage]) -> str:
    """A readable transcript: one paragraph per message with text (tool calls, images, thinking and
    extension messages left out)."""
    lines: list[str] = []
    for message in messages:
        if isinstance(message, UserMessage):
            label = "User"
        elif isinstance(message, AssistantMessage):
            label = "Assistant"
        elif isinstance(message, ToolResultMessage):
            label = f"Tool result ({message.tool_name})"
        else:
            continue
        text = _text_of(message.content)
        if text:
            lines.append(f"{label}: {text}")
    return "\n\n".join(lines)


def judge_input(prompts: Sequence[AgentMessage], outcomes: Sequence[ParallelLoopOutcome],
                indices: Sequence[int]) -> JudgeInput:
    """The prior conversation, the query and the responses of ``outcomes[i]`` for ``i`` in ``indices``.

    With prompts, the query is their user messages' text and the whole base context is prior
    conversation (REQ-201). Without (continue mode), the query is the base context's last user
    message and the prior conversation is what came before it (REQ-207).
    """
    base = outcomes[0].base_messages[: outcomes[0].original_context_len]
    if prompts:
        query = "\n".join(_text_of(m.content) for m in prompts if isinstance(m, UserMessage))
        prior = base
    else:
        users = [(i, m) for i, m in enumerate(base) if isinstance(m, UserMessage)]
        last, message = users[-1] if users else (len(base), None)
        query = _text_of(message.content) if message is not None else ""
        prior = base[:last]
    return JudgeInput(transcript(prior), query, [final_text(outcomes[i].new_messages) for i in indices])


def build_judge_prompt(query: str, responses: Sequence[str], prior: str = "") -> str:
    """The judge's user message (REQ-209): prior context (if any), the query, the numbered responses."""
    parts = [f"{_PRIOR_HEADER}{prior}"] if prior else []
    parts.append(f"Original query:\n{query}")
    parts.extend(f"Response {n}:\n{text}" for n, text in enumerate(responses, 1))
    parts.append(f"Which response answers the query best? Reply with the number of that response only "
                 f"(1 to {len(responses)}).")
    return "\n\n".join(parts)


def parse_choice(answer: str, count: int) -> tuple[int | None, str]:
    """The 0-based choice named by the first integer of ``answer`` (1-based there), or ``None`` and
    why not."""
    match = _INTEGER.search(answer)
    if match is None:
        return None, "the judge's answer has no number" + (f": {answer[:200]!r}" if answer else " (it is empty)")
    number = int(match.group())
    if not 1 <= number <= count:
        return None, f"the judge answered {number}, which is not a response number (1 to {count})"
    return number - 1, ""


@dataclass
class LlmJudgeEvaluation:
    """Ask a model which branch answered best. ``system_prompt`` replaces
    :data:`DEFAULT_JUDGE_SYSTEM_PROMPT`; ``judge_config.context_config`` sets the judge's budget."""

    judge_config: AgentLoopConfig
    system_prompt: str | None = None

    def evaluate(self, prompts: list[AgentMessage], outcomes: list[ParallelLoopOutcome], sink: Sink,
                 cancel: CancellationToken) -> tuple[EvaluationDecision, Usage]:
        pool = candidate_indices(outcomes)
        if not outcomes[pool[0]].succeeded:
            return EvaluationDecision.select(pool[0], "no branch succeeded; nothing to judge"), Usage()
        if len(pool) == 1:
            return EvaluationDecision.select(pool[0], "the only successful branch"), Usage()
        if cancel.is_cancelled():
            return EvaluationDecision.select(pool[0], "cancelled before the judge ran"), Usage()
        prompt, warning = self.prompt_for(judge_input(prompts, outcomes, pool))
        first = outcomes[0].context
        context = AgentContext(self.system_prompt if self.system_prompt is not None else DEFAULT_JUDGE_SYSTEM_PROMPT,
                               [], (), first.agent_id, first.session_id)
        judge_sink = _JudgeSink(sink, [warning] if warning else [], lambda end: self.choose(end, pool))
        agent_loop([UserMessage.from_text(prompt)], context, self.judge_config, judge_sink, cancel)
        decision = judge_sink.decision or EvaluationDecision.select(pool[0], "the judge's run did not end")
        return decision, judge_sink.usage

    def prompt_for(self, material: JudgeInput) -> tuple[str, str | None]:
        """The judge's prompt, fitted into the budget of ``judge_config.context_config`` if it has one;
        and a warning when it does not fit even after compaction (REQ-202, REQ-208)."""
        config = self.judge_config.context_config
        if config is None:
            return build_judge_prompt(material.query, material.responses, material.prior), None
        count = config.counter.count
        budget = config.budget - USER_OVERHEAD
        scaffold = count(build_judge_prompt(material.query, [""] * len(material.responses)))
        scaffold += count(_PRIOR_HEADER + "\n\n") if material.prior else 0
        prior, responses, _ = compact_for_judge(material.prior, material.responses, budget - scaffold, count)
        prompt = build_judge_prompt(material.query, responses, prior)
        needed = count(prompt)
        if needed <= budget:
            return prompt, None
        return prompt, (f"the judge's prompt needs about {needed} tokens, more than its budget of {budget}, even "
                        f"with the prior conversation and the {len(responses)} responses compacted; judging anyway")

    def choose(self, end: AgentEnd, pool: Sequence[int]) -> tuple[EvaluationDecision, str | None]:
        """The decision the judge's run ended with, and a warning if it falls back to ``pool[0]``."""
        reply = next((m for m in reversed(end.messages) if isinstance(m, AssistantMessage)), None)
        answer = final_text(end.messages)
        choice, problem = parse_choice(answer, len(pool))
        if choice is not None:
            return EvaluationDecision.select(pool[choice], f"the judge chose response {choice + 1}"), None
        if reply is not None and reply.error_message:
            problem = f"the judge's run failed: {reply.error_message}"
        elif end.outcome != RunOutcome.COMPLETED:
            problem = f"the judge's run ended {end.outcome.value}"
        fallback = f"{problem}; selecting the first successful branch (config {pool[0]})"
        return EvaluationDecision.select(pool[0], fallback), fallback


class _JudgeSink:
    """Forwards the judge's events; emits its warnings inside its run and decides at its AgentEnd."""

    def __init__(self, emit: Sink, warnings: list[str],
                 choose: Callable[[AgentEnd], tuple[EvaluationDecision, str | None]]) -> None:
        self.emit = emit
        self.warnings = warnings
        self.choose = choose
        self.decision: EvaluationDecision | None = None
        self.usage = Usage()

    def __call__(self, event: AgentEvent) -> None:
        if event.type == "AgentEnd":
            self.flush(event.loop_id)  # a before_loop veto ends the run without an AgentStart
            self.usage = event.usage
            self.decision, warning = self.choose(event)
            if warning:
                self.emit(ProgressMessage(event.loop_id, "", JUDGE_PROGRESS_NAME, f"LLM judge: {warning}"))
        self.emit(event)
        if event.type == "AgentStart":
            self.flush(event.loop_id)

    def flush(self, loop_id: str) -> None:
        while self.warnings:
            self.emit(ProgressMessage(loop_id, "", JUDGE_PROGRESS_NAME, f"LLM judge: {self.warnings.pop(0)}"))
