"""The provider shell every HTTP wire protocol shares (phi/providers/http_provider.py): each built-in
provider is :class:`HttpStreamProvider` with its :class:`WireProtocol`, and a new protocol is a
configuration of the same shell, not a subclass."""

from __future__ import annotations

import json

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.providers import http_provider
from phi.providers.base import StreamConfig
from phi.providers.http import HttpRequest
from phi.providers.http_provider import HttpStreamProvider, WireProtocol
from phi.providers.model_config import ModelConfig
from phi.providers.proxy import ProxyParser
from phi.providers.registry import BUILTIN, ProviderRegistry
from phi.types import StopReason, UserMessage

from .conftest import Collector, Reply

# api -> (provider_id, the provider name replies carry when ModelConfig.provider is empty)
IDENTITY = {
    "anthropic_messages": ("anthropic", "anthropic"),
    "openai_completions": ("openai", "openai"),
    "openai_responses": ("openai_responses", "openai"),
    "azure_openai_responses": ("azure_openai", "openai"),
    "google_generative_ai": ("google", "google"),
    "google_vertex": ("google_vertex", "google_vertex"),
    "bedrock_converse_stream": ("bedrock", "bedrock"),
    "proxy": ("proxy", "proxy"),
}

MODELS = {
    "anthropic_messages": ModelConfig.anthropic(api_key="k"),
    "openai_completions": ModelConfig.openai(api_key="k"),
    "openai_responses": ModelConfig.openai_responses(api_key="k"),
    "azure_openai_responses": ModelConfig.azure_openai("dep", resource="res", api_key="k"),
    "google_generative_ai": ModelConfig.google(api_key="k"),
    "google_vertex": ModelConfig.vertex(project="p", access_token="k"),
    "bedrock_converse_stream": ModelConfig.bedrock(api_key="k"),
    "proxy": ModelConfig.proxy("https://proxy.test/stream", "m", token="k"),
}


def test_every_builtin_protocol_is_the_shared_shell_with_its_own_pool() -> None:
    assert set(IDENTITY) == set(BUILTIN)
    for api, (provider_id, _) in IDENTITY.items():
        first, second = ProviderRegistry.default().get(api), ProviderRegistry.default().get(api)
        assert isinstance(first, HttpStreamProvider) and first.provider_id == provider_id, api
        assert first.protocol is type(first).protocol and first.protocol.provider_id == provider_id
        assert first.http is not second.http


@pytest.mark.parametrize("api", sorted(IDENTITY))
def test_replies_name_the_service_when_the_model_config_names_none(api: str, monkeypatch) -> None:
    """The builder's provider name: ``ModelConfig.provider``, else the protocol's service."""
    seen: list[str] = []
    monkeypatch.setattr(http_provider, "run_stream",
                        lambda request, mc, cancel, parser, client, *_: seen.append(parser.builder.provider))
    provider = ProviderRegistry.default().get(api)
    for mc in (MODELS[api], MODELS[api].with_(provider="")):
        provider.stream(StreamConfig(mc, messages=[UserMessage.from_text("hi")]), Collector(), CancellationToken())
    assert seen == [MODELS[api].provider, IDENTITY[api][1]]


def test_a_new_protocol_is_a_configuration_of_the_shell(server) -> None:
    def build_request(config: StreamConfig) -> HttpRequest:
        body = json.dumps({"model": config.model_config.id}).encode()
        return HttpRequest(config.model_config.base_url + "/acme", {"content-type": "application/json"}, body)

    events = [{"type": "text_delta", "contentIndex": 0, "delta": "Hi"}, {"type": "done", "reason": "stop"}]
    server.queue(Reply("".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()))
    provider = HttpStreamProvider(WireProtocol("acme", build_request, lambda builder, mc: ProxyParser(builder)))
    mc = ModelConfig("acme-1", api="acme", provider="", base_url=server.url)
    message = provider.stream(StreamConfig(mc), Collector(), CancellationToken())
    assert provider.provider_id == "acme" and message.provider == "acme" and message.model == "acme-1"
    assert message.text == "Hi" and message.stop_reason == StopReason.STOP
    (recorded,) = server.requests
    assert recorded.path == "/acme" and recorded.json() == {"model": "acme-1"}
    assert provider.build_request(StreamConfig(mc)).url == server.url + "/acme"


def test_the_shell_without_a_protocol_is_refused() -> None:
    with pytest.raises(TypeError, match="needs a WireProtocol"):
        HttpStreamProvider()
