"""Fault tests for every provider: HTTP errors, resets, truncation, bad JSON, silence, abort.

Policy under test (docs/providers.md "Failures"): a failure before anything reached the consumer
raises ProviderError; after that the partial message is returned with stopReason ``error``;
a cancelled stream returns stopReason ``aborted`` within 100 ms. Nothing hangs.
"""

from __future__ import annotations

import threading
import time

import pytest

from phi.concurrency.cancel import CancellationToken
from phi.providers.base import ErrorKind, ProviderError, StreamConfig
from phi.providers.eventstream import encode_message
from phi.providers.registry import get_provider
from phi.types import StopReason, UserMessage

from .conftest import Collector, Reply
from .test_recordings import model_for, reply_for

SAMPLES = {
    "anthropic": "anthropic__thinking_signature_then_text.txt",
    "openai": "openai_chat__tool_call_streamed_args.txt",
    "openai_responses": "openai_responses__text.txt",
    "azure_openai": "azure_responses__text.jsonl",
    "google": "gemini__thought_summaries_then_text.txt",
    "google_vertex": "vertex__thought_summaries_then_text.txt",
    "bedrock": "bedrock__text_nova.bin",
    "proxy": "(synthetic)",
}


def proxy_body() -> bytes:
    """A proxy stream (the proxy has no public recordings; its format is phi's own, see proxy.py)."""
    import json

    events = [{"type": "start"}, {"type": "text_start", "contentIndex": 0}]
    events += [{"type": "text_delta", "contentIndex": 0, "delta": f"word{i} "} for i in range(40)]
    events += [{"type": "done", "reason": "stop", "usage": {"input": 1, "output": 40}}]
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()
PROVIDERS = sorted(SAMPLES)


def start(server, provider: str, reply: Reply, read_timeout: float = 5.0, cancel: CancellationToken | None = None):
    name = SAMPLES[provider]
    server.queue(reply)
    if provider == "proxy":
        from phi.providers.model_config import ModelConfig

        mc = ModelConfig.proxy(server.url + "/stream", "m", token="proxy-token")
    else:
        mc = model_for(name, server.url)
    mc.options["read_timeout"] = read_timeout
    mc.options["connect_timeout"] = 2.0
    sink = Collector()
    config = StreamConfig(mc, messages=[UserMessage.from_text("hi")])
    return get_provider(mc), config, sink, cancel or CancellationToken()


def stream(server, provider: str, reply: Reply, **kwargs):
    prov, config, sink, cancel = start(server, provider, reply, **kwargs)
    return prov.stream(config, sink, cancel), sink


def sample_reply(provider: str, **changes) -> Reply:
    reply = Reply(proxy_body()) if provider == "proxy" else reply_for(SAMPLES[provider], 4096)
    for key, value in changes.items():
        setattr(reply, key, value)
    return reply


def deltas_seen(sink: Collector) -> bool:
    return any(k not in ("start",) for k in sink.kinds())


STATUS_KINDS = [(400, ErrorKind.API), (401, ErrorKind.AUTH), (403, ErrorKind.AUTH), (404, ErrorKind.API),
                (413, ErrorKind.API), (429, ErrorKind.RATE_LIMITED), (500, ErrorKind.NETWORK),
                (503, ErrorKind.NETWORK), (529, ErrorKind.NETWORK)]


@pytest.mark.parametrize("status,kind", STATUS_KINDS)
@pytest.mark.parametrize("provider", PROVIDERS)
def test_http_errors_are_classified_with_body_and_retry_after(server, provider, status, kind) -> None:
    body = b'{"error": {"type": "x", "message": "boom %d"}}' % status
    reply = Reply(body, status=status, content_type="application/json", headers={"Retry-After": "7"})
    with pytest.raises(ProviderError) as info:
        stream(server, provider, reply)
    error = info.value
    assert (error.kind, error.status, error.message) == (kind, status, f"boom {status}")
    assert error.retry_after_ms == 7000 and "boom" in (error.body or "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_context_overflow_is_recognised(server, provider) -> None:
    body = b'{"error": {"message": "prompt is too long: 250000 tokens > 200000 maximum"}}'
    with pytest.raises(ProviderError) as info:
        stream(server, provider, Reply(body, status=400, content_type="application/json"))
    assert info.value.kind == ErrorKind.CONTEXT_OVERFLOW


@pytest.mark.parametrize("provider", PROVIDERS)
def test_reset_before_response_raises_network(server, provider) -> None:
    with pytest.raises(ProviderError) as info:
        stream(server, provider, Reply(reset_before=True))
    assert info.value.kind == ErrorKind.NETWORK


@pytest.mark.parametrize("mode", ["reset_after", "truncate_after"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_cut_short_keeps_partial_or_raises(server, provider, mode) -> None:
    reply = sample_reply(provider, chunk_size=64)
    setattr(reply, mode, len(reply.body) * 6 // 10)
    try:
        message, sink = stream(server, provider, reply)
    except ProviderError as error:  # nothing had reached the consumer yet
        assert error.kind == ErrorKind.NETWORK
        return
    assert message.stop_reason == StopReason.ERROR and message.error_message
    assert message.content, "the partial content is kept"
    assert sink.kinds()[-1] == "error"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_stream_without_terminal_event(server, provider) -> None:
    """A clean end of body that never delivered the final event is an error, not a success."""
    reply = sample_reply(provider)
    reply.body = reply.body[: len(reply.body) * 6 // 10]
    if provider == "bedrock":  # cut at a frame boundary so only the terminal frames are missing
        from phi.providers.eventstream import EventStreamDecoder

        frames = EventStreamDecoder().feed(reply_for(SAMPLES[provider], 4096).body)
        reply.body = b"".join(encode_message(f.headers, f.payload) for f in frames[:-3])
    if provider == "proxy":
        reply.body = proxy_body()[:-60]
    try:
        message, _ = stream(server, provider, reply)
    except ProviderError as error:
        assert error.kind == ErrorKind.NETWORK and "ended" in error.message
        return
    assert message.stop_reason == StopReason.ERROR and "ended" in (message.error_message or "")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_invalid_json_event(server, provider) -> None:
    if provider == "bedrock":
        body = encode_message({":message-type": "event", ":event-type": "messageStart"}, b"{not json")
        reply = Reply(body, content_type="application/vnd.amazon.eventstream")
    else:
        reply = Reply(b"data: {not json\n\n")
    with pytest.raises(ProviderError) as info:
        stream(server, provider, reply)
    assert info.value.kind == ErrorKind.API and "invalid JSON" in info.value.message


def test_bedrock_crc_mismatch_is_an_api_error(server) -> None:
    body = bytearray(reply_for(SAMPLES["bedrock"], 4096).body)
    body[20] ^= 0xFF
    with pytest.raises(ProviderError) as info:
        stream(server, "bedrock", Reply(bytes(body), content_type="application/vnd.amazon.eventstream"))
    assert info.value.kind == ErrorKind.API and "CRC" in info.value.message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_silent_server_hits_read_timeout(server, provider) -> None:
    reply = sample_reply(provider, chunk_size=64)
    reply.silent_after = len(reply.body) * 6 // 10
    began = time.monotonic()
    try:
        message, sink = stream(server, provider, reply, read_timeout=0.3)
    except ProviderError as error:
        assert error.kind == ErrorKind.NETWORK and "timeout" in error.message
    else:
        assert message.stop_reason == StopReason.ERROR and "read timeout" in (message.error_message or "")
    assert time.monotonic() - began < 3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_silent_before_headers_hits_read_timeout(server, provider) -> None:
    with pytest.raises(ProviderError) as info:
        stream(server, provider, Reply(silent_before_headers=True), read_timeout=0.3)
    assert info.value.kind == ErrorKind.NETWORK and "0.3s" in info.value.message


def _abort_after_first_event(prov, config, sink, cancel, wait_for_events: bool):
    result: dict = {}

    def target() -> None:
        try:
            result["message"] = prov.stream(config, sink, cancel)
        except BaseException as exc:  # surfaced by the assertions below
            result["error"] = exc
        result["done"] = time.monotonic()

    worker = threading.Thread(target=target, daemon=True)
    worker.start()
    deadline = time.monotonic() + 3
    while wait_for_events and not sink.events and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.05)
    cancelled_at = time.monotonic()
    cancel.cancel()
    worker.join(2)
    assert not worker.is_alive(), "stream() did not return after cancel"
    return result, result["done"] - cancelled_at


@pytest.mark.parametrize("provider", PROVIDERS)
def test_abort_mid_stream_returns_within_100ms(server, provider) -> None:
    reply = sample_reply(provider, chunk_size=64)
    reply.silent_after = len(reply.body) * 6 // 10
    prov, config, sink, cancel = start(server, provider, reply, read_timeout=30)
    result, latency = _abort_after_first_event(prov, config, sink, cancel, True)
    assert "error" not in result, result.get("error")
    assert result["message"].stop_reason == StopReason.ABORTED
    assert latency < 0.1
    assert sink.kinds()[-1] == "error"


@pytest.mark.parametrize("provider", PROVIDERS)
def test_abort_before_headers_returns_within_100ms(server, provider) -> None:
    prov, config, sink, cancel = start(server, provider, Reply(silent_before_headers=True), read_timeout=30)
    result, latency = _abort_after_first_event(prov, config, sink, cancel, False)
    assert result["message"].stop_reason == StopReason.ABORTED and latency < 0.1


def test_already_cancelled_token_sends_nothing(server) -> None:
    prov, config, sink, cancel = start(server, "anthropic", Reply())
    cancel.cancel()
    message = prov.stream(config, sink, cancel)
    assert message.stop_reason == StopReason.ABORTED and server.requests == []


def test_anthropic_mid_stream_overloaded_error(server) -> None:
    head = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c","usage":'
            b'{"input_tokens":5,"output_tokens":1}}}\n\n')
    text = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":'
            b'{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: {"type":"content_block_delta",'
            b'"index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n')
    error = b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    with pytest.raises(ProviderError) as info:  # nothing streamed yet: raised, retryable
        stream(server, "anthropic", Reply(head + error))
    assert info.value.kind == ErrorKind.NETWORK and info.value.is_retryable() and info.value.status == 529
    message, _ = stream(server, "anthropic", Reply(head + text + error))  # after a delta: partial kept
    assert message.stop_reason == StopReason.ERROR and message.text == "Hel"
    assert message.error_message == "Overloaded"


def test_bedrock_exception_frame(server) -> None:
    frames = encode_message({":message-type": "event", ":event-type": "messageStart"}, b'{"role":"assistant"}')
    frames += encode_message({":message-type": "exception", ":exception-type": "throttlingException"},
                             b'{"message":"Too many requests"}')
    with pytest.raises(ProviderError) as info:
        stream(server, "bedrock", Reply(frames, content_type="application/vnd.amazon.eventstream"))
    assert info.value.kind == ErrorKind.RATE_LIMITED and "Too many requests" in info.value.message


def test_secrets_never_appear_in_errors(server) -> None:
    body = b'{"error": {"message": "bad key sk-ant-test given"}}'
    with pytest.raises(ProviderError) as info:
        stream(server, "anthropic", Reply(body, status=401, content_type="application/json"))
    assert "sk-ant-test" not in str(info.value) and "sk-ant-test" not in (info.value.body or "")
    assert "sk-ant-test" not in repr(model_for(SAMPLES["anthropic"], server.url))


def test_consumer_exceptions_propagate_unchanged(server) -> None:
    prov, config, sink, cancel = start(server, "openai", sample_reply("openai"))

    def explode(event) -> None:
        raise RuntimeError("consumer bug")

    with pytest.raises(RuntimeError, match="consumer bug"):
        prov.stream(config, explode, cancel)


def test_missing_api_key_is_an_auth_error(monkeypatch) -> None:
    from phi.providers.model_config import ModelConfig

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    mc = ModelConfig.anthropic("claude", base_url="http://127.0.0.1:9")
    with pytest.raises(ProviderError) as info:
        get_provider(mc).stream(StreamConfig(mc), Collector(), CancellationToken())
    assert info.value.kind == ErrorKind.AUTH and "ANTHROPIC_API_KEY" in info.value.message


@pytest.mark.parametrize("provider", PROVIDERS)
def test_events_are_live_while_the_body_is_still_arriving(server, provider) -> None:
    """The first delta reaches the consumer while the server is still holding back the rest."""
    reply = sample_reply(provider)
    reply.chunk_size = len(reply.body) * 7 // 10
    reply.delay = 0.4  # pause between the two halves
    prov, config, sink, cancel = start(server, provider, reply)
    first: list[float] = []

    def on_event(event) -> None:
        if not first and event.kind.value not in ("start",):
            first.append(time.monotonic())
        sink(event)

    began = time.monotonic()
    message = prov.stream(config, on_event, cancel)
    ended = time.monotonic()
    assert message.stop_reason in (StopReason.STOP, StopReason.TOOL_USE)
    assert first and first[0] - began < 0.3 and ended - began >= 0.4


@pytest.mark.parametrize("provider", PROVIDERS)
def test_cancel_from_inside_the_consumer_stops_events_at_once(server, provider) -> None:
    """A consumer that aborts on its first delta sees no further deltas, and gets ``aborted``."""
    prov, config, sink, cancel = start(server, provider, sample_reply(provider, chunk_size=65536))
    seen: list[str] = []

    def on_event(event) -> None:
        seen.append(event.kind.value)
        if event.kind.value.endswith("delta") and not cancel.is_cancelled():
            cancel.cancel()

    message = prov.stream(config, on_event, cancel)
    assert message.stop_reason == StopReason.ABORTED
    assert len([k for k in seen if k.endswith("delta")]) == 1 and seen[-1] == "error"


@pytest.mark.parametrize("provider", ["anthropic", "bedrock", "google"])
def test_body_without_chunked_encoding_is_read_live(server, provider) -> None:
    """HTTP/1.1 bodies delimited by connection close (no Transfer-Encoding) stream live too."""
    reply = sample_reply(provider, chunked=False)
    reply.chunk_size = len(reply.body) * 7 // 10
    reply.delay = 0.4
    prov, config, sink, cancel = start(server, provider, reply)
    first: list[float] = []

    def on_event(event) -> None:
        if not first and event.kind.value != "start":
            first.append(time.monotonic())
        sink(event)

    began = time.monotonic()
    message = prov.stream(config, on_event, cancel)
    assert message.stop_reason == StopReason.STOP
    assert first and first[0] - began < 0.3


@pytest.mark.parametrize("provider", PROVIDERS)
def test_secrets_never_logged(server, provider, caplog) -> None:
    import logging

    caplog.set_level(logging.DEBUG, logger="phi")
    reply = sample_reply(provider, chunk_size=64)
    reply.reset_after = len(reply.body) // 2
    prov, config, sink, cancel = start(server, provider, reply)
    secret = config.model_config.api_key
    assert secret
    try:
        prov.stream(config, sink, cancel)
    except ProviderError as error:
        assert secret not in str(error) and secret not in repr(error)
    assert caplog.records and secret not in caplog.text
    assert secret not in repr(config) and secret not in repr(config.model_config)


def test_bedrock_good_frames_in_the_same_chunk_as_a_corrupt_one_reach_the_consumer(server) -> None:
    def frame(kind, payload):
        import json

        return encode_message({":message-type": "event", ":event-type": kind}, json.dumps(payload).encode())

    corrupt = bytearray(frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "lost"}}))
    corrupt[-2] ^= 0x10
    body = (frame("messageStart", {"role": "assistant"})
            + frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Hello"}}) + bytes(corrupt))
    message, sink = stream(server, "bedrock", Reply(body, content_type="application/vnd.amazon.eventstream"))
    assert message.text == "Hello" and sink.deltas("text_delta") == "Hello"
    assert message.stop_reason == StopReason.ERROR and "CRC" in message.error_message


# --------------------------------------------------------------------------- issue 10, item 1: keys


def _with_key(server, provider: str, reply: Reply, key: str, where: str):
    prov, config, sink, cancel = start(server, provider, reply)
    if where == "model":
        config.model_config = config.model_config.with_(api_key=key)
    else:  # what the loop's get_api_key returned
        config.api_key = key
    return prov, config, sink, cancel


@pytest.mark.parametrize("where", ["model", "get_api_key"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_key_with_a_trailing_line_break_is_stripped(server, provider, where) -> None:
    """A key read from a file or a CRLF .env ("sk-...\\r\\n") works, and is sent without the break."""
    key = f"sk-{provider}-0123456789"
    prov, config, sink, cancel = _with_key(server, provider, sample_reply(provider), key + "\r\n", where)
    message = prov.stream(config, sink, cancel)
    assert message.stop_reason in (StopReason.STOP, StopReason.TOOL_USE), message.error_message
    (recorded,) = server.requests
    assert any(value.endswith(key) for value in recorded.headers.values())


ODD_KEY = 'sk-a/b+c"d\\e=f&g h-0123456789'


def _leaks(text) -> list[str]:
    import json
    from urllib.parse import quote, quote_plus

    forms = {ODD_KEY, json.dumps(ODD_KEY)[1:-1], repr(ODD_KEY)[1:-1], quote(ODD_KEY, safe=""), quote_plus(ODD_KEY)}
    return [form for form in forms if form in str(text)]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_representation_of_the_key_is_scrubbed_from_errors(server, provider) -> None:
    """A server echoing the key raw, JSON-escaped, repr-escaped or percent-encoded: none of those
    forms survives in str/repr/args/body of the error."""
    import json
    from urllib.parse import quote, quote_plus

    echo = f"raw {ODD_KEY} url {quote(ODD_KEY, safe='')} plus {quote_plus(ODD_KEY)} repr {ODD_KEY!r}"
    body = json.dumps({"error": {"message": echo}}).encode()
    reply = Reply(body, status=401, content_type="application/json")
    prov, config, sink, cancel = _with_key(server, provider, reply, ODD_KEY, "model")
    with pytest.raises(ProviderError) as info:
        prov.stream(config, sink, cancel)
    error = info.value
    assert error.kind == ErrorKind.AUTH
    for text in (str(error), repr(error), error.args, error.body, error.message):
        assert not _leaks(text), (text, _leaks(text))


def test_key_echoed_in_a_stream_error_is_scrubbed_from_the_message_and_events(server) -> None:
    """After deltas the error text becomes the message's error_message (and the last event's)."""
    import json

    chunks = [{"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
              {"error": {"message": f"invalid key {json.dumps(ODD_KEY)}", "type": "server_error"}}]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode()
    prov, config, sink, cancel = _with_key(server, "openai", Reply(body), ODD_KEY, "model")
    message = prov.stream(config, sink, cancel)
    assert message.stop_reason == StopReason.ERROR and message.text == "Hi"
    assert "invalid key" in message.error_message and not _leaks(message.error_message)
    assert not _leaks([e.partial.error_message for e in sink.events])


@pytest.mark.parametrize("bad", ["sk-qzxw\ndef-0123", "sk-qzxw\x00def-0123", "sk-\x1b[0mqzxw-0123"])
def test_key_with_a_control_character_inside_is_refused_without_showing_it(server, bad, monkeypatch) -> None:
    from phi.errors import ConfigError
    from phi.providers.model_config import ModelConfig

    with pytest.raises(ConfigError) as info:
        ModelConfig.anthropic("claude", api_key=bad)
    assert "control character" in str(info.value) and "qzxw" not in str(info.value)
    prov, config, sink, cancel = _with_key(server, "anthropic", sample_reply("anthropic"), bad, "get_api_key")
    with pytest.raises(ProviderError) as info:
        prov.stream(config, sink, cancel)
    assert info.value.kind == ErrorKind.AUTH and "qzxw" not in str(info.value) and not server.requests
    if "\x00" in bad:
        return  # an environment variable cannot hold NUL
    monkeypatch.setenv("OPENAI_API_KEY", bad)
    mc = ModelConfig.openai("gpt", base_url=server.url)
    with pytest.raises(ProviderError) as info:
        get_provider(mc).stream(StreamConfig(mc), Collector(), CancellationToken())
    assert info.value.kind == ErrorKind.AUTH and "OPENAI_API_KEY" in str(info.value) and "qzxw" not in str(info.value)


# --------------------------------------------------------------------------- issue 10, item 6: one visibility rule

ANTHROPIC_TOOL_START = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c","usage":'
    b'{"input_tokens":5,"output_tokens":1}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":'
    b'{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}\n\n'
    b'event: content_block_start\ndata: {"type":"content_block_start","index":1,"content_block":'
    b'{"type":"redacted_thinking","data":"opaque"}}\n\n')


@pytest.mark.parametrize("mode", ["reset_after", "truncate_after"])
def test_failure_after_a_block_start_but_before_any_delta_is_retryable(server, mode) -> None:
    """Nothing visible (SPEC EVT-7: no delta yet) means the provider raises, so the loop retries."""
    reply = Reply(ANTHROPIC_TOOL_START + b"event: ping\ndata: {}\n\n" * 50, chunk_size=len(ANTHROPIC_TOOL_START))
    setattr(reply, mode, len(ANTHROPIC_TOOL_START) + 10)
    prov, config, sink, cancel = start(server, "anthropic", reply)
    with pytest.raises(ProviderError) as info:
        prov.stream(config, sink, cancel)
    assert info.value.kind == ErrorKind.NETWORK and info.value.is_retryable()
    assert "toolcall_start" in sink.kinds() and not any(k.endswith("_delta") for k in sink.kinds())


# --------------------------------------------------------------------------- issue 10, item 4: untrusted headers


@pytest.mark.parametrize("header,value,ms", [
    ("Retry-After", "inf", None), ("Retry-After", "nan", None), ("Retry-After", "1e999", None),
    ("Retry-After", "-3", 0), ("Retry-After", "junk", None), ("Retry-After", "2.5", 2500),
    ("Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT", 86_400_000), ("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT", 0),
    ("retry-after-ms", "inf", None), ("retry-after-ms", "1e999", None), ("retry-after-ms", "250", 250),
])
def test_hostile_retry_after_still_classifies_a_429(server, header, value, ms) -> None:
    """Non-finite or junk values count as absent, negatives and past dates as 0, and anything
    above a day is capped; the 429 stays a retryable rate limit."""
    reply = Reply(b'{"error": {"message": "slow down"}}', status=429, content_type="application/json",
                  headers={header: value})
    with pytest.raises(ProviderError) as info:
        stream(server, "openai", reply)
    assert info.value.kind == ErrorKind.RATE_LIMITED and info.value.is_retryable()
    assert info.value.retry_after_ms == ms
