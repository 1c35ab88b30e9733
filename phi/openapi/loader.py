"""``from_str``, ``from_file`` and ``from_url``: an OpenAPI document to a list of tools
(SPEC §12.2, OAPI-1, OAPI-6).

``from_url`` fetches the document with a GET bounded by ``timeout_secs`` (redirects followed, at
most :data:`MAX_SPEC_BYTES`); no credential of the config is sent with it, since the document may
live elsewhere than the API. Its final URL is the base of relative server URLs. The tools of one
document share one HTTP connection pool.
"""

from __future__ import annotations

import os
import time
from urllib.parse import urljoin, urlsplit

import requests

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..log import get_logger
from ..providers.http import USER_AGENT, error_reason
from ..providers.transport import CallStop, HttpClient, abort_response, iter_body
from .config import OpenApiConfig, OpenApiError, OperationFilter
from .document import parse_document
from .operations import build_operations
from .tool import OpenApiTool

log = get_logger(__name__)

MAX_SPEC_BYTES = 64 << 20
MAX_REDIRECTS = 5


def _settings(config: object, selection: object) -> tuple[OpenApiConfig, OperationFilter]:
    config = OpenApiConfig() if config is None else config
    selection = OperationFilter.all() if selection is None else selection
    if not isinstance(config, OpenApiConfig):
        raise ConfigError(f"config must be an OpenApiConfig, not {type(config).__name__}")
    if not isinstance(selection, OperationFilter):
        raise ConfigError(f"filter must be an OperationFilter (OperationFilter.all(), .by_tag(...), ...), "
                          f"not {type(selection).__name__}")
    return config, selection


def _tools(text: str, config: OpenApiConfig, selection: OperationFilter, spec_url: str | None, source: str,
           client: HttpClient | None = None) -> list[OpenApiTool]:
    started = time.perf_counter()
    document = parse_document(text, source)
    operations = build_operations(document, config, selection, spec_url)
    client = client or HttpClient()
    tools = [
        OpenApiTool(op.name, op.description, op.parameters, op, config, client, label=f"{op.method} {op.path}")
        for op in operations
    ]
    log.info("%s: %d tool(s) in %.0f ms", source, len(tools), (time.perf_counter() - started) * 1000)
    return tools


def from_str(spec: str, config: OpenApiConfig | None = None, filter: OperationFilter | None = None, *,
             spec_url: str | None = None) -> list[OpenApiTool]:
    """One tool per selected operation of the OpenAPI 3.x document ``spec`` (JSON when its first
    non-blank character is ``{`` or ``[``, else YAML). ``spec_url``, where the document came from,
    is the base of relative server URLs. Raises :class:`OpenApiError` for a document that cannot
    be used."""
    config, selection = _settings(config, filter)
    return _tools(spec, config, selection, spec_url, spec_url or "OpenAPI spec")


def from_file(path: str | os.PathLike[str], config: OpenApiConfig | None = None,
              filter: OperationFilter | None = None, *, spec_url: str | None = None) -> list[OpenApiTool]:
    """:func:`from_str` on the UTF-8 file at ``path``."""
    config, selection = _settings(config, filter)
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise OpenApiError(f"cannot read the OpenAPI spec {os.fspath(path)!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise OpenApiError(f"the OpenAPI spec {os.fspath(path)!r} is not UTF-8 text (byte {exc.start})") from None
    return _tools(text, config, selection, spec_url, os.fspath(path))


def from_url(url: str, config: OpenApiConfig | None = None, filter: OperationFilter | None = None) -> list[OpenApiTool]:
    """:func:`from_str` on the document fetched from ``url`` (HTTP GET)."""
    config, selection = _settings(config, filter)
    client = HttpClient()
    text, final_url = fetch_spec(url, config.timeout_secs, client)
    return _tools(text, config, selection, final_url, final_url, client)


def fetch_spec(url: str, timeout: float, client: HttpClient) -> tuple[str, str]:
    """The document's text and its final URL (after redirects)."""
    if (not isinstance(url, str)  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers of from_url
            or urlsplit(url).scheme not in ("http", "https")):
        raise OpenApiError(f"from_url needs an http(s) URL, not {url!r}")
    stop = CallStop(CancellationToken(), timeout)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            response = _get(url, timeout, client, stop)
            unregister = stop.token.on_cancel(lambda: abort_response(response))
            try:
                if response.is_redirect and response.headers.get("location"):
                    url = urljoin(url, response.headers["location"])
                    continue
                if not 200 <= response.status_code < 300:
                    raise OpenApiError(f"fetching the OpenAPI spec {url}: HTTP {response.status_code}")
                return _spec_text(response, url, stop), url
            finally:
                unregister()
                response.close()
        raise OpenApiError(f"fetching the OpenAPI spec: more than {MAX_REDIRECTS} redirects (last: {url})")
    finally:
        stop.close()


def _get(url: str, timeout: float, client: HttpClient, stop: CallStop) -> requests.Response:
    try:
        response = client.send("GET", url, {"User-Agent": USER_AGENT, "Accept": "application/json, application/yaml, "
                                            "text/yaml, */*;q=0.5"}, None, (timeout, timeout), stop.token)
    except requests.exceptions.RequestException as exc:
        raise OpenApiError(f"fetching the OpenAPI spec {url}: {error_reason(exc)}") from None
    if response is None:
        raise OpenApiError(f"fetching the OpenAPI spec {url}: no complete response within {timeout:g}s")
    return response


def _spec_text(response: requests.Response, url: str, stop: CallStop) -> str:
    chunks: list[bytes] = []
    size = 0
    try:
        for chunk in iter_body(response):
            size += len(chunk)
            if size > MAX_SPEC_BYTES:
                raise OpenApiError(f"the OpenAPI spec at {url} is larger than {MAX_SPEC_BYTES >> 20} MiB")
            chunks.append(chunk)
    except OpenApiError:
        raise
    except Exception as exc:
        why = "no complete response in time" if stop.expired else error_reason(exc)
        raise OpenApiError(f"fetching the OpenAPI spec {url}: {why}") from None
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise OpenApiError(f"the OpenAPI spec at {url} is not UTF-8 text (byte {exc.start})") from None
