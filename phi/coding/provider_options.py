"""How a session's model settings reach the real request (SPEC §14 CODE-3, CODE-4; seed 004 §2.7,
§3.4–3.6 "Provider options").

:class:`SessionProvider` wraps the provider a profile uses (the wire protocol from
:mod:`phi.providers`, or a provider given explicitly) and, for every model call:

* sets the call's thinking level from the session's *current* ``reasoning_effort``, so a change
  takes effect on the next model call, even in the middle of a run. The protocols then send it as
  they do for any agent: Responses ``reasoning.effort``, an Anthropic thinking budget, a Gemini
  ``thinkingConfig``;
* merges the profile's extra request fields into the JSON body (``provider_options`` of the
  OpenAI and Gemini profiles: e.g. ``safetySettings``; see :func:`body_extras`);
* remembers the kind of the last provider failure (``auth``, ``context_overflow``, ...), which the
  session needs to decide whether an error closes it (Appendix B).

Anthropic beta headers travel in ``ModelConfig.headers`` (``anthropic-beta``), which every request
of that model sends; :func:`apply_header_options` puts them there.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from ..concurrency.cancel import CancellationToken
from ..errors import ConfigError
from ..json_values import is_object
from ..providers.base import (
    ErrorKind,
    ProviderError,
    StreamConfig,
    StreamEventSink,
    StreamProvider,
)
from ..providers.model_config import ModelConfig
from ..types import AssistantMessage, ThinkingLevel

if TYPE_CHECKING:
    from ..providers.http import HttpRequest


def deep_merge(target: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """``extra`` merged into ``target`` (nested dicts merged, lists and values replaced)."""
    for key, value in extra.items():
        if is_object(value) and is_object(target.get(key)):
            deep_merge(target[key], value)
        else:
            target[key] = value
    return target


def body_extras(profile_id: str, options: dict[str, Any] | None) -> dict[str, Any]:
    """The JSON fields a profile's ``provider_options`` add to every request body.

    * ``{"openai": {"body": {...}}}`` — merged as given (e.g. ``{"text": {"verbosity": "low"}}``).
    * ``{"gemini": {"safety_settings": [{"category": ..., "threshold": ...}], "body": {...}}}`` —
      ``safetySettings`` plus anything under ``body``.
    """
    section: object = (options or {}).get(profile_id) or {}
    if not is_object(section):
        raise ConfigError(f"provider_options[{profile_id!r}] must be a dict, got {type(section).__name__}")
    extras: dict[str, Any] = {}
    if profile_id == "gemini" and section.get("safety_settings") is not None:
        extras["safetySettings"] = list(section["safety_settings"])
    body: object = section.get("body") or {}
    if not is_object(body):
        raise ConfigError(f"provider_options[{profile_id!r}]['body'] must be a dict")
    return deep_merge(extras, json.loads(json.dumps(body)))


def apply_header_options(profile_id: str, options: dict[str, Any] | None, model_config: ModelConfig) -> ModelConfig:
    """``model_config`` with the profile's header options: ``{"anthropic": {"beta_headers": [...]}}``
    becomes the ``anthropic-beta`` header (joined with commas, after any already configured)."""
    section: object = (options or {}).get(profile_id) or {}
    betas = section.get("beta_headers") if is_object(section) else None
    if not betas:
        return model_config
    if isinstance(betas, str) or not all(isinstance(b, str) and b.strip() for b in betas):
        raise ConfigError("provider_options['anthropic']['beta_headers'] must be a list of header values")
    headers = dict(model_config.headers)
    present = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
    headers["anthropic-beta"] = ",".join(dict.fromkeys([*present, *(b.strip() for b in betas)]))
    return replace(model_config, headers=headers)


def with_body_extras(provider: StreamProvider, extras: dict[str, Any]) -> StreamProvider:
    """A provider of the same protocol whose requests carry ``extras`` in their JSON body.

    Works for every HTTP wire protocol (an :class:`~phi.providers.http_provider.HttpStreamProvider`);
    a new provider is made, so shared providers are not changed.
    """
    if not extras:
        return provider
    from ..providers.http import json_bytes  # the HTTP machinery loads with the first provider that needs it
    from ..providers.http_provider import HttpStreamProvider

    if not isinstance(provider, HttpStreamProvider):
        raise ConfigError(f"provider {type(provider).__name__} does not build HTTP requests; body options cannot be "
                          "added to it")
    protocol = provider.protocol
    extra_json = json.loads(json.dumps(extras))

    def build_request(config: StreamConfig) -> HttpRequest:
        request = protocol.build_request(config)
        return replace(request, body=json_bytes(deep_merge(json.loads(request.body), extra_json)))

    return HttpStreamProvider(replace(protocol, build_request=build_request))


class SessionProvider:
    """The provider a session's loop calls (see the module docstring)."""

    def __init__(self, inner: StreamProvider, thinking_level: Callable[[], ThinkingLevel]) -> None:
        self.inner = inner
        self.provider_id: str = getattr(inner, "provider_id", "provider")  # a provider may lack one at run time
        self._thinking_level = thinking_level
        self.last_error_kind: ErrorKind | None = None

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        self.last_error_kind = None
        config = replace(config, thinking_level=self._thinking_level())
        try:
            return self.inner.stream(config, on_event, cancel)
        except ProviderError as error:
            self.last_error_kind = error.kind
            raise


def resolve_provider(model_config: ModelConfig, explicit: StreamProvider | None = None) -> StreamProvider:
    """The provider for a profile: ``explicit`` if given, else the registry's for the model's api."""
    if explicit is not None:
        return explicit
    from ..providers.registry import default_registry

    return default_registry().for_model(model_config)


__all__ = ["SessionProvider", "body_extras", "apply_header_options", "with_body_extras", "resolve_provider",
           "deep_merge"]
