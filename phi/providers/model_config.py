"""Model identity: which wire protocol, which service, which model, and how to authenticate (SPEC §7.1).

``api`` selects the wire protocol (one provider module each); ``provider`` names the service
(``anthropic``, ``openai``, ``groq``...) and becomes the first segment of derived loop ids.
Secrets (``api_key`` and header values) never appear in ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

# Wire protocol identifiers (``ModelConfig.api``).
API_ANTHROPIC = "anthropic_messages"
API_OPENAI = "openai_completions"
API_OPENAI_RESPONSES = "openai_responses"
API_AZURE_OPENAI = "azure_openai_responses"
API_GOOGLE = "google_generative_ai"
API_GOOGLE_VERTEX = "google_vertex"
API_BEDROCK = "bedrock_converse_stream"
API_PROXY = "proxy"
API_MOCK = "mock"


@dataclass(slots=True)
class OpenAICompat:
    """Differences between OpenAI-compatible servers (Chat Completions)."""

    max_tokens_field: str = "max_tokens"  # or "max_completion_tokens"
    supports_developer_role: bool = False
    supports_reasoning_effort: bool = False
    supports_usage_in_streaming: bool = True
    reasoning_field: str | None = None  # "reasoning_content" / "reasoning"; None reads both


@dataclass(slots=True)
class ModelConfig:
    id: str
    api: str = API_OPENAI
    provider: str = "openai"
    name: str = ""
    base_url: str = ""
    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict, repr=False)
    reasoning: bool = False
    context_window: int = 128_000
    max_tokens: int = 8192
    compat: OpenAICompat = field(default_factory=OpenAICompat)
    options: dict[str, Any] = field(default_factory=dict)  # protocol extras: region, project, api_version, ...

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"ModelConfig(id={self.id!r}, api={self.api!r}, provider={self.provider!r}, "
            f"base_url={self.base_url!r}, api_key=<{key}>, headers=<{len(self.headers)} hidden>)"
        )

    def with_(self, **changes: Any) -> ModelConfig:
        """A copy with some fields changed."""
        return replace(self, **changes)

    @classmethod
    def mock(cls, model: str = "mock-model") -> ModelConfig:
        """Identity for the scripted provider (no network)."""
        return cls(id=model, api=API_MOCK, provider="mock")
