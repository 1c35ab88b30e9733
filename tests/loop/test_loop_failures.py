"""Provider failures (retry, overflow) and tool failures (DESIGN §5 result texts)."""

from __future__ import annotations

import time

import pytest
from loop_helpers import call, check_announcements, run, text_of, text_tool, tool_turn

from phi.context.config import ContextConfig
from phi.errors import ToolError
from phi.providers.base import ProviderError
from phi.providers.mock import ScriptedProvider
from phi.providers.retry import RetryConfig
from phi.loop.tool_execution import TRUNCATED_CALL
from phi.types import StopReason, ToolResultMessage

FAST_RETRY = RetryConfig(max_retries=3, initial_delay_ms=1, max_delay_ms=5, jitter=False)


# --------------------------------------------------------------------------- retry


def test_rate_limit_with_retry_after_is_retried_then_succeeds():
    script = [{"error": {"kind": "rate_limited", "message": "slow down", "status": 429, "retry_after_ms": 80}},
              {"blocks": [{"type": "text", "chunks": ["fine"]}]}]
    started = time.monotonic()
    out = run(script, retry_config=FAST_RETRY)
    assert time.monotonic() - started >= 0.08  # Retry-After replaced the 1 ms backoff
    assert len(out.provider.calls) == 2
    assert [r.text for r in out.replies] == ["fine"]
    assert out.replies[0].stop_reason == StopReason.STOP
    assert len(out.of("MessageStart")) == 2  # the prompt and the one successful reply
    check_announcements(out)


class ClassifiedFailureProvider(ScriptedProvider):
    """Raises ProviderError.classify(status, body, headers) on the first call, then plays the script."""

    def __init__(self, status, headers, script):
        super().__init__(script)
        self.status, self.headers = status, headers
        self.failed = False

    def stream(self, config, on_event, cancel):
        if not self.failed:
            self.failed = True
            self.calls.append(config)
            raise ProviderError.classify(self.status, '{"error": {"message": "busy"}}', self.headers)
        return super().stream(config, on_event, cancel)


def test_http_429_retry_after_header_is_honoured():
    provider = ClassifiedFailureProvider(429, {"Retry-After": "0.05"}, ["ok"])
    started = time.monotonic()
    out = run(provider=provider, retry_config=FAST_RETRY)
    assert time.monotonic() - started >= 0.05
    assert [r.text for r in out.replies] == ["ok"] and len(provider.calls) == 2


def test_network_errors_are_retried_until_max_retries_then_end_as_error():
    errors = []
    script = [{"error": {"kind": "network", "message": f"reset {i}"}} for i in range(3)]
    out = run(script, retry_config=RetryConfig(max_retries=2, initial_delay_ms=1, jitter=False),
              on_error=errors.append)
    assert len(out.provider.calls) == 3
    reply = out.replies[-1]
    assert reply.stop_reason == StopReason.ERROR and reply.content == []
    assert "reset 2" in reply.error_message
    assert errors == [reply.error_message]
    assert out.types[-4:] == ["MessageStart", "MessageEnd", "TurnEnd", "AgentEnd"]


@pytest.mark.parametrize("kind", ["auth", "api", "other"])
def test_non_retryable_errors_are_not_retried(kind):
    out = run([{"error": {"kind": kind, "message": "nope"}}, "never"], retry_config=FAST_RETRY)
    assert len(out.provider.calls) == 1
    assert out.replies[-1].stop_reason == StopReason.ERROR


def test_failure_after_deltas_is_not_retried_and_keeps_partial_text():
    script = [{"blocks": [{"type": "text", "chunks": ["par", "tial", "never"]}],
               "error": {"kind": "rate_limited", "message": "cut off", "after_chunks": 2}}, "never"]
    errors = []
    out = run(script, retry_config=FAST_RETRY, on_error=errors.append)
    assert len(out.provider.calls) == 1
    reply = out.replies[-1]
    assert reply.stop_reason == StopReason.ERROR and reply.text == "partial"
    assert "cut off" in reply.error_message and errors
    updates = out.of("MessageUpdate")
    assert "".join(u.delta.delta for u in updates) == "partial"
    check_announcements(out)


# --------------------------------------------------------------------------- context overflow


class RecordingCompaction:
    def __init__(self):
        self.budgets = []

    def compact(self, messages, config):
        self.budgets.append(config.max_context_tokens)
        return list(messages)


def _overflow(message="prompt is too long: 200000 tokens > 100000 maximum"):
    return {"error": {"kind": "context_overflow", "message": message, "status": 400}}


def test_context_overflow_with_context_config_compacts_and_retries_once():
    strategy = RecordingCompaction()
    cfg = ContextConfig(max_context_tokens=10_000, system_prompt_tokens=100)
    out = run([_overflow(), "recovered"], context_config=cfg, compaction_strategy=strategy)
    assert len(out.provider.calls) == 2
    assert out.replies[-1].text == "recovered"
    assert len(strategy.budgets) == 2  # the regular pass, then the tighter one after the overflow
    assert strategy.budgets[1] < strategy.budgets[0]


def test_second_context_overflow_ends_as_error():
    cfg = ContextConfig(max_context_tokens=10_000, system_prompt_tokens=100)
    out = run([_overflow(), _overflow(), "never"], context_config=cfg, compaction_strategy=RecordingCompaction())
    assert len(out.provider.calls) == 2
    assert out.replies[-1].stop_reason == StopReason.ERROR
    assert "prompt is too long" in out.replies[-1].error_message


def test_context_overflow_without_context_config_is_an_error():
    out = run([_overflow(), "never"])
    assert len(out.provider.calls) == 1
    assert out.replies[-1].stop_reason == StopReason.ERROR


def test_overflow_reported_as_an_error_reply_is_recognised():
    script = [{"stop_reason": "error", "error_message": "This model's maximum context length is 8192 tokens"}, "ok"]
    cfg = ContextConfig(max_context_tokens=10_000, system_prompt_tokens=100)
    out = run(script, context_config=cfg, compaction_strategy=RecordingCompaction())
    assert len(out.provider.calls) == 2 and out.replies[-1].text == "ok"


def test_default_compaction_runs_with_a_context_config():
    cfg = ContextConfig(max_context_tokens=10_000, system_prompt_tokens=100)
    out = run([_overflow(), "recovered"], context_config=cfg)
    assert out.replies[-1].text == "recovered"


# --------------------------------------------------------------------------- length (max tokens)


def test_length_reply_with_tool_calls_answers_every_call_without_running_it():
    ran = []
    script = [tool_turn(call("t1", "echo", {"a": 1}), call("t2", "echo"), stop_reason="length"), "retried"]
    out = run(script, [text_tool("echo", lambda a, c: ran.append(1) or "x")])
    assert ran == []
    assert [(r.tool_call_id, text_of(r), r.is_error) for r in out.results] == [
        ("t1", TRUNCATED_CALL, True), ("t2", TRUNCATED_CALL, True)]
    assert out.of("ToolExecutionStart") == []
    assert len(out.provider.calls) == 2  # the loop continues
    assert out.replies[-1].text == "retried"
    turn_end = out.of("TurnEnd")[0]
    assert [r.tool_call_id for r in turn_end.tool_results] == ["t1", "t2"]


# --------------------------------------------------------------------------- tool failures


def _single_result(out) -> ToolResultMessage:
    (result,) = out.results
    end = out.of("ToolExecutionEnd")
    assert len(end) == 1 and end[0].is_error == result.is_error
    return result


def test_unknown_tool():
    out = run([tool_turn(call("t1", "missing")), "ok"], [text_tool("echo")])
    result = _single_result(out)
    assert text_of(result) == "Tool missing not found" and result.is_error
    assert out.of("ToolExecutionStart")[0].tool_name == "missing"


def test_invalid_arguments_never_reach_execute():
    ran = []
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    tool = text_tool("count", lambda a, c: ran.append(a) or "ok", schema=schema)
    out = run([tool_turn(call("t1", "count", {"n": "three"}), call("t2", "count", {})), "ok"], [tool])
    assert ran == []
    r1, r2 = out.results
    assert text_of(r1).startswith("Invalid arguments for tool count: n: ") and "integer" in text_of(r1)
    assert text_of(r2).startswith("Invalid arguments for tool count: ") and "'n' is a required property" in text_of(r2)
    assert r1.is_error and r2.is_error


def test_unparseable_streamed_arguments_are_invalid():
    script = [{"blocks": [{"type": "toolCall", "id": "t1", "name": "echo", "chunks": ['{"a": ', "oops"]}]}, "ok"]
    out = run(script, [text_tool("echo")])
    result = _single_result(out)
    assert text_of(result).startswith("Invalid arguments for tool echo: arguments are not valid JSON")


def test_tool_exception_becomes_an_error_result():
    def broken(args, ctx):
        raise KeyError("missing key")

    out = run([tool_turn(call("t1", "broken")), "ok"], [text_tool("broken", broken)])
    result = _single_result(out)
    assert text_of(result) == "Tool broken raised KeyError: 'missing key'" and result.is_error
    assert out.replies[-1].text == "ok"


def test_tool_error_message_is_the_result_text():
    def refuse(args, ctx):
        raise ToolError("file is read-only")

    out = run([tool_turn(call("t1", "refuse")), "ok"], [text_tool("refuse", refuse)])
    result = _single_result(out)
    assert text_of(result) == "file is read-only" and result.is_error


def _sleeper(seen):
    def fn(args, ctx):
        seen.append(ctx.cancel.wait(2))
        return "woke"

    return fn


def test_tool_timeout_from_config_default():
    seen = []
    started = time.monotonic()
    out = run([tool_turn(call("t1", "sleepy")), "ok"], [text_tool("sleepy", _sleeper(seen))], tool_timeout_ms=50)
    result = _single_result(out)
    assert text_of(result) == "Tool exceeded timeout of 50ms" and result.is_error
    assert time.monotonic() - started < 1.5
    deadline = time.monotonic() + 1
    while not seen and time.monotonic() < deadline:
        time.sleep(0.005)
    assert seen == [True]  # the abandoned tool's token was cancelled


def test_per_tool_timeout_overrides_config_default():
    seen = []
    tools = [text_tool("sleepy", _sleeper(seen), timeout_ms=40), text_tool("quick", lambda a, c: "quick")]
    out = run([tool_turn(call("t1", "sleepy"), call("t2", "quick")), "ok"], tools, tool_timeout_ms=5000)
    r1, r2 = out.results
    assert text_of(r1) == "Tool exceeded timeout of 40ms" and r1.is_error
    assert text_of(r2) == "quick" and not r2.is_error
    assert out.elapsed < 1.5
