"""Issue 36: a run over every HTTP provider leaves no reference cycle — completed, failed with an
HTTP error, or retried then completed — so its Agent goes by reference counting once dropped.

A stream parser that kept a table of its own bound methods, or a frame that kept the error its own
traceback holds, made every such run wait for the cyclic collector with its whole history.
"""

from __future__ import annotations

import gc
import time
import weakref
import pytest

from phi import Agent
from phi.providers.retry import RetryConfig

from .conftest import Reply
from .test_faults import SAMPLES, proxy_body
from .test_recordings import model_for, reply_for

# a text reply per provider (the faults' openai sample calls a tool: the run would go on)
TEXT = {**SAMPLES, "openai": "openai_chat__text_usage_chunk_then_moderation_chunk.txt"}


def _gone(ref: weakref.ref[Agent]) -> bool:
    deadline = time.monotonic() + 30  # the helper thread that sent the request lets go as it ends
    while ref() is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    return ref() is None


def _agent(server, provider: str, retries: bool) -> Agent:
    if provider == "proxy":
        from phi.providers.model_config import ModelConfig

        mc = ModelConfig.proxy(server.url + "/stream", "m", token="proxy-token")
    else:
        mc = model_for(TEXT[provider], server.url)
    return Agent(model_config=mc, retry_config=RetryConfig(initial_delay_ms=1, jitter=False) if retries
                 else RetryConfig.none())


def _reply(provider: str) -> Reply:
    return Reply(proxy_body()) if provider == "proxy" else reply_for(TEXT[provider], 4096)


@pytest.mark.parametrize("provider", sorted(TEXT))
def test_a_completed_run_is_freed_without_the_collector(server, provider: str, no_collector: None) -> None:
    server.queue(_reply(provider))
    agent = _agent(server, provider, retries=False)
    assert agent.run("hi").outcome.value == "completed"
    ref = weakref.ref(agent)
    del agent
    assert _gone(ref)


@pytest.mark.parametrize("status", [401, 429])
def test_a_failed_or_retried_call_is_freed_without_the_collector(server, status: int, no_collector: None) -> None:
    error = Reply(b'{"error": {"message": "no"}}', status=status, content_type="application/json")
    server.queue(error, *([_reply("openai")] if status == 429 else []))
    agent = _agent(server, "openai", retries=status == 429)
    assert agent.run("hi").outcome.value == ("completed" if status == 429 else "error")
    ref = weakref.ref(agent)
    del agent
    assert _gone(ref)
