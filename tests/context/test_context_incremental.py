"""IncrementalCompaction gives exactly what compact_messages gives, turn after turn (issue 11).

A differential test: random histories grow turn by turn as the loop grows them (prompts, replies
with tool calls and their results, extension messages, steering), with the occasional edit the loop
does not make itself (a message replaced, a value-equal copy, the history cut back or replaced) and
the occasional tighter overflow budget. After every step the full recomputation
(``compact_messages``) and one IncrementalCompaction kept across the steps must return the same
messages — equal values, and the very same objects where the history's own messages are kept —
and the history becomes that result, as in the loop.

``PHI_HYPOTHESIS_EXAMPLES`` raises the example count (a third of it), as in the property tests; the
bench ``scripts/bench/long_run.py --check`` compares 2,000 turns through the loop.
"""

from __future__ import annotations

import copy
import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phi.context import ContextConfig, IncrementalCompaction, compact_messages, compact_with
from phi.types import (
    AssistantMessage,
    ExtensionMessage,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

EXAMPLES = int(os.environ.get("PHI_HYPOTHESIS_EXAMPLES", "300"))

texts = st.builds(lambda lines, width: "\n".join("w" * width for _ in range(lines)),
                  st.integers(0, 60), st.integers(0, 30))


class History:
    """Builds messages with increasing timestamps and unique tool-call ids."""

    def __init__(self) -> None:
        self.stamp = 0
        self.calls = 0

    def next_stamp(self) -> int:
        self.stamp += 1
        return self.stamp

    def user(self, text: str) -> UserMessage:
        return UserMessage([TextContent(text)], timestamp=self.next_stamp())

    def reply(self, text: str, calls: int, name: str = "bash") -> AssistantMessage:
        ids = [f"call{self.calls + k}" for k in range(calls)]
        self.calls += calls
        tool_calls = [ToolCall(i, name, {"cmd": i} if name == "bash" else {}) for i in ids]
        blocks = ([TextContent(text)] if text else []) + tool_calls
        return AssistantMessage(blocks, StopReason.TOOL_USE if calls else StopReason.STOP, timestamp=self.next_stamp())

    def result(self, call_id: str, text: str, error: bool = False) -> ToolResultMessage:
        return ToolResultMessage(call_id, "bash", [TextContent(text)], error, timestamp=self.next_stamp())


@st.composite
def turn(draw, history: History) -> list:
    """What one turn appends: a reply, maybe with tool calls, results and extension messages
    between them (sometimes a result is missing), or a user prompt, or an extension message."""
    kind = draw(st.sampled_from(["tools", "tools", "tools", "text", "user", "extension"]))
    if kind == "user":
        return [history.user(draw(texts))]
    if kind == "extension":
        return [ExtensionMessage("note", {"n": draw(st.integers(0, 3))})]
    calls = draw(st.integers(1, 3)) if kind == "tools" else 0
    # a tiny call ("x" with no arguments) makes a group whose summary is not smaller, so it is kept
    reply = history.reply(draw(texts) if draw(st.booleans()) else "", calls, draw(st.sampled_from(["bash", "x"])))
    out: list = [reply]
    for call in reply.tool_calls:
        if draw(st.integers(0, 5)) == 0:
            out.append(ExtensionMessage("progress", {}))
        if draw(st.integers(0, 7)) != 0:
            out.append(history.result(call.id, draw(texts), draw(st.booleans())))
    return out


def edit(draw, history: History, messages: list) -> list:
    """A change the loop does not make itself; the compaction must notice it."""
    kind = draw(st.sampled_from(["replace", "copy", "cut", "fresh"]))
    if kind == "replace" and messages:
        index = draw(st.integers(0, len(messages) - 1))
        return [*messages[:index], history.user(draw(texts)), *messages[index + 1 :]]
    if kind == "copy" and messages:  # equal values, other objects
        index = draw(st.integers(0, len(messages) - 1))
        return [*messages[:index], *copy.deepcopy(messages[index:])]
    if kind == "cut":
        return messages[: draw(st.integers(0, len(messages)))]
    return [history.user(draw(texts))]


def assert_same_result(got: list, expected: list, history: list) -> None:
    assert got == expected
    mine = {id(m) for m in history}
    # where the reference keeps a message of the history, the incremental path keeps that object
    assert [id(m) if id(m) in mine else None for m in got] == [id(m) if id(m) in mine else None for m in expected]


configs = st.builds(
    ContextConfig,
    max_context_tokens=st.integers(40, 3000),
    system_prompt_tokens=st.just(0),
    keep_recent=st.integers(0, 8),
    keep_first=st.integers(0, 3),
    tool_output_max_lines=st.integers(1, 20),
)


@settings(max_examples=max(50, EXAMPLES // 3), deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(configs, st.data())
def test_incremental_compaction_matches_full_recomputation_turn_after_turn(config, data):
    history = History()
    incremental = IncrementalCompaction()
    messages = [history.user(data.draw(texts))]
    for _ in range(data.draw(st.integers(1, 40))):
        step = data.draw(st.integers(0, 11))
        if step == 0:
            messages = edit(data.draw, history, messages)
        else:
            messages = messages + data.draw(turn(history))
        budget = data.draw(st.integers(1, config.budget)) if step == 1 else None  # an overflow retry
        expected = compact_messages(messages, config, budget)
        got = compact_with(incremental, messages, config, budget)
        assert_same_result(got, expected, messages)
        messages = got


def test_groups_before_an_extension_message_are_not_taken_as_settled():
    """A reply whose group is too small to summarise, answered only in part, then an extension
    message: a later result for a missing call joins the reply's group (the scan carries extension
    messages along), so a level-2 boundary at the extension message is not final."""
    history = History()
    config = ContextConfig(max_context_tokens=100, system_prompt_tokens=0, keep_recent=1, keep_first=0)
    old = history.reply("Looking around the repository first. " * 5, 1)
    small = AssistantMessage([ToolCall(f"s{i}", "x", {}) for i in range(3)], StopReason.TOOL_USE, timestamp=50)
    messages = [history.user("go"), old, history.result(old.tool_calls[0].id, "y" * 400), small,
                ToolResultMessage("s0", "x", [TextContent("")], False, timestamp=51), ExtensionMessage("note")]
    incremental = IncrementalCompaction()
    first = incremental.compact(messages, config)
    assert_same_result(first, compact_messages(messages, config), messages)
    assert first[2] is small  # kept: its summary would not be smaller
    answer = ToolResultMessage("s1", "x", [TextContent("z" * 40)], False, timestamp=52)
    messages = [*first, answer, history.user("w" * 300)]
    assert_same_result(incremental.compact(messages, config), compact_messages(messages, config), messages)


def test_a_long_run_keeps_results_identical_and_memory_bounded():
    """2,000 turns of a tool call with a 60-line output, as in scripts/bench/long_run.py."""
    history = History()
    config = ContextConfig(max_context_tokens=3_000, system_prompt_tokens=0, keep_recent=6, keep_first=2,
                           tool_output_max_lines=10)
    incremental = IncrementalCompaction()
    messages: list = [history.user("read every chunk")]
    levels = set()
    for n in range(2_000):
        reply = history.reply(f"chunk {n}", 1)
        messages = messages + [reply, history.result(reply.tool_calls[0].id, "\n".join(f"line {i}" for i in range(60)))]
        got = incremental.compact(messages, config)
        if n % 97 == 0:  # the full recomputation is slow by design: compare a sample of turns
            assert_same_result(got, compact_messages(messages, config), messages)
        levels.add(len(got) < len(messages) or got[-1] is not messages[-1])
        messages = got
        assert len(incremental._cost._known) <= 2 * len(messages) + 64 + 2
    assert levels == {True, False}  # some turns fit, some were compacted
    assert len(messages) < 200


def test_a_history_replaced_under_the_summary_boundary_is_summarised_again():
    """After level 2, the groups before its boundary are taken as settled; a history that differs
    there (here: the uncompacted original, as after a restore) must be summarised from scratch."""
    history = History()
    config = ContextConfig(max_context_tokens=1_500, system_prompt_tokens=0, keep_recent=4, tool_output_max_lines=10)
    incremental = IncrementalCompaction()
    original: list = [history.user("start")]
    messages = list(original)
    while incremental._summarized == 0:
        reply = history.reply("Reading the next part of the log. " * 3, 1)
        turn = [reply, history.result(reply.tool_calls[0].id, "\n".join(f"line {i}" for i in range(40)))]
        original += turn
        messages = incremental.compact(messages + turn, config)
    restored = [*original, history.user("again")]
    assert_same_result(incremental.compact(restored, config), compact_messages(restored, config), restored)


def test_settings_change_forgets_what_was_learnt():
    history = History()
    messages = [history.user("q")]
    for n in range(30):
        reply = history.reply("", 1)
        messages += [reply, history.result(reply.tool_calls[0].id, "\n".join("x" * 20 for _ in range(30)))]
    incremental = IncrementalCompaction()
    for config in (ContextConfig(max_context_tokens=900, system_prompt_tokens=0, tool_output_max_lines=20),
                   ContextConfig(max_context_tokens=900, system_prompt_tokens=0, tool_output_max_lines=3),
                   ContextConfig(max_context_tokens=900, system_prompt_tokens=0, token_counter=lambda text: len(text))):
        assert_same_result(incremental.compact(messages, config), compact_messages(messages, config), messages)
