"""The options of the ``phi`` command and the coding profile they choose (SPEC §15 CLI-1, CLI-8).

Which model: ``--model`` and ``--provider`` when given; otherwise the first service whose API key
is in the environment (:data:`KEY_VARIABLES`, in that order) with that profile's default model.
With no key and no ``--offline`` the command stops with :class:`NoModel`, whose message names the
variables. ``--base-url`` points the profile's protocol at another server (a proxy, a local test
server).
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Mapping

from ..errors import ConfigError
from ..session.store import default_sessions_dir

if TYPE_CHECKING:
    from ..coding import ProviderProfile

#: profile id -> the environment variables holding its API key (first found wins).
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
PROVIDER_ALIASES = {"anthropic": "anthropic", "claude": "anthropic", "openai": "openai", "gemini": "gemini",
                    "google": "gemini"}
_MODEL_FAMILIES = (("claude", "anthropic"), ("gpt", "openai"), ("o1", "openai"), ("o3", "openai"),
                   ("o4", "openai"), ("codex", "openai"), ("gemini", "gemini"))
APPROVAL_MODES = ("on", "smart", "off")
THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh")


class NoModel(ConfigError):
    """No model can be used: no flag, no API key in the environment, not offline."""


@dataclass
class CliOptions:
    prompt: str | None = None
    json: bool = False
    model: str | None = None
    provider: str | None = None
    base_url: str | None = None
    offline: bool = False
    approve: str | None = None
    thinking: str | None = None
    hide_thinking: bool = False
    cwd: str = "."
    sessions_dir: str | None = None
    resume: str | None = None
    color: str = "auto"
    max_turns: int = 0
    timeout: float | None = None
    otel: bool = False

    def reasoning_effort(self) -> str | None:
        """``SessionConfig.reasoning_effort`` for ``--thinking`` (off: None)."""
        return None if self.thinking in (None, "off") else self.thinking


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="phi", description="A coding assistant in your terminal (interactive "
                                "without -p). Other commands: phi demo, phi conformance, phi export, phi version.")
    p.add_argument("-p", "--print", dest="prompt", metavar="TASK", help="run TASK (- reads it from stdin), print the "
                   "final answer, exit (status 0 when the run succeeded)")
    p.add_argument("--json", action="store_true", help="write every event as one JSON line; with -p for "
                   "one task, else commands are read from stdin as JSON lines (see phi.cli.json_mode)")
    p.add_argument("--model", "-m", help="model id, e.g. claude-sonnet-4-5, gpt-5.2-codex, gemini-2.5-pro")
    p.add_argument("--provider", choices=sorted(PROVIDER_ALIASES), help="which service (default: from the "
                   "model name, else the first API key found)")
    p.add_argument("--base-url", help="send requests to this server instead of the service's")
    p.add_argument("--offline", action="store_true", help="use a scripted model (no key, no network)")
    p.add_argument("--approve", choices=APPROVAL_MODES, help="ask before tool calls: on (every call), smart "
                   "(writes and commands; the interactive default), off (never; the -p default)")
    p.add_argument("--thinking", choices=THINKING_LEVELS, help="reasoning effort")
    p.add_argument("--hide-thinking", action="store_true", help="do not show the model's thinking")
    p.add_argument("--cwd", "-C", default=".", help="working directory of the session (default: here)")
    p.add_argument("--sessions-dir", help="where sessions are saved (default: $PHI_HOME/sessions, "
                   "PHI_HOME defaulting to ~/.phi)")
    p.add_argument("--resume", "-r", metavar="ID", help="continue a saved session")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--timeout", type=_positive_seconds, metavar="SECONDS", help="give up on the model's server "
                   "when it sends nothing for this long (default 120; the run then ends with an error and the "
                   "conversation stays)")
    p.add_argument("--otel", action="store_true", help="send OpenTelemetry traces of every run (GenAI conventions) "
                   "over OTLP, configured by the OTEL_EXPORTER_OTLP_* variables; needs phi-agent[otel-export]")
    p.add_argument("--max-turns", type=_non_negative, default=0, metavar="N", help="with -p or --json: stop "
                   "after N model calls (the run ends in turn_limit, exit status 1); 0, the default: no limit")
    return p


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, not {text!r}")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, not {text!r}")
    return value


def parse(argv: list[str]) -> CliOptions:
    """Parse ``argv``; argparse exits with status 2 on bad arguments."""
    ns = parser().parse_args(argv)
    if ns.prompt == "-":
        import sys

        ns.prompt = sys.stdin.read()
    if ns.prompt is not None and not ns.prompt.strip():
        parser().error("-p needs a task (or - to read it from stdin)")
    return CliOptions(**vars(ns))


def sessions_dir(options: CliOptions, env: Mapping[str, str] | None = None) -> Path:
    """``--sessions-dir`` if given, else :func:`phi.session.default_sessions_dir`."""
    if options.sessions_dir:
        return Path(options.sessions_dir).expanduser()
    return default_sessions_dir(env)


def key_hint(options: CliOptions, profile_id: str) -> str:
    """What to check after the service refused the key: ``check ANTHROPIC_API_KEY`` ("" offline)."""
    names = KEY_VARIABLES.get(profile_id, ())
    return f"check {' or '.join(names)}" if names and not options.offline else ""


def model_family(model: str) -> str | None:
    """The profile whose service serves ``model`` by its name (``claude…``, ``gpt…``, ``gemini…``), or None."""
    lowered = model.lower()
    return next((profile for prefix, profile in _MODEL_FAMILIES if lowered.startswith(prefix)), None)


def choose_profile_id(options: CliOptions, env: Mapping[str, str] | None = None) -> str:
    """The profile for the options (see the module docstring); :class:`NoModel` when none fits."""
    env = os.environ if env is None else env
    if options.provider:
        return PROVIDER_ALIASES[options.provider]
    if options.model:
        family = model_family(options.model)
        if family is not None:
            return family
        raise ConfigError(f"cannot tell which service serves model {options.model!r}; add --provider "
                          f"({', '.join(KEY_VARIABLES)})")
    for profile, names in KEY_VARIABLES.items():
        if any(env.get(name, "").strip() for name in names):
            return profile
    every = ", ".join(name for names in KEY_VARIABLES.values() for name in names)
    raise NoModel(f"no model configured: set one of {every} (or pass --model/--provider), or try phi "
                  "without a key: phi --offline")


def make_profile(options: CliOptions, model: str | None = None,
                 env: Mapping[str, str] | None = None) -> ProviderProfile:
    """The coding profile for ``options``. ``model`` (``/model``) overrides ``--model`` and, when its
    name tells (or it is written ``SERVICE:NAME``), ``--provider`` too: the conversation can move to
    another service."""
    from ..coding import create_profile

    if options.offline:
        from .offline import OfflineModel

        return create_profile("anthropic", model or "offline-scripted", provider=OfflineModel(),
                              context_window=200_000)
    if model is not None:  # /model NAME: the service NAME belongs to, else the one in use
        provider, _, name = model.rpartition(":")
        if provider and provider not in PROVIDER_ALIASES:
            raise ConfigError(f"unknown service {provider!r} in {model!r}; use one of {', '.join(KEY_VARIABLES)}")
        model = name
        options = CliOptions(**{**vars(options), "model": name,
                                "provider": provider or model_family(name) or options.provider})
    profile_id = choose_profile_id(options, env)
    names = KEY_VARIABLES[profile_id]
    environment = os.environ if env is None else env
    if not options.base_url and not any(environment.get(name, "").strip() for name in names):
        raise NoModel(f"the {profile_id} models need {' or '.join(names)}: set it, or try phi without a key: "
                      "phi --offline")
    profile = create_profile(profile_id, model or options.model, base_url=options.base_url)
    if options.timeout is not None:
        config = profile.model_config
        profile.model_config = replace(config, options={**config.options, "read_timeout": options.timeout})
    return profile


__all__ = ["CliOptions", "NoModel", "KEY_VARIABLES", "parse", "parser", "choose_profile_id", "make_profile",
           "sessions_dir", "model_family", "key_hint", "APPROVAL_MODES", "THINKING_LEVELS"]
