"""Choosing the wire protocol from a model name alone (SPEC §7, PROV-1): ``Agent(model="claude-...")``.

``model_config_for(name)`` understands the model families every service names the same way, and an
explicit ``"<provider>:<model>"`` form for the rest::

    claude-*                          -> Anthropic Messages
    gpt-*, o1*, o3*, o4*, chatgpt-*, codex-*  -> OpenAI Chat Completions
    gemini-*                          -> Gemini API
    anthropic:M  openai:M  openai_responses:M  google:M  vertex:M  bedrock:M  <preset>:M (groq, ollama, ...)

Anything else raises :class:`~phi.errors.ConfigError` saying what to pass instead; a wrong guess
would only fail later, in the middle of a turn.
"""

from __future__ import annotations

from typing import Callable

from ..errors import ConfigError
from .model_config import PRESETS, ModelConfig

_FAMILIES: tuple[tuple[tuple[str, ...], Callable[[str], ModelConfig]], ...] = (
    (("claude-", "claude"), ModelConfig.anthropic),
    (("gpt-", "o1", "o3", "o4", "chatgpt-", "codex-"), ModelConfig.openai),
    (("gemini-",), ModelConfig.google),
)

_PROVIDERS: dict[str, Callable[[str], ModelConfig]] = {
    "anthropic": ModelConfig.anthropic,
    "openai": ModelConfig.openai,
    "openai_responses": ModelConfig.openai_responses,
    "google": ModelConfig.google,
    "vertex": ModelConfig.vertex,
    "bedrock": ModelConfig.bedrock,
}


def model_config_for(name: str) -> ModelConfig:
    """The ModelConfig for a model name; raises ConfigError when the protocol cannot be told."""
    if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
        raise ConfigError(f"model must be a non-empty model name, got {name!r}")
    name = name.strip()
    provider, sep, model = name.partition(":")
    if sep and model:
        if provider in _PROVIDERS:
            return _PROVIDERS[provider](model)
        if provider in PRESETS:
            return ModelConfig.preset(provider, model)
    lowered = name.lower()
    for prefixes, make in _FAMILIES:
        if lowered.startswith(prefixes):
            return make(name)
    known = ", ".join(sorted([*_PROVIDERS, *PRESETS]))
    raise ConfigError(
        f"cannot tell which service serves model {name!r}. Pass model_config=ModelConfig.<preset>(...) "
        f"(e.g. ModelConfig.anthropic('claude-sonnet-4-5'), ModelConfig.preset('groq', 'llama-3.3-70b')), "
        f"or name it as '<provider>:<model>' with provider one of: {known}; for offline use pass "
        f"provider=ScriptedProvider([...])"
    )
