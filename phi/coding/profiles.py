"""Provider profiles (SPEC §14 CODE-4; seed 004 §3.1–3.7): the tools, prompt and model settings a model family works
best with.

    profile = create_anthropic_profile("claude-sonnet-4-5")
    profile.tool_registry.register(my_tool)            # custom tools; same name = override (§3.7)
    session = Session(profile, LocalExecutionEnvironment("/path/to/repo"))

Each profile pairs a :class:`~phi.providers.model_config.ModelConfig` (the wire protocol: OpenAI
Responses, Anthropic Messages, Gemini) with a :class:`~phi.coding.registry.ToolRegistry` from
:mod:`phi.coding.profile_tools` plus the sub-agent tools, base instructions from
:mod:`phi.coding.instructions`, capability flags (§3.2) and ``provider_options``:

* ``{"openai": {"body": {...}}}`` — extra Responses request fields (reasoning effort itself comes
  from ``SessionConfig.reasoning_effort`` as ``reasoning.effort``);
* ``{"anthropic": {"beta_headers": ["interleaved-thinking-2025-05-14", ...]}}`` — the
  ``anthropic-beta`` header;
* ``{"gemini": {"safety_settings": [...], "body": {...}}}`` — ``safetySettings`` and other fields.

``provider`` replaces the wire protocol (a ScriptedProvider offline, a proxy, ...); ``base_url`` and
``api_key`` point the protocol elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, TypedDict

from ..errors import ConfigError
from ..providers.base import StreamProvider
from ..providers.model_config import ModelConfig
from ..tools.environment import ExecutionEnvironment
from ..types import ToolDefinition
from .profile_tools import (
    ANTHROPIC_SHELL_TIMEOUT_MS,
    GEMINI_SHELL_TIMEOUT_MS,
    OPENAI_SHELL_TIMEOUT_MS,
    PROFILE_TOOLS,
)
from .registry import ToolRegistry
from .subagent_tools import subagent_tools

if TYPE_CHECKING:
    from typing_extensions import Unpack

PROFILE_IDS = ("openai", "anthropic", "gemini")


@dataclass
class ProviderProfile:
    """Seed 004 §3.2. Build one with :func:`create_openai_profile` and friends."""

    id: str
    model: str
    model_config: ModelConfig
    tool_registry: ToolRegistry
    supports_reasoning: bool = True
    supports_streaming: bool = True
    supports_parallel_tool_calls: bool = True
    context_window_size: int = 128_000
    default_command_timeout_ms: int = 10_000
    knowledge_cutoff: str | None = None
    base_instructions: str | None = None  # None: phi.coding.instructions.base_instructions(id)
    options: dict[str, Any] = field(default_factory=dict[str, Any])  # provider_options, keyed by profile id
    provider: StreamProvider | None = None  # replaces the wire protocol (offline, proxy, ...)

    def __post_init__(self) -> None:
        if self.id not in PROFILE_IDS:
            raise ConfigError(f"profile id must be one of {PROFILE_IDS}, got {self.id!r}")
        from .provider_options import body_extras

        body_extras(self.id, self.options)  # refuses malformed options now, not at the first request

    def tools(self) -> list[ToolDefinition]:
        return self.tool_registry.definitions()

    def provider_options(self) -> dict[str, Any] | None:
        return dict(self.options) or None

    def instructions(self) -> str:
        """Layer 1 of the system prompt (§6.2)."""
        if self.base_instructions is not None:
            return self.base_instructions
        from .instructions import base_instructions

        return base_instructions(self.id)

    def build_system_prompt(self, environment: ExecutionEnvironment, *, tools: list[ToolDefinition] | None = None,
                            user_override: str | None = None) -> str:
        """The layered system prompt (§6.1) for ``environment``, assembled by
        :func:`phi.coding.prompt.build_system_prompt`: base instructions, the environment block and
        git snapshot, the summary of ``tools`` (default: all the profile's), project documents,
        ``user_override`` last."""
        from .prompt import build_system_prompt

        return build_system_prompt(self.id, environment, model=self.model, user_override=user_override,
                                   cwd=environment.working_directory(), knowledge_cutoff=self.knowledge_cutoff,
                                   base=self.instructions(),
                                   tool_summary=tool_summary(tools if tools is not None else self.tools()))

    def with_model(self, model: str) -> ProviderProfile:
        """The same profile for another model of the same service (sub-agents' ``model``)."""
        return replace(self, model=model, model_config=replace(self.model_config, id=model),
                       tool_registry=self.tool_registry.copy())


def tool_summary(tools: list[ToolDefinition]) -> str:
    """Layer 3 (§6.1): one line per tool, its name and the first sentence of its description."""
    if not tools:
        return ""
    lines = ["# Tools", "You can call these tools:"]
    for definition in tools:
        first = definition.description.split(". ")[0].rstrip(".")
        lines.append(f"- {definition.name}: {first}.")
    return "\n".join(lines)


@dataclass(frozen=True)
class _Spec:
    model: str  # the default model
    make_config: Callable[..., ModelConfig]
    context_window: int
    shell_timeout_ms: int


_SPECS = {
    "openai": _Spec("gpt-5.2-codex", ModelConfig.openai_responses, 400_000, OPENAI_SHELL_TIMEOUT_MS),
    "anthropic": _Spec("claude-sonnet-4-5", ModelConfig.anthropic, 200_000, ANTHROPIC_SHELL_TIMEOUT_MS),
    "gemini": _Spec("gemini-2.5-pro", ModelConfig.google, 1_048_576, GEMINI_SHELL_TIMEOUT_MS),
}


class ProfileOptions(TypedDict, total=False):
    """The keyword options of :func:`create_profile`, which ``create_openai_profile`` and friends pass on."""

    api_key: str | None
    base_url: str | None
    model_config: ModelConfig | None
    provider: StreamProvider | None
    provider_options: dict[str, Any] | None
    context_window: int | None
    knowledge_cutoff: str | None


def create_profile(profile_id: str, model: str | None = None, *, api_key: str | None = None,
                   base_url: str | None = None, model_config: ModelConfig | None = None,
                   provider: StreamProvider | None = None,
                   provider_options: dict[str, Any] | None = None, context_window: int | None = None,
                   knowledge_cutoff: str | None = None) -> ProviderProfile:
    """The ``profile_id`` profile (``openai``, ``anthropic``, ``gemini``) for ``model`` (None: its
    default). ``api_key``/``base_url`` point the protocol elsewhere; ``model_config`` replaces it
    whole; ``provider`` replaces the wire protocol (a ScriptedProvider offline)."""
    spec = _SPECS.get(profile_id)
    if spec is None:
        raise ConfigError(f"unknown profile {profile_id!r}; use one of {PROFILE_IDS}")
    model = model or spec.model
    window = context_window or spec.context_window
    if model_config is not None:
        mc = replace(model_config, id=model) if model != model_config.id else model_config
    else:
        extra = {k: v for k, v in (("api_key", api_key), ("base_url", base_url)) if v is not None}
        mc = spec.make_config(model, context_window=window, **extra)
    from .provider_options import apply_header_options

    options = dict(provider_options or {})
    registry = ToolRegistry([*PROFILE_TOOLS[profile_id](), *subagent_tools()])
    return ProviderProfile(profile_id, model, apply_header_options(profile_id, options, mc), registry,
                           supports_reasoning=mc.reasoning, context_window_size=window,
                           default_command_timeout_ms=spec.shell_timeout_ms, knowledge_cutoff=knowledge_cutoff,
                           options=options, provider=provider)


def create_openai_profile(model: str = "gpt-5.2-codex", **options: Unpack[ProfileOptions]) -> ProviderProfile:
    """codex-aligned (§3.4): OpenAI Responses API, ``apply_patch`` edits, 10 s command timeout.
    ``options``: those of :func:`create_profile`."""
    return create_profile("openai", model, **options)


def create_anthropic_profile(model: str = "claude-sonnet-4-5", **options: Unpack[ProfileOptions]) -> ProviderProfile:
    """Claude Code-aligned (§3.5): Anthropic Messages API, ``edit_file``, 120 s command timeout.
    ``options``: those of :func:`create_profile`."""
    return create_profile("anthropic", model, **options)


def create_gemini_profile(model: str = "gemini-2.5-pro", **options: Unpack[ProfileOptions]) -> ProviderProfile:
    """gemini-cli-aligned (§3.6): Gemini API, ``read_many_files`` and ``list_dir``, 10 s timeout.
    ``options``: those of :func:`create_profile`."""
    return create_profile("gemini", model, **options)


__all__ = ["ProviderProfile", "create_openai_profile", "create_anthropic_profile", "create_gemini_profile",
           "create_profile", "tool_summary", "PROFILE_IDS", "ProfileOptions"]
