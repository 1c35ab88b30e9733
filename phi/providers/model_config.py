"""Model identity: which wire protocol, which service, which model, and how to authenticate (SPEC §7, PROV-1).

``api`` selects the wire protocol (one provider module each); ``provider`` names the service
(``anthropic``, ``openai``, ``groq``...) and becomes the first segment of derived loop ids.
Secrets (``api_key`` and header values) never appear in ``repr``; they are stripped of surrounding
whitespace and refused if a control character remains inside (:mod:`phi.providers.secrets`), and
registered as secrets phi keeps out of everything it lets out (SPEC §17 OTEL-11,
:mod:`phi.providers.secret_registry`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from ..errors import ConfigError
from .secret_registry import SECRETS
from .secrets import check_headers, check_secret

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .pricing import ModelPrice

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


# --------------------------------------------------------------------------- capabilities

# What a model accepts in a request beyond the basics. Defaults first; rules below adjust them by
# model id; ``ModelConfig.capabilities`` overrides both (e.g. for an Azure deployment name).
DEFAULT_CAPABILITIES: dict[str, bool] = {
    "temperature": True,  # a non-default sampling temperature (reasoning models refuse it with a 400)
    "bedrock_prompt_cache": False,  # Bedrock cachePoint blocks in system and messages (Claude, Nova)
    "bedrock_tool_cache": False,  # a Bedrock cachePoint inside toolConfig.tools (Claude only; Nova refuses)
    # OpenAI Responses: the model reasons even unasked, so ``include: ["reasoning.encrypted_content"]``
    # is sent with every request (models that do not reason refuse it); with thinking on it always is
    "encrypted_reasoning": False,
}


def _openai_reasoning(model: str) -> bool:
    """o1/o3/o4 and gpt-5 models (but not the non-reasoning ``gpt-5-chat``)."""
    name = model.rsplit("/", 1)[-1].lower()
    return re.match(r"o[134](-|$)", name) is not None or (name.startswith("gpt-5") and "-chat" not in name)


def _claude_opus_at_least_4_7(model: str) -> bool:
    match = re.search(r"claude-opus-(\d+)(?:[-.](\d{1,2})(?!\d))?", model.lower())
    return match is not None and (int(match.group(1)), int(match.group(2) or 0)) >= (4, 7)


CAPABILITY_RULES: tuple[tuple[Callable[[str], bool], dict[str, bool]], ...] = (
    (_openai_reasoning, {"temperature": False, "encrypted_reasoning": True}),
    (_claude_opus_at_least_4_7, {"temperature": False}),
    (lambda m: "anthropic" in m or "claude" in m, {"bedrock_prompt_cache": True, "bedrock_tool_cache": True}),
    (lambda m: "nova" in m, {"bedrock_prompt_cache": True}),
)


def capabilities_for(model: str) -> dict[str, bool]:
    """The capability table's answer for a model id (see :data:`CAPABILITY_RULES`)."""
    found = dict(DEFAULT_CAPABILITIES)
    for matches, values in CAPABILITY_RULES:
        if matches(model):
            found.update(values)
    return found



class ExtraFields(TypedDict, total=False):
    """Keyword arguments every preset passes on to :class:`ModelConfig` unchanged: ``headers``,
    ``context_window``, ``max_tokens``, ``options``, ``capabilities``, ``cost``. These are
    :meth:`ModelConfig.preset`'s."""

    headers: dict[str, str]
    context_window: int
    max_tokens: int
    options: dict[str, Any]
    capabilities: dict[str, bool]
    cost: ModelPrice | None


class CommonFields(ExtraFields, total=False):
    """:class:`ExtraFields` and ``name``: the keyword arguments of :meth:`ModelConfig.azure_openai`,
    :meth:`~ModelConfig.proxy` and :meth:`~ModelConfig.openai_compatible`."""

    name: str


class PresetFields(CommonFields, total=False):
    """:class:`CommonFields`, ``base_url`` and ``compat``: the keyword arguments of
    :meth:`ModelConfig.anthropic`, :meth:`~ModelConfig.openai`, :meth:`~ModelConfig.openai_responses`,
    :meth:`~ModelConfig.google`, :meth:`~ModelConfig.vertex` and :meth:`~ModelConfig.bedrock`."""

    base_url: str
    compat: OpenAICompat


class ModelFields(PresetFields, total=False):
    """Every :class:`ModelConfig` field, each optional: the keyword arguments of :meth:`ModelConfig.with_`."""

    id: str
    api: str
    provider: str
    api_key: str | None
    reasoning: bool


@dataclass(slots=True)
class ModelConfig:
    """Which model to call and how: ``api`` picks the wire protocol (one provider module each, see
    :mod:`phi.providers.registry`), ``provider`` names the service, ``id`` is the model (or Azure
    deployment). ``base_url`` replaces the protocol's default endpoint; ``api_key`` and ``headers``
    authenticate (else the protocol's environment variable is read at call time). ``reasoning``
    says the model can think (thinking is requested only then); ``context_window`` and
    ``max_tokens`` are its limits; ``compat`` describes an OpenAI-compatible server; ``options``
    holds protocol extras (region, project, api_version, timeouts, ...); ``capabilities``
    overrides the capability table (:meth:`supports`); ``cost`` is its price
    (:class:`phi.providers.pricing.ModelPrice`, US dollars per million tokens) when the built-in table's is
    wrong or missing. Build one with a preset classmethod
    (:meth:`anthropic`, :meth:`openai`, :meth:`google`, :meth:`bedrock`, ...).
    """

    id: str
    api: str = API_OPENAI
    provider: str = "openai"
    name: str = ""
    base_url: str = ""
    api_key: str | None = field(default=None, repr=False)
    headers: dict[str, str] = field(default_factory=dict[str, str], repr=False)
    reasoning: bool = False
    context_window: int = 128_000
    max_tokens: int = 8192
    compat: OpenAICompat = field(default_factory=OpenAICompat)
    options: dict[str, Any] = field(default_factory=dict[str, Any])  # protocol extras: region, project, api_version
    capabilities: dict[str, bool] = field(default_factory=dict[str, bool])  # overrides of the capability table
    cost: ModelPrice | None = None  # this model's price; None: phi.providers.pricing's table decides

    def __post_init__(self) -> None:
        # A key from a file or a CRLF .env ends in a line break: strip it here, refuse inner ones.
        self.api_key = check_secret(self.api_key, "ModelConfig.api_key", ascii_only=True)
        self.headers = check_headers(self.headers, "ModelConfig.headers")
        SECRETS.register(self.api_key)
        SECRETS.register_headers(self.headers)
        unknown = set(self.capabilities) - set(DEFAULT_CAPABILITIES)
        if unknown:
            raise ConfigError(f"unknown ModelConfig.capabilities {sorted(unknown)}; known: "
                              f"{sorted(DEFAULT_CAPABILITIES)}")

    def supports(self, capability: str) -> bool:
        """Whether the model accepts ``capability`` (:data:`DEFAULT_CAPABILITIES` lists them): the
        override in ``capabilities`` if any, else the table's answer for ``id``."""
        if capability in self.capabilities:
            return bool(self.capabilities[capability])
        return capabilities_for(self.id)[capability]

    def __repr__(self) -> str:
        key = "set" if self.api_key else "unset"
        return (
            f"ModelConfig(id={self.id!r}, api={self.api!r}, provider={self.provider!r}, "
            f"base_url={self.base_url!r}, api_key=<{key}>, headers=<{len(self.headers)} hidden>)"
        )

    def with_(self, **changes: Unpack[ModelFields]) -> ModelConfig:
        """A copy with some fields changed."""
        return replace(self, **changes)

    @classmethod
    def mock(cls, model: str = "mock-model") -> ModelConfig:
        """Identity for the scripted provider (no network)."""
        return cls(id=model, api=API_MOCK, provider="mock")

    # ------------------------------------------------------------------ presets (SPEC §7)

    @classmethod
    def anthropic(cls, model: str = "claude-sonnet-4-5", *, api_key: str | None = None, reasoning: bool = True,
                  **kwargs: Unpack[PresetFields]) -> ModelConfig:
        """Claude over the Messages API (key: ``ANTHROPIC_API_KEY``; OAuth tokens are detected)."""
        kwargs.setdefault("context_window", 200_000)
        kwargs.setdefault("max_tokens", 16_384)
        return cls(id=model, api=API_ANTHROPIC, provider="anthropic", api_key=api_key, reasoning=reasoning, **kwargs)

    @classmethod
    def openai(cls, model: str = "gpt-4.1", *, api_key: str | None = None, reasoning: bool | None = None,
               **kwargs: Unpack[PresetFields]) -> ModelConfig:
        """OpenAI Chat Completions (key: ``OPENAI_API_KEY``)."""
        if reasoning is None:
            reasoning = model.startswith(("o1", "o3", "o4", "gpt-5"))
        kwargs.setdefault("compat", OpenAICompat(max_tokens_field="max_completion_tokens",
                                                 supports_developer_role=True, supports_reasoning_effort=True))
        return cls(id=model, api=API_OPENAI, provider="openai", api_key=api_key, reasoning=reasoning, **kwargs)

    @classmethod
    def openai_responses(cls, model: str = "gpt-5", *, api_key: str | None = None, reasoning: bool = True,
                         **kwargs: Unpack[PresetFields]) -> ModelConfig:
        """OpenAI Responses API (key: ``OPENAI_API_KEY``)."""
        return cls(id=model, api=API_OPENAI_RESPONSES, provider="openai", api_key=api_key, reasoning=reasoning,
                   **kwargs)

    @classmethod
    def azure_openai(cls, deployment: str, *, base_url: str = "", resource: str | None = None,
                     api_key: str | None = None, api_version: str | None = None, reasoning: bool = True,
                     **kwargs: Unpack[CommonFields]) -> ModelConfig:
        """An Azure OpenAI deployment over the Responses API (key: ``AZURE_OPENAI_API_KEY``)."""
        options = kwargs["options"] = dict(kwargs.get("options", {}))
        if resource:
            options["resource"] = resource
        if api_version:
            options["api_version"] = api_version
        return cls(id=deployment, api=API_AZURE_OPENAI, provider="azure_openai", base_url=base_url,
                   api_key=api_key, reasoning=reasoning, **kwargs)

    @classmethod
    def google(cls, model: str = "gemini-2.5-flash", *, api_key: str | None = None, reasoning: bool = True,
               **kwargs: Unpack[PresetFields]) -> ModelConfig:
        """Gemini API (key: ``GEMINI_API_KEY`` or ``GOOGLE_API_KEY``)."""
        kwargs.setdefault("context_window", 1_048_576)
        return cls(id=model, api=API_GOOGLE, provider="google", api_key=api_key, reasoning=reasoning, **kwargs)

    @classmethod
    def vertex(cls, model: str = "gemini-2.5-flash", *, project: str | None = None, location: str | None = None,
               access_token: str | None = None, reasoning: bool = True,
               **kwargs: Unpack[PresetFields]) -> ModelConfig:
        """Gemini on Vertex AI (OAuth bearer token; project/location from args or GOOGLE_CLOUD_*)."""
        options = kwargs["options"] = dict(kwargs.get("options", {}))
        if project:
            options["project"] = project
        if location:
            options["location"] = location
        kwargs.setdefault("context_window", 1_048_576)
        return cls(id=model, api=API_GOOGLE_VERTEX, provider="google_vertex", api_key=access_token,
                   reasoning=reasoning, **kwargs)

    @classmethod
    def bedrock(cls, model: str = "us.anthropic.claude-sonnet-4-5-20250929-v1:0", *, region: str | None = None,
                api_key: str | None = None, reasoning: bool | None = None,
                **kwargs: Unpack[PresetFields]) -> ModelConfig:
        """Bedrock ConverseStream (``AWS_BEARER_TOKEN_BEDROCK`` or SigV4 from ``AWS_*``)."""
        options = kwargs["options"] = dict(kwargs.get("options", {}))
        if region:
            options["region"] = region
        if reasoning is None:
            reasoning = "anthropic" in model
        return cls(id=model, api=API_BEDROCK, provider="bedrock", api_key=api_key, reasoning=reasoning, **kwargs)

    @classmethod
    def proxy(cls, url: str, model: str, *, token: str | None = None, provider: str = "proxy",
              **kwargs: Unpack[CommonFields]) -> ModelConfig:
        """A model reached through a phi proxy server (token: ``PHI_PROXY_TOKEN``)."""
        return cls(id=model, api=API_PROXY, provider=provider, base_url=url, api_key=token, **kwargs)

    @classmethod
    def openai_compatible(cls, base_url: str, model: str, *, provider: str | None = None,
                          api_key: str | None = None, compat: OpenAICompat | None = None, reasoning: bool = False,
                          **kwargs: Unpack[CommonFields]) -> ModelConfig:
        """Any Chat Completions server. ``base_url`` may be a preset name (see :data:`PRESETS`) or
        a URL; a URL whose host matches a preset gets that preset's compat flags and key variable."""
        preset = PRESETS.get(base_url) or _preset_for_url(base_url)
        options = kwargs["options"] = dict(kwargs.get("options", {}))
        if preset is not None:
            url = base_url if base_url.startswith(("http://", "https://")) else preset.base_url
            provider = provider or preset.name
            compat = compat or preset.compat()
            if preset.key_env:
                options.setdefault("api_key_env", preset.key_env)
            else:  # a local server: no key, and a CPU may take minutes before its first token
                options.setdefault("api_key_required", False)
                options.setdefault("idle_timeout", LOCAL_IDLE_TIMEOUT)
        else:
            url = base_url
            provider = provider or "openai_compatible"
            compat = compat or OpenAICompat()
            if _is_loopback(url):
                options.setdefault("idle_timeout", LOCAL_IDLE_TIMEOUT)
        return cls(id=model, api=API_OPENAI, provider=provider, base_url=url, api_key=api_key, compat=compat,
                   reasoning=reasoning, **kwargs)

    @classmethod
    def preset(cls, name: str, model: str, *, provider: str | None = None, api_key: str | None = None,
               compat: OpenAICompat | None = None, reasoning: bool = False,
               **kwargs: Unpack[ExtraFields]) -> ModelConfig:
        """A known OpenAI-compatible service by name, e.g. ``ModelConfig.preset("groq", "llama-3.3-70b")``."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; known: {', '.join(sorted(PRESETS))}")
        return cls.openai_compatible(name, model, provider=provider, api_key=api_key, compat=compat,
                                     reasoning=reasoning, **kwargs)


LOCAL_IDLE_TIMEOUT = 600.0  # options["idle_timeout"] of the local-server presets (ollama, vllm, llamacpp...)


@dataclass(frozen=True)
class CompatPreset:
    """A known OpenAI-compatible service: where it is, its key variable and its quirks."""

    name: str
    base_url: str
    key_env: str | None
    max_tokens_field: str = "max_tokens"
    developer_role: bool = False
    reasoning_effort: bool = False
    usage_in_streaming: bool = True
    reasoning_field: str | None = None

    def compat(self) -> OpenAICompat:
        return OpenAICompat(self.max_tokens_field, self.developer_role, self.reasoning_effort,
                            self.usage_in_streaming, self.reasoning_field)


PRESETS: dict[str, CompatPreset] = {p.name: p for p in (
    CompatPreset("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", "max_completion_tokens", True, True),
    CompatPreset("xai", "https://api.x.ai/v1", "XAI_API_KEY", reasoning_field="reasoning_content"),
    CompatPreset("groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY", reasoning_effort=True,
                 reasoning_field="reasoning"),
    CompatPreset("cerebras", "https://api.cerebras.ai/v1", "CEREBRAS_API_KEY", "max_completion_tokens",
                 reasoning_effort=True, reasoning_field="reasoning"),
    CompatPreset("mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    CompatPreset("deepseek", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY", reasoning_field="reasoning_content"),
    CompatPreset("openrouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY", reasoning_effort=True,
                 reasoning_field="reasoning"),
    CompatPreset("together", "https://api.together.xyz/v1", "TOGETHER_API_KEY"),
    CompatPreset("fireworks", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    CompatPreset("perplexity", "https://api.perplexity.ai", "PERPLEXITY_API_KEY"),
    CompatPreset("zai", "https://api.z.ai/api/paas/v4", "ZAI_API_KEY", reasoning_field="reasoning_content"),
    CompatPreset("moonshot", "https://api.moonshot.ai/v1", "MOONSHOT_API_KEY", reasoning_field="reasoning_content"),
    CompatPreset("nvidia", "https://integrate.api.nvidia.com/v1", "NVIDIA_API_KEY"),
    CompatPreset("huggingface", "https://router.huggingface.co/v1", "HF_TOKEN"),
    CompatPreset("github", "https://models.github.ai/inference", "GITHUB_TOKEN"),
    CompatPreset("ollama", "http://localhost:11434/v1", None, reasoning_field="reasoning"),
    CompatPreset("vllm", "http://localhost:8000/v1", None, reasoning_field="reasoning_content"),
    CompatPreset("lmstudio", "http://localhost:1234/v1", None),
    CompatPreset("llamacpp", "http://localhost:8080/v1", None, reasoning_field="reasoning_content"),
)}


def _is_loopback(url: str) -> bool:
    host = url.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[2]
    return host.startswith(("localhost", "127.", "[::1]"))


def _preset_for_url(url: str) -> CompatPreset | None:
    host = url.split("://", 1)[-1].split("/", 1)[0]
    if not url.startswith(("http://", "https://")) or host.startswith(("localhost", "127.0.0.1")):
        return None
    for preset in PRESETS.values():
        if preset.base_url.split("://", 1)[-1].split("/", 1)[0] == host:
            return preset
    return None
