"""Provider registry: picks the wire-protocol provider for a ModelConfig (SPEC §7; REQ-042, REQ-125).

Protocol modules are imported lazily (``importlib``) the first time they are needed, so
``import phi`` never pays for ``requests`` or for providers that are not used. ``api == "mock"`` is
not dispatched here: the loop is given a ScriptedProvider explicitly.
"""

from __future__ import annotations

import importlib
import threading
from typing import Callable, Mapping

from .base import ErrorKind, ProviderError, StreamProvider
from .model_config import (
    API_ANTHROPIC,
    API_AZURE_OPENAI,
    API_BEDROCK,
    API_GOOGLE,
    API_GOOGLE_VERTEX,
    API_OPENAI,
    API_OPENAI_RESPONSES,
    API_PROXY,
    ModelConfig,
)

# api -> "module:Class", resolved on first use (relative to this package: a vendored copy loads its own).
BUILTIN: dict[str, str] = {
    API_ANTHROPIC: ".anthropic:AnthropicProvider",
    API_OPENAI: ".openai:OpenAIProvider",
    API_OPENAI_RESPONSES: ".openai_responses:OpenAIResponsesProvider",
    API_AZURE_OPENAI: ".azure_openai:AzureOpenAIProvider",
    API_GOOGLE: ".google:GoogleProvider",
    API_GOOGLE_VERTEX: ".google_vertex:GoogleVertexProvider",
    API_BEDROCK: ".bedrock:BedrockProvider",
    API_PROXY: ".proxy:ProxyProvider",
}


class ProviderRegistry:
    """Maps ``ModelConfig.api`` to a provider instance (or a lazily imported ``"module:Class"``)."""

    def __init__(self, entries: Mapping[str, StreamProvider | str] | None = None) -> None:
        self._entries: dict[str, StreamProvider | str] = dict(entries or {})
        self._lock = threading.Lock()

    @classmethod
    def default(cls) -> ProviderRegistry:
        """A registry with all built-in protocols (imported when first used)."""
        return cls(BUILTIN)

    def register(self, api: str, provider: StreamProvider | str) -> None:
        """Register a provider object, or a ``"module:Class"`` path to import on first use."""
        with self._lock:
            self._entries[api] = provider

    def apis(self) -> list[str]:
        return sorted(self._entries)

    def get(self, api: str) -> StreamProvider:
        with self._lock:
            entry = self._entries.get(api)
            if entry is None:
                known = ", ".join(sorted(self._entries)) or "none"
                raise ProviderError(ErrorKind.OTHER, f"no provider registered for api {api!r} (known: {known})")
            if isinstance(entry, str):
                module_name, _, class_name = entry.partition(":")
                factory: Callable[[], StreamProvider] = getattr(importlib.import_module(module_name, __package__),
                                                                class_name)
                entry = self._entries[api] = factory()
            return entry

    def for_model(self, model_config: ModelConfig) -> StreamProvider:
        return self.get(model_config.api)


_default: ProviderRegistry | None = None
_default_lock = threading.Lock()


def default_registry() -> ProviderRegistry:
    """The process-wide registry the loop uses: the built-in protocols, plus any you register."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ProviderRegistry.default()
        return _default


def get_provider(model_config: ModelConfig) -> StreamProvider:
    """The provider for ``model_config.api`` from the default registry."""
    return default_registry().get(model_config.api)
