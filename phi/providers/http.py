"""Shared HTTP plumbing for the wire-protocol providers (SPEC PROV-1 streaming, PROV-2 and ERR-1 errors).

Every provider module builds an :class:`HttpRequest` and a :class:`StreamParser`, then calls
:func:`run_stream` with its own :class:`~phi.providers.transport.HttpClient`; run_stream owns
everything they have in common:

* sending the POST with separate connect/read timeouts (``ModelConfig.options["connect_timeout"]``
  and ``["read_timeout"]``, seconds; defaults 10 and 120), a bound on the gap between two events
  that move the reply on once the response began (``["idle_timeout"]``, default per protocol, 60 to
  120: a server dripping bytes, sending only keep-alive comments or content-free events such as
  Anthropic's ``ping`` stalls no longer than that) and a
  bound on the whole call (``["total_timeout"]``, default 1800) — the
  send runs on a helper thread so a cancellation returns at once even before the server answered;
* refusing what is not the expected stream: HTTP errors (status, body, ``Retry-After``, classified
  by :meth:`ProviderError.classify`), redirects, JSON error payloads and HTML pages sent with 200;
* reading the body live, chunk by chunk as bytes arrive (``iter_content(None)`` semantics; never
  ``iter_lines``), decoded, feeding the bytes to the parser, and reading it to its end so the
  connection is reused;
* cancellation: a callback shuts the socket down, which interrupts a blocked read immediately;
* the failure policy (documented in docs/providers.md): a failure before anything reached the
  consumer — before any delta event, the loop's own visibility rule — *raises*
  :class:`ProviderError` (so the loop may retry it); after that it *returns* the partial message
  with ``stopReason: error`` and the error text. A cancelled stream returns the partial message
  with ``stopReason: aborted``.

Secrets never leave this module: error texts (message, body, ``args``, a parser's
``error_message``, debug tracebacks) are scrubbed of every representation of the request's secret
values, URLs are logged without user-info and query string, and :class:`HttpRequest` hides
headers from ``repr``.

This module and :mod:`phi.providers.transport` are the only ones (with the provider modules)
that import ``requests``.
"""

from __future__ import annotations

import abc
import json
import json.scanner
import logging
import os
import socket
import traceback
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Protocol, cast
from urllib.parse import urlsplit

import requests
import urllib3.exceptions

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..json_values import is_object
from ..log import get_logger
from ..types import AssistantMessage, StopReason
from . import fields
from .base import (
    AssistantBuilder,
    ErrorKind,
    ProviderError,
    StreamEvent,
    StreamEventSink,
    no_json_constant,
)
from .model_config import ModelConfig
from .secret_registry import SECRETS
from .secrets import check_headers, check_secret, is_sensitive_header, scrub
from .transport import CallStop, HttpClient, abort_response, drain, iter_body

if TYPE_CHECKING:
    from .sse import SSEEvent

log = get_logger(__name__)

DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 120.0
DEFAULT_TOTAL_TIMEOUT = 1800.0  # a bound on the whole call, however the server keeps it alive
DEFAULT_IDLE_TIMEOUT = 120.0  # no complete event for this long: the stream stalled (WireProtocol sets its own)
ABORTED_MESSAGE = "aborted"
MAX_ERROR_BODY = 1 << 20
USER_AGENT = "phi-agent/0.1 (python-requests)"

_DECODER = json.JSONDecoder(parse_constant=no_json_constant)
# The C scanner when available. typeshed types make_scanner's context as a scanner (its TODO); the
# context it reads is a JSONDecoder's hooks, which is what JSONDecoder itself passes.
_scan_once = json.scanner.make_scanner(_DECODER)  # type: ignore[arg-type]  # see above


# --------------------------------------------------------------------------- requests


@dataclass
class HttpRequest:
    """One streaming POST. ``secrets`` lists values to scrub from any error text; the values of
    credential-like headers and a password in the URL are added to it, and every header value is
    checked like a key (stripped, no control characters)."""

    url: str
    headers: dict[str, str] = field(repr=False)
    body: bytes = field(repr=False)
    secrets: tuple[str, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        try:
            self.headers = check_headers(self.headers, "header")
        except ConfigError as exc:
            raise ProviderError(ErrorKind.AUTH, str(exc)) from None
        found = [v for k, v in self.headers.items() if is_sensitive_header(k)]
        password = urlsplit(self.url).password
        self.secrets = tuple(dict.fromkeys([*self.secrets, *found, *([password] if password else [])]))
        SECRETS.register_all(self.secrets)  # known to every exit, not only this request's errors (OTEL-11)
        SECRETS.register_headers(self.headers)
        SECRETS.register_url(self.url)

    def json_body(self) -> Any:
        return json.loads(self.body)

    def safe_url(self) -> str:
        """The URL without user-info and query string (where keys could hide)."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{safe_host(self.url)}{parts.path}"


def safe_host(url: str) -> str:
    """``host[:port]`` of ``url`` without any user-info."""
    parts = urlsplit(url)
    return parts.netloc.rpartition("@")[2]


def json_bytes(body: object) -> bytes:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def idle_timeout(model_config: ModelConfig, default: float = DEFAULT_IDLE_TIMEOUT) -> float | None:
    """``ModelConfig.options["idle_timeout"]`` (seconds without a complete event once the response
    began), else the protocol's ``default``; ``None`` or 0 means no idle bound."""
    value = model_config.options.get("idle_timeout", default)
    return float(value) if value else None


def timeouts(model_config: ModelConfig) -> tuple[float, float, float | None]:
    """``(connect, read, total)`` in seconds from ``ModelConfig.options`` (``connect_timeout``,
    ``read_timeout``, ``total_timeout``; a total of ``None`` or 0 means no bound)."""
    options = model_config.options
    connect = float(options.get("connect_timeout", DEFAULT_CONNECT_TIMEOUT))
    read = float(options.get("read_timeout", DEFAULT_READ_TIMEOUT))
    total = options.get("total_timeout", DEFAULT_TOTAL_TIMEOUT)
    return connect, read, (float(total) if total else None)


def api_key(explicit: str | None, *env_names: str, required: bool = True, what: str = "API key") -> str | None:
    """The explicit key, else the first environment variable that is set; raise AUTH if none.

    Keys are stripped of surrounding whitespace; one with a control character inside is an AUTH
    error that says where, never what (see :mod:`phi.providers.secrets`)."""
    try:
        key = check_secret(explicit, what, ascii_only=True)
        for name in env_names:
            if key:
                break
            key = check_secret(os.environ.get(name), f"{what} in ${name}", ascii_only=True)
        if key:
            SECRETS.register(key)  # whatever the variable's name (OTEL-11)
            return key
    except ConfigError as exc:
        raise ProviderError(ErrorKind.AUTH, str(exc)) from None
    if required:
        names = " or ".join(env_names) if env_names else "ModelConfig.api_key"
        raise ProviderError(ErrorKind.AUTH, f"no {what} configured: set {names}, or pass api_key")
    return None


class _PreparesUrl(Protocol):
    """What :func:`prepared_url` uses of ``requests.PreparedRequest``, typed (its stub leaves
    ``prepare_url`` unannotated)."""

    url: str | None

    def prepare_url(self, url: str, params: None) -> None: ...


def prepared_url(url: str) -> str:
    """``url`` exactly as ``requests`` will send it (IDNA host, requoted path and query)."""
    prepared = cast(_PreparesUrl, requests.models.PreparedRequest())
    prepared.prepare_url(url, None)
    return str(prepared.url)


def join_url(base: str, path: str) -> str:
    return base.rstrip("/") + "/" + path.lstrip("/")


# --------------------------------------------------------------------------- parsers


class StreamParser(abc.ABC):
    """Turns response bytes into builder calls. Subclasses set ``stop_reason`` when the stream
    reaches its terminal event, and ``done`` when nothing more needs to be read."""

    provider_name = "provider"

    def __init__(self, builder: AssistantBuilder) -> None:
        self.builder = builder
        self.stop_reason: StopReason | None = None
        self.error_message: str | None = None
        self.done = False
        self.events: int = 0  # complete events (SSE events, event-stream frames) read so far: the idle bound's clock
        self.cancel: CancellationToken = CancellationToken()  # set by run_stream
        self.secrets: tuple[str, ...] = ()  # set by run_stream; scrubbed from error_message

    @abc.abstractmethod
    def feed(self, chunk: bytes) -> None:
        """Consume some bytes of the body (they may end anywhere)."""

    def close(self) -> None:
        """The body ended: handle anything still buffered."""

    def result(self) -> AssistantMessage:
        """The final message once the body ended; a stream without its terminal event fails."""
        if self.stop_reason is None:
            raise ProviderError(ErrorKind.NETWORK, f"{self.provider_name} stream ended before its final event")
        error_message = None if self.error_message is None else scrub(self.error_message, self.secrets)
        return self.builder.finish(self.stop_reason, error_message)

    def loads(self, data: str | bytes) -> Any:
        """Parse one event's JSON, or fail with a clear API error.

        Calls the JSON scanner directly (the hot path: once per event); anything unusual — leading
        whitespace, bytes, trailing text — goes through the full decoder for the exact same result.
        ``NaN``/``Infinity`` are refused (they are not JSON, and could not be saved back), and so is
        nesting too deep for Python's parser. A ``\\uD8xx`` escape may decode to a lone surrogate,
        which no UTF-8 file can hold: events with such escapes have lone surrogates replaced by
        U+FFFD (the same as invalid UTF-8 bytes get from the decoder).
        """
        try:
            value = self._parse(data)
        except (ValueError, RecursionError):
            shown = data[:200] if isinstance(data, str) else data[:200].decode("utf-8", "replace")
            raise ProviderError(ErrorKind.API, f"invalid JSON in {self.provider_name} stream event: {shown!r}") from None
        if ("\\ud" in data or "\\uD" in data) if isinstance(data, str) else (b"\\ud" in data or b"\\uD" in data):
            return fields.without_lone_surrogates(value)
        return value

    @staticmethod
    def _parse(data: str | bytes) -> Any:
        if type(data) is str:
            try:
                value, end = _scan_once(data, 0)
            except StopIteration:
                return _DECODER.decode(data)
            if end == len(data) or not data[end:].strip():
                return value
            return _DECODER.decode(data)
        return json.loads(data, parse_constant=no_json_constant)

    def loads_object(self, data: str | bytes) -> dict[str, Any]:
        """:meth:`loads` for events that must be a JSON object."""
        value = self.loads(data)
        if not is_object(value):
            raise fields.malformed(f"{self.provider_name} stream event", value, "a JSON object")
        return value


class SSEParser(StreamParser):
    """A parser over the shared SSE decoder; subclasses implement :meth:`handle`."""

    def __init__(self, builder: AssistantBuilder) -> None:
        super().__init__(builder)
        from .sse import SSEDecoder

        self.decoder = SSEDecoder()

    def feed(self, chunk: bytes) -> None:
        handle = self.handle
        cancelled = self.cancel.is_cancelled  # a consumer may cancel from inside on_event
        events = self.decoder.feed(chunk)
        self.events += len(events)
        for event in events:
            handle(event)
            if self.done or cancelled():
                return

    def close(self) -> None:
        """Flush an event left without its blank line; if it is cut short, the stream ended early."""
        if self.done:
            return
        for event in self.decoder.close():
            try:
                self.handle(event)
            except ProviderError as exc:
                if "invalid JSON" not in exc.message:
                    raise
                raise ProviderError(ErrorKind.NETWORK,
                                    f"{self.provider_name} stream ended in the middle of an event") from None

    @abc.abstractmethod
    def handle(self, event: SSEEvent) -> None:
        """Handle one :class:`~phi.providers.sse.SSEEvent`."""


# --------------------------------------------------------------------------- running a stream


class _SinkFailure(Exception):
    """Wraps an exception raised by the consumer's event callback so it is re-raised untouched."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(str(original))
        self.original = original


def guarded_sink(on_event: StreamEventSink) -> Callable[[StreamEvent], None]:
    def sink(event: StreamEvent) -> None:
        try:
            on_event(event)
        except Exception as exc:
            raise _SinkFailure(exc) from exc

    return sink


def make_builder(on_event: StreamEventSink, model: str, provider: str) -> AssistantBuilder:
    """An AssistantBuilder whose consumer exceptions are kept apart from parse failures."""
    return AssistantBuilder(guarded_sink(on_event), model, provider)


def fail(builder: AssistantBuilder, error: ProviderError) -> AssistantMessage:
    """The failure policy: raise while nothing reached the consumer, else end the partial message.

    "Reached the consumer" is exactly the loop's visibility rule (SPEC EVT-7, ERR-2): a delta event
    (text, thinking or tool-call arguments) was emitted. A tool call that was opened, or a redacted
    thinking block, without any delta made nothing visible, so the attempt may still be retried.
    """
    if builder.emitted == 0:
        raise error
    log.info("%s stream failed after partial output: %s", builder.provider, error)
    return builder.finish(StopReason.ERROR, error.message)


def run_stream(request: HttpRequest, model_config: ModelConfig, cancel: CancellationToken,
               parser: StreamParser, client: HttpClient,
               default_idle: float = DEFAULT_IDLE_TIMEOUT) -> AssistantMessage:
    """Send ``request`` with ``client`` and drive ``parser`` over the live body (module docstring)."""
    connect, read, total = timeouts(model_config)
    stop = CallStop(cancel, total, idle_timeout(model_config, default_idle))
    try:
        return _guarded(parser, request.secrets, cancel,
                        lambda: _run(request, (connect, read), stop, parser, client))
    finally:
        stop.close()


def parse_body(parser: StreamParser, chunks: Iterable[bytes], cancel: CancellationToken | None = None,
               secrets: tuple[str, ...] = ()) -> AssistantMessage:
    """Drive ``parser`` over body bytes already at hand, with exactly the policy of
    :func:`run_stream` (malformed data, the failure rule, scrubbing); for tests and tools."""
    token = cancel or CancellationToken()
    parser.cancel = token
    return _guarded(parser, secrets, token, lambda: _consume(parser, iter(chunks), token))


def _guarded(parser: StreamParser, secrets: tuple[str, ...], cancel: CancellationToken,
             body: Callable[[], AssistantMessage]) -> AssistantMessage:
    builder = parser.builder
    parser.secrets = secrets
    try:
        return body()
    except _SinkFailure as exc:
        raise exc.original from None
    except ProviderError as exc:
        if cancel.is_cancelled():
            return builder.finish(StopReason.ABORTED, ABORTED_MESSAGE)
        return fail(builder, exc.redact(secrets))


def _run(request: HttpRequest, timeout: tuple[float, float], stop: CallStop, parser: StreamParser,
         client: HttpClient) -> AssistantMessage:
    builder = parser.builder
    parser.cancel = stop.token
    if stop.token.is_cancelled():
        return builder.finish(StopReason.ABORTED, ABORTED_MESSAGE)
    log.debug("POST %s", request.safe_url())
    try:
        response = client.post(request.url, request.headers, request.body, timeout, stop.token)
    except Exception as exc:
        raise _stopped(stop) or _transport_error(exc, request, timeout) from None
    if response is None:
        if stop.expired:
            raise _over_time(stop)
        return builder.finish(StopReason.ABORTED, ABORTED_MESSAGE)
    unregister = stop.token.on_cancel(lambda: abort_response(response))
    try:
        check_response(response, request, parser)
        stop.start_idle()
        body = _body(response, timeout[1])
        message = _consume(parser, body, stop.token, lambda: _stopped(stop), stop.touch)
        if parser.done and message.stop_reason is not StopReason.ABORTED:
            drain(body, response)  # read to the end so the connection goes back to the pool
        return message
    except ProviderError as exc:
        raise (_stopped(stop) or exc) from None
    finally:
        unregister()
        response.close()


def _consume(parser: StreamParser, body: Iterator[bytes], cancel: CancellationToken,
             stopped: Callable[[], ProviderError | None] = lambda: None,
             progress: Callable[[], None] = lambda: None) -> AssistantMessage:
    """Feed body chunks to ``parser`` until its terminal event, the end, or cancellation; a
    malformed event (a parser tripping on an unexpected shape) becomes an ``api`` error.
    ``stopped`` tells a cancellation that is really a failure (a time bound) apart; ``progress``
    is called after a chunk whose events moved the reply on (it feeds the idle bound: a keep-alive
    event that carries nothing, such as Anthropic's ``ping``, does not hold it open)."""
    builder = parser.builder
    seen = 0
    mark = builder.progress_mark()
    try:
        for chunk in body:
            parser.feed(chunk)
            if parser.events != seen:
                seen = parser.events
                now = builder.progress_mark()
                if now != mark or parser.done or parser.stop_reason is not None:  # content-free events do not count
                    mark = now
                    progress()
            if parser.done or cancel.is_cancelled():
                break
        if cancel.is_cancelled():
            failure = stopped()
            if failure is not None:
                raise failure
            return builder.finish(StopReason.ABORTED, ABORTED_MESSAGE)
        parser.close()
        return parser.result()
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, RecursionError) as exc:
        if log.isEnabledFor(logging.DEBUG):
            log.debug("malformed %s stream: %s", parser.provider_name, scrub(traceback.format_exc(), parser.secrets))
        raise ProviderError(ErrorKind.API, f"malformed {parser.provider_name} stream event: "
                                           f"{type(exc).__name__}: {exc}") from None


def _body(response: requests.Response, read_timeout: float) -> Iterator[bytes]:
    """:func:`transport.iter_body` with transport failures as ``network`` ProviderErrors."""
    try:
        yield from iter_body(response)
    except (urllib3.exceptions.ReadTimeoutError, socket.timeout, requests.exceptions.ReadTimeout):
        raise ProviderError(ErrorKind.NETWORK, f"no data from the server for {read_timeout:g}s (read timeout)") from None
    except (urllib3.exceptions.HTTPError, requests.exceptions.RequestException, OSError, ValueError,
            AttributeError) as exc:
        raise ProviderError(ErrorKind.NETWORK, f"connection lost mid-stream: {error_reason(exc)}") from None


def _stopped(stop: CallStop) -> ProviderError | None:
    """The error for a call stopped by a time bound (None if that is not what happened)."""
    if stop.idle_expired:
        return ProviderError(ErrorKind.NETWORK, f"the stream stalled: no complete event for {stop.idle:g}s "
                                                "(idle timeout, ModelConfig.options['idle_timeout'])")
    return _over_time(stop) if stop.expired else None


def _over_time(stop: CallStop) -> ProviderError:
    return ProviderError(ErrorKind.NETWORK, f"the call took longer than its total time bound of {stop.total:g}s "
                                            "(ModelConfig.options['total_timeout'])")


def _transport_error(exc: BaseException, request: HttpRequest, timeout: tuple[float, float]) -> ProviderError:
    host = safe_host(request.url)
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        text = f"could not connect to {host} within {timeout[0]:g}s"
    elif isinstance(exc, requests.exceptions.ReadTimeout):
        text = f"{host} sent no response within {timeout[1]:g}s"
    elif isinstance(exc, requests.exceptions.ConnectionError):
        text = f"connection to {host} failed: {error_reason(exc)}"
    elif isinstance(exc, requests.exceptions.RequestException):
        return ProviderError(ErrorKind.OTHER, scrub(f"invalid request to {request.safe_url()}: {error_reason(exc)}",
                                                    request.secrets))
    else:
        raise exc
    return ProviderError(ErrorKind.NETWORK, scrub(text, request.secrets))


def error_reason(exc: BaseException) -> str:
    """The innermost cause of a requests/urllib3 exception, without URLs."""
    inner = exc
    while True:
        reason = getattr(inner, "reason", None)
        if isinstance(reason, BaseException):
            inner = reason
            continue
        if inner.args and isinstance(inner.args[0], BaseException):
            inner = inner.args[0]
            continue
        break
    text = str(inner or exc)
    if ": " in text and "(" in text.split(": ", 1)[0]:
        text = text.split(": ", 1)[1]
    return text[:300]


def http_error(response: requests.Response, request: HttpRequest) -> ProviderError:
    """Classify an HTTP error response, reading at most 1 MiB of its body."""
    body = _read_error_body(response, request)
    headers = dict(response.headers)
    error = ProviderError.classify(response.status_code, body, headers)
    error_type = headers.get("x-amzn-ErrorType") or headers.get("x-amzn-errortype")
    if error_type and "Throttling" in error_type and error.kind is ErrorKind.API:
        error.kind = ErrorKind.RATE_LIMITED
    return error


def check_response(response: requests.Response, request: HttpRequest, parser: StreamParser) -> None:
    """Raise for anything that is not the event stream asked for: an HTTP error status, a redirect
    (not followed: it would resend the key headers elsewhere), a JSON error payload sent with 200,
    or an HTML page (a proxy or captive portal answering): those are ``api`` errors, not retried."""
    status = response.status_code
    if status >= 400:
        raise http_error(response, request)
    if 300 <= status < 400:
        location = scrub(response.headers.get("location", "(no Location header)"), request.secrets)
        raise ProviderError(ErrorKind.API, f"the server redirected to {location}; redirects are not followed "
                                           "(set ModelConfig.base_url to the final address)", status=status)
    ctype = response.headers.get("content-type", "").lower()
    if ctype.startswith("application/json"):
        body = _read_error_body(response, request)
        error = ProviderError.classify(400, body, dict(response.headers))
        error.status = status
        if error.kind is ErrorKind.API and '"error"' not in body:
            error.message = f"expected a {parser.provider_name} event stream, got a JSON body: {body[:200]}"
        raise error
    if ctype.startswith(("text/html", "application/xhtml")):
        body = _read_error_body(response, request)
        raise ProviderError(ErrorKind.API, f"expected a {parser.provider_name} event stream, got an HTML page "
                                           f"({ctype}): {' '.join(body.split())[:200]}", status=status,
                            body=body[:4000])


def _read_error_body(response: requests.Response, request: HttpRequest) -> str:
    """At most :data:`MAX_ERROR_BODY` of the body, decoded and scrubbed ("" if unreadable)."""
    try:
        raw = response.raw.read(MAX_ERROR_BODY, decode_content=True) or b""
    except Exception:  # the body is a bonus; the status is what matters
        raw = b""
    return scrub(raw.decode("utf-8", "replace"), request.secrets)
