"""Local OpenAI-compatible servers: which configs are one, and the context window they run with
(SPEC §7 PROV-6).

A local server (llama.cpp's ``llama-server`` or llama-cpp-python's, Ollama, vLLM, LM Studio) runs
with a window its operator chose — llama.cpp's default is a few thousand tokens — and a request
that does not fit fails there. :func:`context_window` asks the server, each in its own way:

* llama.cpp: ``GET /props``, ``n_ctx`` at the top (newer builds) or in
  ``default_generation_settings`` (the window of one slot);
* Ollama: ``POST /api/show`` ``{"model": NAME}``: ``num_ctx`` in ``parameters`` when the model
  sets it, else ``model_info["<general.architecture>.context_length"]``;
* vLLM: ``GET /v1/models``, ``max_model_len`` of the model's entry;
* LM Studio: ``GET /api/v0/models``, ``loaded_context_length`` (the window it was loaded with),
  else ``max_context_length``, of the model's entry.

A server named by its preset is asked its own way; any other (``openai_compatible``) is asked every
way in turn. Every request is bounded (:data:`PROBE_TIMEOUT` each, :data:`PROBE_BUDGET` for all),
reads at most :data:`MAX_ANSWER` bytes, and anything unexpected — no server, a 404, odd JSON, a
number out of range — is "unknown" (None), never an exception. Answers are kept per (URL, model)
for the life of the process: a server is asked once.
"""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any, Callable
from urllib.parse import urlsplit

from ..concurrency.cancel import CancellationToken
from ..json_values import as_object, is_array, is_object
from ..log import get_logger
from .model_config import API_OPENAI, ModelConfig
from .transport import HttpClient

log = get_logger(__name__)

PROBE_TIMEOUT = 2.0  # seconds for one request: a local server answers these in milliseconds
PROBE_BUDGET = 4.0  # seconds for all the requests of one question
MAX_ANSWER = 4 << 20  # bytes read of an answer (Ollama's /api/show carries the licence text)
MIN_WINDOW, MAX_WINDOW = 256, 100_000_000  # a number outside these is not a window
LOCAL_PROVIDERS = ("llamacpp", "ollama", "vllm", "lmstudio")

_cache: dict[tuple[str, str], int | None] = {}
_cache_lock = threading.Lock()
# "maximum context length is 4096 tokens" (OpenAI, vLLM, llama-cpp-python), "available context
# size (4096 tokens)" and "n_ctx":4096 (llama.cpp), "maximum model length of 4096" (vLLM),
# "loaded with context length of only 4096 tokens" (LM Studio)
_WINDOW_IN_ERROR = re.compile(r"maximum context length is (\d+)|available context size \((\d+) tokens\)|"
                              r"\"n_ctx\"\s*:\s*(\d+)|maximum model length of (\d+)|"
                              r"context length of only (\d+)", re.IGNORECASE)


def is_local_server(config: ModelConfig) -> bool:
    """True for a Chat Completions server that needs no key: a local-server preset, a config saying
    ``options["api_key_required"] = False``, or a loopback URL with no key."""
    if config.api != API_OPENAI:
        return False
    if config.options.get("api_key_required") is False or config.provider in LOCAL_PROVIDERS:
        return True
    host = config.base_url.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[2]
    return not config.api_key and host.startswith(("localhost", "127.", "[::1]"))


def window_from_error(text: str | None) -> int | None:
    """The window a context-overflow error names (``maximum context length is 4096 tokens``), or None."""
    match = _WINDOW_IN_ERROR.search(text or "")
    if match is None:
        return None
    return _window(int(next(group for group in match.groups() if group)))


def context_window(base_url: str, model: str, provider: str = "", *, timeout: float = PROBE_TIMEOUT,
                   budget: float = PROBE_BUDGET, client: HttpClient | None = None) -> int | None:
    """The window the server at ``base_url`` (its Chat Completions URL, ``…/v1``) runs ``model``
    with, as the server says it (see the module docstring); None when it does not say."""
    key = (base_url.rstrip("/"), model)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    own = client is None
    http = client or HttpClient(pool_maxsize=1)
    deadline = time.monotonic() + budget
    found: int | None = None
    try:
        for probe in _PROBES.get(provider, _ALL):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                break
            found = probe(_Asker(http, min(timeout, remaining), deadline), key[0], model)
            if found is not None:
                break
    finally:
        if own:
            http.close()
    log.debug("context window of %s at %s: %s", model, provider or "the server", found or "not said")
    with _cache_lock:
        _cache[key] = found
    return found


def forget() -> None:
    """Drop the answers kept so far (the next question asks the servers again)."""
    with _cache_lock:
        _cache.clear()


class _Asker:
    """One bounded JSON request; None for anything but a 200 with a JSON object or array. The
    question's ``deadline`` bounds the whole exchange, the body included: a server that trickles
    its answer a byte at a time never trips the read timeout, so a watchdog shuts the socket."""

    def __init__(self, http: HttpClient, timeout: float, deadline: float) -> None:
        self.http = http
        self.timeout = timeout
        self.deadline = deadline

    def __call__(self, method: str, url: str, body: dict[str, Any] | None = None) -> Any:
        from .transport import CallStop, abort_response, iter_body

        data = None if body is None else json.dumps(body).encode()
        headers = {"accept": "application/json", "accept-encoding": "identity"}
        if data is not None:
            headers["content-type"] = "application/json"
        stop = CallStop(CancellationToken(), max(0.001, self.deadline - time.monotonic()))
        try:
            try:
                response = self.http.send(method, url, headers, data, (self.timeout, self.timeout), stop.token)
            except Exception as error:  # no server, refused, timed out, a bad URL: the server did not say
                log.debug("%s %s: %s", method, _path(url), type(error).__name__)
                return None
            if response is None:  # the deadline passed while connecting
                return None
            unregister = stop.token.on_cancel(lambda: abort_response(response))
            try:
                if response.status_code != 200:
                    return None
                raw = bytearray()
                for chunk in iter_body(response):
                    raw += chunk
                    if len(raw) > MAX_ANSWER or stop.token.is_cancelled():
                        return None
                if stop.token.is_cancelled():
                    return None
                answer = json.loads(bytes(raw), parse_constant=_refuse)
            except Exception:  # a cut body, a shut socket, invalid JSON, NaN, nesting too deep: no answer
                return None
            finally:
                unregister()
                response.close()
        finally:
            stop.close()
        return answer if is_object(answer) or is_array(answer) else None


def _refuse(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


def _path(url: str) -> str:
    return urlsplit(url).path or "/"  # logged without host, user-info or query


def _root(base_url: str) -> str:
    """The server's root: the Chat Completions URL without its ``/v1``."""
    return base_url[:-3] if base_url.endswith("/v1") else base_url


def _window(value: object) -> int | None:
    if type(value) is int and MIN_WINDOW <= value <= MAX_WINDOW:
        return value
    return None


def _llamacpp(ask: _Asker, base_url: str, model: str) -> int | None:
    props = as_object(ask("GET", f"{_root(base_url)}/props"))
    if props is None:
        return None
    settings = as_object(props.get("default_generation_settings")) or {}
    return _window(props.get("n_ctx")) or _window(settings.get("n_ctx"))


def _ollama(ask: _Asker, base_url: str, model: str) -> int | None:
    show = as_object(ask("POST", f"{_root(base_url)}/api/show", {"model": model}))
    if show is None:
        return None
    parameters = show.get("parameters")
    if isinstance(parameters, str):  # "num_ctx    8192\nstop ..." (a Modelfile's PARAMETER lines)
        for line in parameters.splitlines():
            name, _, value = line.strip().partition(" ")
            if name == "num_ctx" and value.strip().isdigit():
                return _window(int(value.strip()))
    info = as_object(show.get("model_info")) or {}
    architecture = info.get("general.architecture")
    return _window(info.get(f"{architecture}.context_length")) if isinstance(architecture, str) else None


def _entry(entries: object, model: str, loaded: Callable[[dict[str, Any]], bool]) -> dict[str, Any] | None:
    """The model's entry in a model list; else the only one, or the only loaded one."""
    if not is_array(entries):
        return None
    items = [item for item in entries if is_object(item)]
    for item in items:
        if model in (item.get("id"), item.get("root")):
            return item
    if len(items) == 1:
        return items[0]
    running = [item for item in items if loaded(item)]
    return running[0] if len(running) == 1 else None


def _vllm(ask: _Asker, base_url: str, model: str) -> int | None:
    listing = as_object(ask("GET", f"{base_url}/models")) or {}
    entry = _entry(listing.get("data"), model, lambda item: False)
    return None if entry is None else _window(entry.get("max_model_len"))


def _lmstudio(ask: _Asker, base_url: str, model: str) -> int | None:
    listing = as_object(ask("GET", f"{_root(base_url)}/api/v0/models")) or {}
    entry = _entry(listing.get("data"), model, lambda item: item.get("state") == "loaded")
    if entry is None:
        return None
    return _window(entry.get("loaded_context_length")) or _window(entry.get("max_context_length"))


Probe = Callable[[_Asker, str, str], "int | None"]
_PROBES: dict[str, tuple[Probe, ...]] = {"llamacpp": (_llamacpp,), "ollama": (_ollama,), "vllm": (_vllm,),
                                         "lmstudio": (_lmstudio,)}
_ALL: tuple[Probe, ...] = (_llamacpp, _vllm, _lmstudio, _ollama)  # the cheap GETs first

__all__ = ["context_window", "is_local_server", "window_from_error", "forget", "PROBE_TIMEOUT", "PROBE_BUDGET",
           "LOCAL_PROVIDERS"]
