"""Issue 35 item 9a: a conversation summary survives a move to another service (SPEC PROV-5).

Anthropic's server-side compaction answers with a ``compaction`` block: the summary of everything
before it. phi keeps it as an opaque block, sent back verbatim to Anthropic only; a conversation
moved to another service must still carry the summary, as assistant text in that service's form,
at the place the block had. Both calls go over HTTP to a server on 127.0.0.1: the first answered
as Anthropic does, the second by the service the conversation moved to.
"""

from __future__ import annotations

import pytest

from phi.agent import Agent
from phi.providers.convert import SUMMARY_HEAD
from phi.providers.model_config import ModelConfig
from phi.providers.retry import RetryConfig

from .conftest import Reply
from .test_issue25 import COMPACTION_SUMMARY, _anthropic_with_unknown_blocks
from .wire_calls import model_for, reply

SUMMARY_TEXT = f"{SUMMARY_HEAD}\n{COMPACTION_SUMMARY}"


def _assistant_texts(api: str, body: dict) -> list[str]:
    """The assistant text the request carries, in order, read the way each service reads it."""
    if api == "anthropic":
        return [b["text"] for m in body["messages"] if m["role"] == "assistant" for b in m["content"]
                if b["type"] == "text"]
    if api == "openai":
        return [m["content"] for m in body["messages"] if m["role"] == "assistant"]
    if api in ("openai_responses", "azure_openai"):
        return [i["content"] for i in body["input"] if i.get("role") == "assistant"]
    if api in ("google", "google_vertex"):
        return [p["text"] for c in body["contents"] if c["role"] == "model" for p in c["parts"] if "text" in p]
    assert api == "bedrock"
    return [b["text"] for m in body["messages"] if m["role"] == "assistant" for b in m["content"] if "text" in b]


def _history_with_a_summary(server) -> str:
    """A conversation whose Anthropic reply opens with a compaction block, saved as JSON."""
    server.queue(Reply(_anthropic_with_unknown_blocks()))
    mc = ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url)
    agent = Agent(model_config=mc, retry_config=RetryConfig.none())
    assert agent.prompt("search").result(10).messages[-1].text == "Done."
    return agent.save_messages()


@pytest.mark.parametrize("api", ["openai", "openai_responses", "azure_openai", "google", "google_vertex", "bedrock",
                                 "anthropic-elsewhere"])
def test_the_summary_reaches_the_service_the_conversation_moved_to(server, api) -> None:
    saved = _history_with_a_summary(server)
    target = "anthropic" if api == "anthropic-elsewhere" else api
    mc = model_for(target, server.url)
    if api == "anthropic-elsewhere":  # the same protocol, another service: the block is not its own
        mc = mc.with_(provider="my-gateway")
    server.queue(reply(target, "Sure."))
    moved = Agent(model_config=mc, retry_config=RetryConfig.none())
    moved.restore_messages(saved)
    answer = moved.prompt("and?").result(10).messages[-1]
    assert answer.text == "Sure.", answer.error_message
    body = server.requests[-1].json()
    texts = _assistant_texts(target, body)
    # the summary, then the reply's own text, where the block was; none of the block's own fields
    assert texts and texts[0].startswith(SUMMARY_TEXT) and "Done." in "".join(texts)
    assert "Ek0KAgvEnc" not in server.requests[-1].body.decode()


def test_the_block_itself_still_goes_back_to_anthropic(server) -> None:
    """The same service gets the block verbatim, not the text (item 6 of issue 25 holds)."""
    saved = _history_with_a_summary(server)
    server.queue(reply("anthropic", "Sure."))
    again = Agent(model_config=ModelConfig.anthropic("claude-test", api_key="sk-ant-test", base_url=server.url),
                  retry_config=RetryConfig.none())
    again.restore_messages(saved)
    again.prompt("and?").result(10)
    body = server.requests[-1].json()
    assert body["messages"][1]["content"][0]["type"] == "compaction"
    assert SUMMARY_HEAD not in server.requests[-1].body.decode()
