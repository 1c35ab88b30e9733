"""Provider fixes seen from where users meet them: an Agent talking to a local server on 127.0.0.1.

Each test runs a real Agent (real loop, real provider, real HTTP) and checks what ends up in the
events, the returned messages and the saved history.
"""

from __future__ import annotations

import json

from phi.agent import Agent
from phi.events import event_to_json
from phi.providers.model_config import ModelConfig
from phi.providers.retry import RetryConfig

from .conftest import Reply


def run_collecting(agent: Agent, text: str):
    stream = agent.prompt(text)
    events = [event_to_json(e) for e in stream]
    return events, stream.result(10).messages


def test_key_from_a_crlf_env_file_never_reaches_history_or_events(server) -> None:
    """Issue 10 item 1: "sk-...\\r\\n" is stripped when configured; a server that echoes the key
    (JSON-escaped) in its error leaves no trace of it in events or the saved history."""
    key = 'sk-agent"LEAK\\0123456789'
    echo = json.dumps({"error": {"message": f"Incorrect API key provided: {json.dumps(key)}"}}).encode()
    server.queue(Reply(echo, status=401, content_type="application/json"))
    mc = ModelConfig.openai("gpt-4.1", base_url=server.url + "/v1")
    agent = Agent(model_config=mc, api_key=key + "\r\n", retry_config=RetryConfig.none())
    events, messages = run_collecting(agent, "hi")
    assert messages[-1].stop_reason.value == "error" and "Incorrect API key" in messages[-1].error_message
    assert server.requests[0].headers["authorization"] == f"Bearer {key}"
    for text in (json.dumps(events), agent.save_messages(), repr(messages)):
        assert "LEAK" not in text, text


def test_reset_after_a_tool_block_start_is_retried_invisibly(server) -> None:
    """Issue 10 item 6: the provider and the loop use one visibility rule (EVT-7), so a connection
    reset after ``content_block_start(tool_use)`` and before any delta is retried and leaves no trace."""
    from .test_faults import ANTHROPIC_TOOL_START
    from .conftest import fixture_bytes

    first = Reply(ANTHROPIC_TOOL_START + b": pad\n\n" * 20, reset_after=len(ANTHROPIC_TOOL_START) + 4,
                  chunk_size=len(ANTHROPIC_TOOL_START))
    second = Reply(fixture_bytes("anthropic__thinking_signature_then_text.txt"))
    server.queue(first, second)
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url)
    agent = Agent(model_config=mc, retry_config=RetryConfig(initial_delay_ms=1, jitter=False))
    events, messages = run_collecting(agent, "hi")
    assert len(server.requests) == 2
    assert [m.role for m in messages] == ["user", "assistant"] and messages[-1].stop_reason.value == "stop"
    assert not messages[-1].tool_calls and messages[-1].text
    starts = [e for e in events if e["type"] == "MessageStart" and e["message"]["role"] == "assistant"]
    assert len(starts) == 1 and "toolu_1" not in json.dumps(events)


def test_429_with_retry_after_inf_is_retried(server) -> None:
    """Issue 10 item 4: a nonsensical Retry-After counts as absent (backoff applies); it used to
    raise OverflowError, and the 429 was not retried."""
    from .conftest import fixture_bytes

    server.queue(Reply(b'{"error":{"message":"slow"}}', status=429, content_type="application/json",
                       headers={"Retry-After": "inf"}),
                 Reply(fixture_bytes("anthropic__thinking_signature_then_text.txt")))
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url)
    agent = Agent(model_config=mc, retry_config=RetryConfig(initial_delay_ms=1, jitter=False))
    events, messages = run_collecting(agent, "hi")
    assert len(server.requests) == 2 and messages[-1].stop_reason.value == "stop"
