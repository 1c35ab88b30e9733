"""One operation as an :class:`~phi.loop.tool.AgentTool`: build the HTTP request from the
arguments, send it, turn the response into a result (SPEC §12.2, OAPI-7 to OAPI-10).

A call:

1. ``{name}`` in the path is replaced by the argument's value, percent-encoded (RFC 3986); query and
   header parameters follow their ``style``/``explode`` (:mod:`phi.openapi.serialize`).
2. Headers in this order, later ones winning: header parameters, auth (bearer, basic or an API key
   header; an API key may go in the query instead), ``custom_headers``; the JSON body with its
   media type as ``Content-Type``.
3. The request is sent with ``timeout_secs`` bounding connecting, each read, and the whole call.
   Redirects are not followed (the credentials would go wherever the server points): a 3xx is an
   error result that shows the ``Location``.
4. At most ``max_response_bytes`` of the body are read; a longer body is cut on a UTF-8 boundary,
   the connection is closed, and the result says so. A body that is not text is described, not shown.
5. The result text is ``"{METHOD} {URL} → {STATUS}\\n\\n{BODY}"``; a status outside 2xx raises
   :class:`~phi.errors.ToolError` with that text (the loop makes it an error result). A timeout or
   a network failure is a ToolError that says what happened. Cancellation shuts the connection down
   and raises :class:`~phi.errors.ToolCancelled` at once.

Every text that leaves (result, error, log) shows the URL with an API key in the query as ``****``
and is scrubbed of every form of every secret of the config (OAPI-10).
"""

from __future__ import annotations

import codecs
import json
import logging
import re
from dataclasses import dataclass, field
from typing import Any

import requests
from requests.structures import CaseInsensitiveDict

from ..concurrency.cancel import CancellationToken
from ..errors import ToolCancelled, ToolError
from ..json_values import is_object
from ..log import get_logger
from ..loop.tool import ToolContext
from ..providers.http import USER_AGENT, error_reason
from ..providers.secret_registry import SECRETS
from ..providers.secrets import scrub
from ..providers.transport import CallStop, HttpClient, abort_response, iter_body
from ..types import TextContent, ToolResult
from .config import REDACTED, ApiKeyAuth, BasicAuth, BearerAuth, OpenApiConfig
from .operations import Operation
from .serialize import encode, header_value, path_segment, query_items

log = get_logger(__name__)

_TEMPLATE = re.compile(r"\{([^{}/]+)\}")
_TEXTUAL = re.compile(r"^text/|json|xml|yaml|javascript|ecmascript|x-www-form-urlencoded|csv|graphql|markdown")


@dataclass
class HttpCall:
    """A request ready to send. ``shown_url`` is the URL as texts show it (API key redacted)."""

    method: str
    url: str
    shown_url: str
    headers: CaseInsensitiveDict[str] = field(repr=False)
    body: bytes | None = field(default=None, repr=False)


class _Urllib3Scrubber(logging.Filter):
    """urllib3 logs each request line at DEBUG, query string included: an API key sent in the query
    would show in the application's logs. This filter scrubs the keys registered with it."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: frozenset[str] = frozenset()  # replaced, never changed: read without a lock
        self.installed = False

    def add(self, secret: str) -> None:
        if not self.installed:
            logging.getLogger("urllib3.connectionpool").addFilter(self)
            self.installed = True
        if secret not in self.secrets:
            self.secrets = self.secrets | {secret}

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            cleaned = scrub(message, tuple(self.secrets), REDACTED)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return True


_URLLIB3_SCRUBBER = _Urllib3Scrubber()


def build_call(operation: Operation, config: OpenApiConfig, args: object) -> HttpCall:
    """The request for one call of ``operation`` with ``args`` (OAPI-7)."""
    if args is None:
        args = {}
    if not is_object(args):
        raise ToolError(f"arguments of {operation.name} must be a JSON object, not {type(args).__name__}")
    by_path = {p.name: p for p in operation.params if p.location == "path"}

    def fill(match: re.Match[str]) -> str:
        param = by_path.get(match.group(1))
        if param is None:
            return match.group(0)
        value = args.get(param.arg)
        if value is None:
            raise ToolError(f"missing required path parameter {param.arg!r} of {operation.name}")
        return path_segment(param, value)

    path = _TEMPLATE.sub(fill, operation.path)
    query: list[str] = []
    headers: CaseInsensitiveDict[str] = CaseInsensitiveDict({"User-Agent": USER_AGENT})
    for param in operation.params:
        value = args.get(param.arg)
        if param.location == "query":
            query += query_items(param, value)
        elif param.location == "header" and value is not None:
            headers[param.name] = header_value(param, value)
    shown_query = list(query)
    auth = config.auth
    if isinstance(auth, BearerAuth):
        headers["Authorization"] = f"Bearer {auth.token}"
    elif isinstance(auth, BasicAuth):
        headers["Authorization"] = f"Basic {auth.credentials()}"
    elif isinstance(auth, ApiKeyAuth) and auth.location == "header":
        headers[auth.name] = auth.value
    elif isinstance(auth, ApiKeyAuth):
        _URLLIB3_SCRUBBER.add(auth.value)
        query.append(f"{encode(auth.name)}={encode(auth.value)}")
        shown_query.append(f"{encode(auth.name)}={REDACTED}")
    headers.update(config.custom_headers)
    body = None
    media_type = operation.body_media_type  # set exactly when body_arg is
    if operation.body_arg is not None and media_type is not None and operation.body_arg in args:
        body = json.dumps(args[operation.body_arg], ensure_ascii=False, separators=(",", ":")).encode("utf-8")
        headers["Content-Type"] = media_type
    url = operation.base_url + path
    return HttpCall(operation.method, _with_query(url, query), _with_query(url, shown_query), headers, body)


def _with_query(url: str, items: list[str]) -> str:
    if not items:
        return url
    return url + ("&" if "?" in url else "?") + "&".join(items)


def send_call(call: HttpCall, config: OpenApiConfig, client: HttpClient, cancel: CancellationToken) -> ToolResult:
    """Send ``call`` and make its result (OAPI-8, OAPI-9); raises ToolError / ToolCancelled."""
    secrets = config.secrets()
    SECRETS.register_all(secrets)  # in use: known however many other keys came since (OTEL-11)
    head = f"{call.method} {call.shown_url}"
    limit = config.timeout_secs
    stop = CallStop(cancel, limit)
    try:
        if stop.token.is_cancelled():
            raise ToolCancelled()
        try:
            response = client.send(call.method, call.url, dict(call.headers), call.body, (limit, limit), stop.token)
        except requests.exceptions.RequestException as exc:
            raise ToolError(scrub(_failure(head, exc, limit, stop), secrets, REDACTED)) from None
        if response is None:
            raise _stopped(head, stop, secrets)
        unregister = stop.token.on_cancel(lambda: abort_response(response))
        try:
            data, complete = _read(response, config.max_response_bytes)
        except Exception as exc:  # the connection broke (or was shut down by a stop) mid-body
            if stop.token.is_cancelled():
                raise _stopped(head, stop, secrets) from None
            raise ToolError(scrub(f"{head}: the connection broke while reading the response: "
                                  f"{error_reason(exc)}", secrets, REDACTED)) from None
        finally:
            unregister()
            response.close()
        if stop.token.is_cancelled():
            raise _stopped(head, stop, secrets)
    finally:
        stop.close()
    return _result(call, head, response, data, complete, config, secrets)


def _stopped(head: str, stop: CallStop, secrets: tuple[str, ...]) -> ToolError:
    if stop.expired:
        return ToolError(scrub(f"{head}: no complete response within {stop.total:g}s (OpenApiConfig.timeout_secs)",
                               secrets, REDACTED))
    return ToolCancelled()


def _failure(head: str, exc: requests.exceptions.RequestException, limit: float, stop: CallStop) -> str:
    if stop.expired:
        return f"{head}: no complete response within {limit:g}s (OpenApiConfig.timeout_secs)"
    if isinstance(exc, requests.exceptions.ConnectTimeout):
        return f"{head}: could not connect within {limit:g}s (OpenApiConfig.timeout_secs)"
    if isinstance(exc, requests.exceptions.ReadTimeout):
        return f"{head}: no response within {limit:g}s (OpenApiConfig.timeout_secs)"
    if isinstance(exc, requests.exceptions.ConnectionError):
        return f"{head}: connection failed: {error_reason(exc)}"
    return f"{head}: the request could not be sent: {error_reason(exc)}"


def _read(response: requests.Response, limit: int) -> tuple[bytes, bool]:
    """Up to ``limit + 1`` bytes of the body (enough to know it is longer) and whether it ended."""
    chunks: list[bytes] = []
    size = 0
    for chunk in iter_body(response):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            return b"".join(chunks), False
    return b"".join(chunks), True


def utf8_prefix(data: bytes, limit: int) -> bytes:
    """The longest prefix of ``data`` of at most ``limit`` bytes that does not split a UTF-8
    sequence."""
    if len(data) <= limit:
        return data
    cut = limit
    while cut > 0 and limit - cut < 3 and (data[cut] & 0xC0) == 0x80:
        cut -= 1
    return data[:cut]


def _result(call: HttpCall, head: str, response: requests.Response, data: bytes, complete: bool,
            config: OpenApiConfig, secrets: tuple[str, ...]) -> ToolResult:
    status = response.status_code
    ctype = response.headers.get("content-type", "")
    body, shown = _body_text(data, complete, config.max_response_bytes, ctype)
    if not complete and shown is not None:
        total = response.headers.get("content-length")
        of = f" of {total}" if total and total.isdigit() else ""
        body += f"\n\n[response truncated: showing the first {shown}{of} bytes (OpenApiConfig.max_response_bytes)]"
    if 300 <= status < 400:
        body = f"Redirect to {response.headers.get('location', '(no Location header)')} (not followed)\n\n{body}"
    text = scrub(f"{head} → {status}\n\n{body}", secrets, REDACTED)
    log.debug("%s → %d (%d bytes%s)", scrub(head, secrets, REDACTED), status, len(data),
              "" if complete else ", truncated")
    if not 200 <= status < 300:
        raise ToolError(text)
    details = {"method": call.method, "url": scrub(call.shown_url, secrets, REDACTED), "status": status,
               "content_type": ctype, "truncated": not complete}
    return ToolResult([TextContent(text)], details)


def _body_text(data: bytes, complete: bool, limit: int, ctype: str) -> tuple[str, int | None]:
    """The body as text and how many of its bytes it shows (None: a body that is not text)."""
    media = ctype.split(";")[0].strip().lower()
    if media and not _TEXTUAL.search(media):
        size = f"{len(data)}" if complete else f"more than {limit}"
        return f"[{media} body of {size} bytes not shown]", None
    charset = _charset(ctype)
    if charset not in (None, "utf-8"):
        shown = data[:limit]
        return shown.decode(charset, "replace"), len(shown)
    shown = utf8_prefix(data, limit)
    return shown.decode("utf-8", "replace"), len(shown)


def _charset(ctype: str) -> str | None:
    match = re.search(r"charset=\"?([A-Za-z0-9._:-]+)", ctype, re.IGNORECASE)
    if not match:
        return None
    try:
        return codecs.lookup(match.group(1)).name.replace("_", "-")
    except LookupError:
        return None


@dataclass(eq=False)
class OpenApiTool:
    """An AgentTool that calls one OpenAPI operation (made by :func:`phi.openapi.from_str`)."""

    name: str
    description: str
    parameters: dict[str, Any]
    operation: Operation = field(repr=False)
    config: OpenApiConfig = field(repr=False)
    client: HttpClient = field(repr=False)
    label: str = ""
    timeout_ms: int | None = None
    inline: bool = False

    @property
    def operation_id(self) -> str:
        return self.operation.operation_id

    @property
    def method(self) -> str:
        return self.operation.method

    @property
    def path(self) -> str:
        return self.operation.path

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        call = build_call(self.operation, self.config, args)
        return send_call(call, self.config, self.client, ctx.cancel)
