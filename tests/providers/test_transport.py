"""Transport rules (issue 10 item 5; docs/providers.md "Transport"), for every provider against the
raw-socket server of conftest.py: compressed bodies, connection reuse, no cookies, no redirects,
stopping before the response headers, a total time bound per call, HTML sent with 200."""

from __future__ import annotations

import threading
import time

import pytest

from phi.providers.base import ErrorKind, ProviderError
from phi.types import StopReason

from .conftest import Reply
from .test_faults import PROVIDERS, _abort_after_first_event, sample_reply, start, stream

OK = (StopReason.STOP, StopReason.TOOL_USE)


@pytest.mark.parametrize("chunked", [True, False])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_gzip_body_is_decoded_chunked_or_not(server, provider, chunked) -> None:
    message, sink = stream(server, provider, sample_reply(provider, gzip=True, chunked=chunked))
    assert message.stop_reason in OK and message.content, message.error_message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_three_calls_use_one_connection(server, provider) -> None:
    """The body is read to its end (the chunked terminator after the final event), so the pooled
    connection is reused instead of a new one per call."""
    prov, config, sink, cancel = start(server, provider, sample_reply(provider))
    server.queue(sample_reply(provider), sample_reply(provider))
    for _ in range(3):
        assert prov.stream(config, sink, cancel).stop_reason in OK
    assert (len(server.requests), server.connections) == (3, 1)


def test_cookies_are_neither_kept_nor_sent(server) -> None:
    """One tenant's cookies must never travel with another's key: the session refuses cookies."""
    prov, config, sink, cancel = start(server, "openai", sample_reply("openai", headers={
        "Set-Cookie": "tenant=alice; Path=/"}))
    server.queue(sample_reply("openai"))
    prov.stream(config, sink, cancel)
    prov.stream(config, sink, cancel)
    assert [r.headers.get("cookie") for r in server.requests] == [None, None]


def test_providers_do_not_share_a_session(server) -> None:
    from phi.providers.registry import ProviderRegistry

    a, b = ProviderRegistry.default().get("openai_completions"), ProviderRegistry.default().get("openai_completions")
    assert a is not b and a.http.session is not b.http.session


def test_redirects_are_not_followed(server) -> None:
    """Following a redirect would resend x-api-key (and friends) wherever the server points."""
    reply = Reply(b"", status=307, content_type="text/plain", headers={"Location": server.url + "/elsewhere"})
    with pytest.raises(ProviderError) as info:
        stream(server, "anthropic", reply)
    assert info.value.kind == ErrorKind.API and "redirect" in info.value.message and len(server.requests) == 1


def _send_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "phi-http-send"]


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "google"])
def test_abort_before_headers_ends_the_helper_thread_and_its_connection(server, provider) -> None:
    """The in-flight connection is shut down, so neither the helper thread nor the connection
    outlive the abort (they used to wait for the read timeout)."""
    before = set(_send_threads())
    prov, config, sink, cancel = start(server, provider, Reply(silent_before_headers=True), read_timeout=30)
    result, latency = _abort_after_first_event(prov, config, sink, cancel, False)
    assert result["message"].stop_reason == StopReason.ABORTED and latency < 0.1
    deadline = time.monotonic() + 2
    while (set(_send_threads()) - before or not server.closed_by_client) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not set(_send_threads()) - before and server.closed_by_client


@pytest.mark.parametrize("provider", PROVIDERS)
def test_keepalive_comments_cannot_outlast_the_total_bound(server, provider) -> None:
    """A server that keeps a call alive (SSE comments; for Bedrock a frame trickling in byte by
    byte) is cut off at options["total_timeout"] with a retryable network error."""
    if provider == "bedrock":
        body = sample_reply(provider).body[:200]
        reply = Reply(body, content_type="application/vnd.amazon.eventstream", chunk_size=1, delay=0.02)
    else:
        reply = Reply(b": keep-alive\n\n" * 400, chunk_size=14, delay=0.02)
    prov, config, sink, cancel = start(server, provider, reply)
    config.model_config.options["total_timeout"] = 0.4
    began = time.monotonic()
    with pytest.raises(ProviderError) as info:
        prov.stream(config, sink, cancel)
    assert time.monotonic() - began < 2
    assert info.value.kind == ErrorKind.NETWORK and "total time bound of 0.4s" in info.value.message


def test_total_bound_applies_while_waiting_for_headers(server) -> None:
    prov, config, sink, cancel = start(server, "openai", Reply(silent_before_headers=True), read_timeout=30)
    config.model_config.options["total_timeout"] = 0.3
    began = time.monotonic()
    with pytest.raises(ProviderError) as info:
        prov.stream(config, sink, cancel)
    assert time.monotonic() - began < 2 and "total time bound" in info.value.message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_html_sent_with_200_is_an_api_error(server, provider) -> None:
    """A proxy or captive portal answering with a page is not a network blip: not retried."""
    page = b"<!DOCTYPE html><html><head><title>Sign in</title></head><body>Wi-Fi login</body></html>"
    with pytest.raises(ProviderError) as info:
        stream(server, provider, Reply(page, content_type="text/html; charset=utf-8"))
    assert info.value.kind == ErrorKind.API and not info.value.is_retryable()
    assert "HTML" in info.value.message and "Sign in" in info.value.message


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai_responses", "bedrock", "proxy"])
def test_a_body_that_never_ends_after_the_final_event_costs_only_the_drain_bound(server, provider) -> None:
    """Reading to the end is best effort: the complete message is returned, the connection is
    dropped after at most the drain bound (0.5 s), and the next call opens a new one."""
    prov, config, sink, cancel = start(server, provider, sample_reply(provider, hang_at_end=True), read_timeout=30)
    began = time.monotonic()
    message = prov.stream(config, sink, cancel)
    assert message.stop_reason in OK and time.monotonic() - began < 2
    server.queue(sample_reply(provider))
    assert prov.stream(config, sink, cancel).stop_reason in OK and server.connections == 2
