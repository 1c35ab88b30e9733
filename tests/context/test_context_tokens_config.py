"""Token estimates (SPEC §8.1) and ContextConfig / ExecutionLimits settings."""

from __future__ import annotations

import datetime

import pytest

from phi.context import (
    CallableTokenCounter,
    ContextConfig,
    ExecutionLimits,
    HeuristicTokenCounter,
    TokenCounter,
    compact_messages,
    content_tokens,
    estimate_tokens,
    image_tokens,
    message_tokens,
    total_tokens,
)
from phi.errors import ConfigError
from phi.types import (
    AssistantMessage,
    ExtensionMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)


@pytest.mark.parametrize(
    "text, expected",
    [("", 0), ("a", 1), ("abcd", 1), ("hello", 2), ("abcdefgh", 2), ("é", 1), ("日本", 2), ("x" * 401, 101)],
)
def test_estimate_tokens_is_ceil_of_utf8_bytes_over_four(text, expected):
    assert estimate_tokens(text) == expected


def test_image_tokens_are_clamped():
    assert image_tokens(ImageContent("", "image/png")) == 85
    # 100,000 base64 chars -> 75,000 raw bytes -> 100 tokens
    assert image_tokens(ImageContent("A" * 100_000, "image/png")) == 100
    assert image_tokens(ImageContent("A" * 100_000_000, "image/png")) == 16_000


def test_content_tokens_per_block_kind():
    call = ToolCall("id1", "read_file", {"path": "a.txt"})
    # compact JSON: {"path":"a.txt"} is 16 bytes -> 4 tokens; "read_file" 9 bytes -> 3 tokens
    assert content_tokens([call]) == 3 + 4
    assert content_tokens([TextContent("hello"), ThinkingContent("abcd")]) == 2 + 1
    assert content_tokens([ImageContent("", "image/png")]) == 85
    assert content_tokens([]) == 0


def test_message_overheads():
    assert message_tokens(UserMessage([TextContent("hello")])) == 2 + 4
    assert message_tokens(AssistantMessage([TextContent("hello")])) == 2 + 4
    assert message_tokens(ToolResultMessage("id", "t", [TextContent("hello")])) == 2 + 8
    assert message_tokens(ExtensionMessage("note", {"big": "x" * 1000})) == 0
    with pytest.raises(TypeError):
        message_tokens("not a message")  # type: ignore[arg-type]


def test_custom_counter_is_used_everywhere():
    class WordCounter:
        def count(self, text: str) -> int:
            return len(text.split())

    counter = WordCounter()
    assert isinstance(counter, TokenCounter)
    msg = UserMessage([TextContent("one two three four")])
    assert message_tokens(msg, counter) == 4 + 4
    assert total_tokens([msg, msg], counter) == 16

    config = ContextConfig(max_context_tokens=20, system_prompt_tokens=0, keep_recent=1, keep_first=0, token_counter=counter)
    long = [UserMessage([TextContent("w " * 10)]) for _ in range(5)]  # 14 tokens each by word count
    out = compact_messages(long, config)
    assert total_tokens(out, counter) <= 20
    assert out == [long[-1]]  # 14 word-tokens: nothing else (not even the marker) fits beside it
    # by the byte heuristic each message is only 9 tokens, so two of them fit
    heuristic = compact_messages(long, ContextConfig(max_context_tokens=20, system_prompt_tokens=0, keep_recent=1, keep_first=0))
    assert heuristic[-2:] == long[-2:]


def test_callable_counter_is_wrapped():
    config = ContextConfig(token_counter=len)
    assert isinstance(config.counter, CallableTokenCounter)
    assert config.counter.count("abc") == 3
    assert ContextConfig(token_counter=None).counter == HeuristicTokenCounter()
    with pytest.raises(ConfigError, match="token_counter"):
        ContextConfig(token_counter=42)  # type: ignore[arg-type]


def test_context_config_defaults_and_budget():
    config = ContextConfig()
    assert (config.max_context_tokens, config.system_prompt_tokens) == (100_000, 4_000)
    assert (config.keep_recent, config.keep_first, config.tool_output_max_lines) == (10, 2, 50)
    assert config.budget == 96_000
    assert isinstance(config.counter, HeuristicTokenCounter)
    tighter = config.with_budget(1_000)
    assert tighter.budget == 1_000 and tighter.keep_recent == 10 and config.budget == 96_000


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"max_context_tokens": 0}, "max_context_tokens"),
        ({"keep_recent": -1}, "keep_recent"),
        ({"keep_first": 1.5}, "keep_first"),
        ({"tool_output_max_lines": 0}, "tool_output_max_lines"),
        ({"max_context_tokens": 100, "system_prompt_tokens": 100}, "nothing would be left"),
        ({"system_prompt_tokens": True}, "system_prompt_tokens"),
    ],
)
def test_context_config_rejects_bad_values(kwargs, fragment):
    with pytest.raises(ConfigError, match=fragment):
        ContextConfig(**kwargs)


def test_execution_limits_defaults_and_validation():
    limits = ExecutionLimits()
    assert (limits.max_turns, limits.max_total_tokens, limits.max_duration) == (50, 1_000_000, 600.0)
    assert ExecutionLimits(max_duration=datetime.timedelta(minutes=2)).max_duration == 120.0
    assert ExecutionLimits.unlimited() == ExecutionLimits(None, None, None)
    for bad in ({"max_turns": 0}, {"max_total_tokens": -5}, {"max_duration": 0}, {"max_duration": "10"}):
        with pytest.raises(ConfigError):
            ExecutionLimits(**bad)
