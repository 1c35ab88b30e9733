"""End to end against a real LLM server nobody on the project wrote (issue 25 item 9):
llama-cpp-python's OpenAI-compatible server running SmolLM2-135M-Instruct on 127.0.0.1, started by
the ``local_llm`` fixture (tests/local_llm.py; built by scripts/install-local-llm, skipped with the
reason when absent). What a 135M model says is not checked — only that the protocol works: keyless
connection, live text deltas, a forced tool call parsed, run and answered, the server accepting the
turn after it, and an abort in the middle of a stream."""

from __future__ import annotations

import threading
import time

import pytest

from phi.agent import Agent
from phi.concurrency.cancel import CancellationToken
from phi.providers.base import StreamConfig
from phi.providers.model_config import ModelConfig
from phi.providers.registry import get_provider
from phi.providers.retry import RetryConfig
from phi.tools.function_tool import tool
from phi.types import StopReason, UserMessage

from local_llm import LocalLLM, local_llm  # noqa: F401  (the fixture)

from .conftest import Collector

pytestmark = pytest.mark.timeout(600)


def preset_model(server: LocalLLM, **options: object) -> ModelConfig:
    """The ``llamacpp`` preset (keyless, its compat flags), pointed at the fixture's port."""
    mc = ModelConfig.preset("llamacpp", server.model, max_tokens=48)
    return mc.with_(base_url=server.base_url, options={**mc.options, **options})


@tool
def get_weather(city: str) -> str:
    """Current weather for a city.

    Args:
        city: The city name.
    """
    return f"It is 18C and sunny in {city}."


@pytest.mark.parametrize("how", ["preset", "url"])
def test_keyless_connection_streams_text_deltas(local_llm, monkeypatch, how) -> None:  # noqa: F811
    """No key anywhere (and an OpenAI key in the environment is not needed nor sent): the reply
    arrives as several live text deltas and ends normally."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    mc = (preset_model(local_llm) if how == "preset"
          else ModelConfig.openai_compatible(local_llm.base_url, local_llm.model, max_tokens=48))
    sink = Collector()
    config = StreamConfig(mc, system_prompt="You are a helpful assistant.",
                          messages=[UserMessage.from_text("Say hello in five words.")], temperature=0.0)
    message = get_provider(mc).stream(config, sink, CancellationToken())
    assert message.stop_reason in (StopReason.STOP, StopReason.LENGTH), (message.error_message, local_llm.log_tail())
    deltas = [e.delta for e in sink.events if e.kind.value == "text_delta"]
    assert len(deltas) >= 3 and "".join(deltas) == message.text and message.text.strip()
    assert sink.kinds()[0] == "start" and sink.kinds()[-1] == "done"  # (this server streams no usage)


def test_forced_tool_call_is_run_answered_and_the_next_turn_accepted(local_llm) -> None:  # noqa: F811
    """``tool_choice`` names the tool: the model must call it; phi parses the call, runs the tool,
    sends the result (the call's server-made id is longer than Chat Completions' 40 characters, so
    it is mapped), and the server accepts that turn and answers it."""
    agent = Agent(model_config=preset_model(local_llm), tools=[get_weather], tool_choice="get_weather",
                  parallel_tool_calls=False, temperature=0.0, system_prompt="You are a helpful assistant.",
                  retry_config=RetryConfig.none())
    messages = agent.prompt("What is the weather in Paris?").result(300).messages
    roles = [m.role for m in messages]
    assert roles == ["user", "assistant", "toolResult", "assistant"], (roles, local_llm.log_tail())
    call = messages[1].tool_calls[0]
    assert messages[1].stop_reason == StopReason.TOOL_USE and call.name == "get_weather"
    assert isinstance(call.arguments.get("city"), str) and "18C" in messages[2].text
    final = messages[-1]
    assert final.stop_reason in (StopReason.STOP, StopReason.LENGTH), (final.error_message, local_llm.log_tail())
    assert not final.tool_calls  # after the results the choice is the server's again ("auto")


def test_abort_mid_stream_returns_at_once_and_the_server_goes_on(local_llm) -> None:  # noqa: F811
    """Cancelling after the first text delta returns an ``aborted`` reply with that text within a
    fraction of a second; the server then serves the next request normally."""
    mc = preset_model(local_llm).with_(max_tokens=400)
    provider = get_provider(mc)
    cancel = CancellationToken()
    first = threading.Event()
    cancelled_at: list[float] = []

    def on_event(event) -> None:
        if event.kind.value == "text_delta" and not first.is_set():
            first.set()
            cancelled_at.append(time.monotonic())
            cancel.cancel()

    config = StreamConfig(mc, messages=[UserMessage.from_text("Write a long story about a lighthouse keeper.")],
                          temperature=0.0)
    message = provider.stream(config, on_event, cancel)
    assert time.monotonic() - cancelled_at[0] < 0.5
    assert message.stop_reason == StopReason.ABORTED and message.text
    again = provider.stream(StreamConfig(mc.with_(max_tokens=16), messages=[UserMessage.from_text("Hi")]),
                            Collector(), CancellationToken())
    assert again.stop_reason in (StopReason.STOP, StopReason.LENGTH), (again.error_message, local_llm.log_tail())
