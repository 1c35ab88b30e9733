"""Compaction levels, cascade and edge cases (SPEC §8.2; seed REQ-056–059, 146, 164)."""

from __future__ import annotations

import copy

import pytest

from phi.context import (
    OMISSION_PREFIX,
    SUMMARY_PREFIX,
    CompactionStrategy,
    ContextConfig,
    DefaultCompaction,
    compact_messages,
    compact_with,
    keep_within_budget,
    level1_truncate_tool_outputs,
    level2_summarize_old_turns,
    level3_drop_middle,
    message_groups,
    overflow_budget,
    total_tokens,
    truncate_lines,
)
from phi.errors import ConfigError
from phi.types import (
    AssistantMessage,
    ExtensionMessage,
    ImageContent,
    StopReason,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


def user(text: str) -> UserMessage:
    return UserMessage([TextContent(text)])


def turn(i: int, calls: int = 1, output: str = "result", text: str = "") -> list:
    """An assistant message with ``calls`` tool calls followed by their results."""
    blocks = ([TextContent(text)] if text else []) + [ToolCall(f"c{i}-{k}", "bash", {"cmd": f"ls {k}"}) for k in range(calls)]
    assistant = AssistantMessage(blocks, StopReason.TOOL_USE if calls else StopReason.STOP)
    results = [ToolResultMessage(f"c{i}-{k}", "bash", [TextContent(output)], is_error=(k == 1)) for k in range(calls)]
    return [assistant, *results]


def text_of(message) -> str:
    return "".join(b.text for b in message.content if isinstance(b, TextContent))


def config(budget: int, **kwargs) -> ContextConfig:
    return ContextConfig(max_context_tokens=budget, system_prompt_tokens=0, **kwargs)


# --------------------------------------------------------------------------- groups


def test_message_groups_keep_calls_with_results():
    messages = [user("q"), *turn(1, calls=2), ExtensionMessage("ui"), *turn(2, calls=0, text="done")]
    assert message_groups(messages) == [(0, 1), (1, 4), (4, 5), (5, 6)]


def test_message_groups_carry_interleaved_extension_messages():
    a, r1, r2 = turn(1, calls=2)
    messages = [a, r1, ExtensionMessage("progress"), r2, ExtensionMessage("after")]
    assert message_groups(messages) == [(0, 4), (4, 5)]


# --------------------------------------------------------------------------- level 1


def test_truncate_lines_200_to_50():
    text = "\n".join(f"line {i}" for i in range(200))
    out = truncate_lines(text, 50).split("\n")
    assert len(out) == 50
    assert out[:25] == [f"line {i}" for i in range(25)]
    assert out[25] == "[... 151 lines truncated ...]"
    assert out[26:] == [f"line {i}" for i in range(176, 200)]


@pytest.mark.parametrize("max_lines", [1, 2, 3, 10])
def test_truncate_lines_small_limits(max_lines):
    text = "\n".join(str(i) for i in range(20))
    out = truncate_lines(text, max_lines).split("\n")
    assert len(out) == max_lines
    assert sum(1 for line in out if "lines truncated" in line) == 1


def test_truncate_lines_exact_boundary_is_untouched():
    text = "\n".join(str(i) for i in range(50))
    assert truncate_lines(text, 50) == text
    with pytest.raises(ConfigError):
        truncate_lines(text, 0)


def test_level1_only_touches_tool_result_text():
    long = "\n".join(str(i) for i in range(100))
    image = ImageContent("AAAA", "image/png")
    messages = [
        user(long),
        AssistantMessage([TextContent(long), ToolCall("c1", "bash", {})], StopReason.TOOL_USE),
        ToolResultMessage("c1", "bash", [TextContent(long), image, TextContent("short")], is_error=True),
    ]
    out = level1_truncate_tool_outputs(messages, 10)
    assert out[0] is messages[0] and out[1] is messages[1]
    result = out[2]
    assert result.content[0].text.count("\n") == 9
    assert result.content[1] is image and result.content[2].text == "short"
    assert result.is_error and result.tool_call_id == "c1"
    assert messages[2].content[0].text == long  # input untouched


def test_level1_returns_same_objects_when_nothing_is_long():
    messages = [user("q"), *turn(1)]
    out = level1_truncate_tool_outputs(messages, 5)
    assert all(a is b for a, b in zip(out, messages))


# --------------------------------------------------------------------------- level 2


def test_level2_summarizes_old_groups_and_keeps_recent():
    old = turn(1, calls=2, output="x" * 400, text="Let me look around the repository first.")
    recent = turn(2, calls=1, output="y" * 400)
    messages = [user("task"), *old, user("next"), *recent]
    out = level2_summarize_old_turns(messages, keep_recent=3)
    assert out[0] is messages[0]
    assert isinstance(out[1], UserMessage)
    summary = text_of(out[1])
    assert summary.startswith(SUMMARY_PREFIX)
    assert "Let me look around the repository first." in summary
    assert "bash (ok), bash (error)" in summary and "\n" not in summary
    assert out[2:] == messages[4:]
    assert all(a is b for a, b in zip(out[2:], messages[4:]))


def test_level2_fewer_messages_than_keep_recent_is_noop():
    messages = [user("q"), *turn(1, output="z" * 500)]
    assert level2_summarize_old_turns(messages, keep_recent=10) == messages


def test_level2_boundary_inside_a_group_keeps_the_whole_group():
    messages = [user("q"), *turn(1, calls=3, output="z" * 300)]
    # keep_recent=2 would start at the 2nd tool result; the group is kept whole instead
    out = level2_summarize_old_turns(messages, keep_recent=2)
    assert out == messages


def test_level2_keeps_group_when_summary_would_be_larger():
    tiny = [AssistantMessage([TextContent("ok")])]
    messages = [user("q"), *tiny, user("again"), *turn(2), user("latest")]
    out = level2_summarize_old_turns(messages, keep_recent=0)
    assert out[1] is tiny[0]  # "ok" is cheaper than any summary
    assert text_of(out[3]).startswith(SUMMARY_PREFIX)


# --------------------------------------------------------------------------- level 3


def test_level3_orders_head_marker_tail():
    messages = [user(f"m{i}") for i in range(10)]
    out = level3_drop_middle(messages, keep_first=2, keep_recent=3)
    assert out[:2] == messages[:2]
    assert text_of(out[2]) == f"{OMISSION_PREFIX}5 messages omitted to fit the context window ...]"
    assert out[3:] == messages[7:]


@pytest.mark.parametrize("keep_first, keep_recent", [(5, 5), (10, 0), (9, 0), (0, 10), (8, 8), (3, 7)])
def test_level3_nothing_to_drop_is_noop(keep_first, keep_recent):
    messages = [user(f"m{i}") for i in range(10)]
    assert level3_drop_middle(messages, keep_first, keep_recent) == messages


def test_level3_zero_head_and_zero_tail():
    messages = [user(f"m{i}") for i in range(6)]
    out = level3_drop_middle(messages, keep_first=0, keep_recent=2)
    assert text_of(out[0]).startswith(OMISSION_PREFIX) and out[1:] == messages[4:]
    out = level3_drop_middle(messages, keep_first=2, keep_recent=0)
    # the newest message is never dropped, even with keep_recent=0
    assert out[:2] == messages[:2] and "3 messages" in text_of(out[2]) and out[3:] == messages[5:]


def test_newest_group_is_never_summarized():
    messages = [user("q"), *turn(1, output="x" * 400), *turn(2, calls=2, output="y" * 400)]
    out = level2_summarize_old_turns(messages, keep_recent=0)
    assert text_of(out[1]).startswith(SUMMARY_PREFIX)
    assert out[2:] == messages[3:]


def test_level3_widens_head_and_tail_to_whole_groups():
    messages = [user("task"), *turn(1, calls=2), *[user(f"m{i}") for i in range(5)], *turn(2, calls=3)]
    # head: [task, assistant] would split turn 1; tail of 2 would split turn 2
    out = level3_drop_middle(messages, keep_first=2, keep_recent=2)
    assert out[:4] == messages[:4]
    assert "5 messages" in text_of(out[4])
    assert out[5:] == messages[-4:]


# --------------------------------------------------------------------------- keep_within_budget


def test_keep_within_budget_keeps_newest_and_marker():
    messages = [user("x" * 40) for _ in range(10)]  # 14 tokens each; the marker costs 18
    assert keep_within_budget(messages, 60) == messages[-4:]  # 56 tokens: no room for the marker
    bigger = [user("x" * 80) for _ in range(10)]  # 24 tokens each
    out = keep_within_budget(bigger, 66)
    assert out[1:] == bigger[-2:]
    assert text_of(out[0]) == f"{OMISSION_PREFIX}8 messages omitted to fit the context window ...]"
    assert out[0].timestamp == bigger[0].timestamp
    assert total_tokens(out) == 66


def test_omission_marker_timestamp_is_deterministic_when_an_extension_message_is_dropped_first():
    """The marker takes the timestamp of the first dropped message that has one, so compacting the
    same history twice gives equal results (an extension message has no timestamp)."""
    messages = [user("task"), ExtensionMessage("ui"), *[UserMessage([TextContent("x" * 80)], timestamp=100 + i)
                                                       for i in range(10)]]  # 24 tokens each
    dropped = level3_drop_middle(messages, keep_first=1, keep_recent=3)
    assert text_of(dropped[1]).startswith(OMISSION_PREFIX) and dropped[1].timestamp == 100
    assert level3_drop_middle(messages, keep_first=1, keep_recent=3) == dropped
    kept = keep_within_budget(messages[1:], 66)  # two messages and the marker (18 tokens)
    assert text_of(kept[0]).startswith(OMISSION_PREFIX) and kept[0].timestamp == 100
    with_head = keep_within_budget(messages, 71, keep_first=1)
    assert text_of(with_head[1]).startswith(OMISSION_PREFIX) and with_head[1].timestamp == 100


def test_keep_within_budget_newest_group_too_big_is_returned_alone():
    messages = [user("small"), user("x" * 4000)]
    assert keep_within_budget(messages, 100) == [messages[1]]
    assert keep_within_budget([], 10) == []


def test_keep_within_budget_with_head():
    messages = [user("task"), *[user("x" * 40) for _ in range(10)]]
    out = keep_within_budget(messages, 60, keep_first=1)
    assert out[0] is messages[0]
    assert text_of(out[1]).startswith(OMISSION_PREFIX)
    assert out[-1] is messages[-1] and total_tokens(out) <= 60


# --------------------------------------------------------------------------- cascade


def long_history(turns: int = 20) -> list:
    messages = [user("Please refactor the project.")]
    for i in range(turns):
        messages += turn(i, calls=2, output="\n".join(f"{i} output line {k}" for k in range(120)), text=f"step {i}")
    return messages


def test_under_budget_is_unchanged():
    messages = long_history(2)
    total = total_tokens(messages)
    out = compact_messages(messages, config(total))  # exact boundary: total == budget
    assert out == messages and out is not messages
    assert all(a is b for a, b in zip(out, messages))


def test_one_token_over_budget_compacts():
    messages = long_history(2)
    total = total_tokens(messages)
    out = compact_messages(messages, config(total - 1))
    assert total_tokens(out) <= total - 1 and out != messages


def test_cascade_stops_at_level1_when_enough():
    messages = long_history(3)
    cfg = config(total_tokens(level1_truncate_tool_outputs(messages, 50)) + 5)
    out = compact_messages(messages, cfg)
    assert len(out) == len(messages)
    assert not any(text_of(m).startswith(SUMMARY_PREFIX) for m in out)
    assert "lines truncated" in text_of(out[2])


def test_cascade_reaches_level2():
    messages = long_history(6)
    l1 = level1_truncate_tool_outputs(messages, 50)
    l2 = level2_summarize_old_turns(l1, 10)
    out = compact_messages(messages, config(total_tokens(l2)))
    assert out == l2
    assert any(text_of(m).startswith(SUMMARY_PREFIX) for m in out)
    assert not any(text_of(m).startswith(OMISSION_PREFIX) for m in out)


def test_cascade_reaches_level3_and_fallback():
    messages = long_history(40)
    l1 = level1_truncate_tool_outputs(messages, 50)
    l3 = level3_drop_middle(level2_summarize_old_turns(l1, 10), 2, 10)
    out = compact_messages(messages, config(total_tokens(l3)))
    assert out == l3
    small = compact_messages(messages, config(600))
    assert total_tokens(small) <= 600
    assert small[0] is messages[0]  # keep_first head survives the fallback when it fits


def test_compaction_does_not_mutate_input():
    messages = long_history(10)
    snapshot = copy.deepcopy(messages)
    compact_messages(messages, config(500))
    assert messages == snapshot


def test_explicit_tighter_budget_and_validation():
    messages = long_history(10)
    cfg = config(100_000)
    assert compact_messages(messages, cfg) == messages
    assert total_tokens(compact_messages(messages, cfg, budget=800)) <= 800
    with pytest.raises(ConfigError):
        compact_messages(messages, cfg, budget=-1)
    with pytest.raises(ConfigError):
        compact_messages(messages, {"max_context_tokens": 5})  # type: ignore[arg-type]


def test_overflow_budget_is_tighter_than_current_and_configured():
    messages = long_history(5)
    cfg = config(100_000)
    tighter = overflow_budget(messages, cfg)
    assert tighter == total_tokens(messages) // 2
    assert overflow_budget(messages, config(1000)) == 500
    with pytest.raises(ConfigError):
        overflow_budget(messages, cfg, factor=1.5)


# --------------------------------------------------------------------------- strategies


def test_default_strategy_and_compact_with():
    messages = long_history(10)
    cfg = config(1500)
    assert isinstance(DefaultCompaction(), CompactionStrategy)
    assert DefaultCompaction().compact(messages, cfg) == compact_messages(messages, cfg)
    assert compact_with(None, messages, cfg, budget=700) == compact_messages(messages, cfg, 700)


def test_custom_strategy_sees_tighter_budget_and_may_return_empty():
    seen = []

    class Forget:
        def compact(self, messages, config):
            seen.append(config.budget)
            return []

    assert compact_with(Forget(), long_history(2), config(5000)) == []
    assert compact_with(Forget(), long_history(2), config(5000), budget=123) == []
    assert seen == [5000, 123]


def test_custom_strategy_returning_garbage_is_a_config_error():
    class Broken:
        def compact(self, messages, config):
            return None

    with pytest.raises(ConfigError, match="expected a list"):
        compact_with(Broken(), [user("q")], config(100))
