"""The options of the ``phi`` command and the coding profile they choose (SPEC §15 CLI-1, CLI-8).

Which model: ``--model`` and ``--provider`` when given; otherwise the first service whose API key
is in the environment (:data:`KEY_VARIABLES`, in that order) with that profile's default model.
With no key and no ``--offline`` the command stops with :class:`NoModel`, whose message names the
variables. ``--base-url`` (or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``) points the profile's
protocol at another server (a proxy, a local test server).

Local and self-hosted models (CLI-11): ``--provider ollama|llamacpp|vllm|lmstudio``, or a base URL
with no key for it (``--base-url`` without ``--provider`` and without a model name phi recognises,
or ``OPENAI_BASE_URL`` without ``OPENAI_API_KEY``), is an OpenAI Chat Completions server that needs
no key; it gets the Anthropic profile's tools (plain read/write/edit/shell, the set small models
follow best). No key is ever sent to such a server. Its context window is the one the server says
it runs with (asked once, bounded: :func:`local_window`); ``--context-window`` overrides it, and
:data:`LOCAL_CONTEXT_WINDOW` stands in when the server does not say.

This module is imported before the prompt appears, so it imports nothing heavy at load time.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Mapping

from ..errors import ConfigError

if TYPE_CHECKING:
    from pathlib import Path

    from ..coding import ProviderProfile
    from ..tools.sandbox import SandboxPolicy

#: profile id -> the environment variables holding its API key (first found wins).
KEY_VARIABLES: dict[str, tuple[str, ...]] = {
    "anthropic": ("ANTHROPIC_API_KEY",),
    "openai": ("OPENAI_API_KEY",),
    "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY"),
}
PICK = "?pick"  # --resume without an id
PROVIDER_ALIASES = {"anthropic": "anthropic", "claude": "anthropic", "openai": "openai", "gemini": "gemini",
                    "google": "gemini"}
#: keyless OpenAI-compatible servers: --provider NAME -> its default base URL (phi.providers.model_config.PRESETS)
LOCAL_PROVIDERS = {"ollama": "http://localhost:11434/v1", "llamacpp": "http://localhost:8080/v1",
                   "vllm": "http://localhost:8000/v1", "lmstudio": "http://localhost:1234/v1"}
#: the model of each profile when none is named (phi.coding.profiles; a test keeps them equal)
DEFAULT_MODELS = {"openai": "gpt-5.2-codex", "anthropic": "claude-sonnet-4-5", "gemini": "gemini-2.5-pro"}
BASE_URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
LOCAL_PROFILE = "anthropic"  # the tools a local model gets
LOCAL_MODEL = "local-model"  # the model name sent when none is given (llama.cpp serves its one model)
LOCAL_CONTEXT_WINDOW = 32_768
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
    continue_session: bool = False
    color: str = "auto"
    max_turns: int = 0
    timeout: float | None = None
    otel: bool = False
    system_prompt: str | None = None
    append_system_prompt: str | None = None
    mcp: list[str] | None = None
    compact_at: float = 0.85
    context_window: int | None = None
    sandbox: str = "workspace-write"
    network: bool = False
    git_writable: bool = False

    def sandbox_policy(self) -> SandboxPolicy:
        """The command sandbox ``--sandbox``, ``--network`` and ``--git-writable`` choose."""
        from ..tools.sandbox import SandboxPolicy, as_policy

        return SandboxPolicy(as_policy(self.sandbox).mode, network=self.network, git_writable=self.git_writable)

    def reasoning_effort(self) -> str | None:
        """``SessionConfig.reasoning_effort`` for ``--thinking`` (off: None)."""
        return None if self.thinking in (None, "off") else self.thinking


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="phi", description="A coding assistant in your terminal (interactive "
                                "without -p). Other commands: phi demo, phi conformance, phi export, phi trust, phi version.")
    p.add_argument("-p", "--print", dest="prompt", metavar="TASK", help="run TASK (- reads it from stdin), print the "
                   "final answer, exit (status 0 when the run succeeded)")
    p.add_argument("--json", action="store_true", help="write every event as one JSON line; with -p for "
                   "one task, else commands are read from stdin as JSON lines (see phi.cli.json_mode)")
    p.add_argument("--model", "-m", help="model id, e.g. claude-sonnet-4-5, gpt-5.2-codex, gemini-2.5-pro")
    p.add_argument("--provider", choices=sorted([*PROVIDER_ALIASES, *LOCAL_PROVIDERS]), help="which service "
                   "(default: from the model name, else the first API key found); ollama, llamacpp, vllm and "
                   "lmstudio are local OpenAI-compatible servers that need no key")
    p.add_argument("--base-url", help="send requests to this server instead of the service's (default: "
                   "$OPENAI_BASE_URL / $ANTHROPIC_BASE_URL); alone, an OpenAI-compatible server needing no key")
    p.add_argument("--context-window", type=_positive_int, metavar="TOKENS", help="the model's context window "
                   "(default: the service's; a local server is asked for its own, else "
                   f"{LOCAL_CONTEXT_WINDOW:,})")
    p.add_argument("--offline", action="store_true", help="use a scripted model (no key, no network)")
    p.add_argument("--approve", choices=APPROVAL_MODES, help="ask before tool calls: on (every call), smart "
                   "(writes and commands; the interactive default), off (never; the -p default)")
    p.add_argument("--thinking", choices=THINKING_LEVELS, help="reasoning effort")
    p.add_argument("--hide-thinking", action="store_true", help="do not show the model's thinking")
    p.add_argument("--cwd", "-C", default=".", help="working directory of the session (default: here)")
    p.add_argument("--sessions-dir", help="where sessions are saved (default: $PHI_HOME/sessions, "
                   "PHI_HOME defaulting to ~/.phi)")
    p.add_argument("--resume", "-r", metavar="ID", nargs="?", const=PICK, help="continue a saved session "
                   "(without ID: choose one from a list)")
    p.add_argument("--continue", "-c", dest="continue_session", action="store_true", help="continue the most "
                   "recent session started in this directory")
    p.add_argument("--system-prompt", metavar="TEXT", help="replace phi's instructions to the model (the tool "
                   "list and environment are still given)")
    p.add_argument("--append-system-prompt", metavar="TEXT", help="add TEXT to the instructions to the model")
    p.add_argument("--mcp", action="append", metavar="CONFIG", help="MCP servers: a JSON file or text in the "
                   ".mcp.json shape ({\"mcpServers\": {NAME: {command, args, env} | {url, headers}}}); repeatable. "
                   "./.mcp.json is read too")
    p.add_argument("--compact-at", type=_percent, default=0.85, metavar="PERCENT", help="compact the conversation "
                   "when it fills this much of the context window (default 85; 0: never)")
    p.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    p.add_argument("--timeout", type=_positive_seconds, metavar="SECONDS", help="give up on the model's server "
                   "when it sends nothing for this long (default 120; the run then ends with an error and the "
                   "conversation stays)")
    p.add_argument("--otel", action="store_true", help="send OpenTelemetry traces of every run (GenAI conventions) "
                   "over OTLP, configured by the OTEL_EXPORTER_OTLP_* variables; needs phi-agent[otel-export]")
    p.add_argument("--max-turns", type=_non_negative, default=0, metavar="N", help="with -p or --json: stop "
                   "after N model calls (the run ends in turn_limit, exit status 1); 0, the default: no limit")
    p.add_argument("--sandbox", choices=("read-only", "workspace-write", "full"), default="workspace-write",
                   help="what the commands the model runs may change: workspace-write (the default: only this "
                   "directory and a private temp dir), read-only, or full (everything you can; no sandbox)")
    p.add_argument("--network", action="store_true", help="let sandboxed commands use the network (off by default)")
    p.add_argument("--git-writable", action="store_true", help="let sandboxed commands write .git (off by "
                   "default: a hook written there would run outside the sandbox at your next commit)")
    return p


def _positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds > 0, not {text!r}")
    return value


def _positive_int(text: str) -> int:
    value = _non_negative(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, not {text!r}")
    return value


def _percent(text: str) -> float:
    try:
        value = float(text.rstrip("%"))
    except ValueError:
        value = -1.0
    if not 0 <= value <= 100:
        raise argparse.ArgumentTypeError(f"expected a percentage from 0 to 100, not {text!r}")
    return value / 100


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
    if ns.continue_session and ns.resume:
        parser().error("--continue and --resume cannot be used together")
    return CliOptions(**vars(ns))


def home_dir(env: Mapping[str, str] | None = None) -> str:
    """``$PHI_HOME``, else ``~/.phi`` (phi.session.store's rule, without importing it)."""
    env = os.environ if env is None else env
    return os.path.expanduser(env.get("PHI_HOME") or "~/.phi")


def sessions_dir(options: CliOptions, env: Mapping[str, str] | None = None) -> Path:
    """``--sessions-dir`` if given, else :func:`phi.session.default_sessions_dir` — by the same rule,
    without importing the store before the prompt."""
    from pathlib import Path

    if options.sessions_dir:
        return Path(options.sessions_dir).expanduser()
    return Path(home_dir(env)) / "sessions"


def key_hint(options: CliOptions, profile_id: str) -> str:
    """What to check after the service refused the key: ``check ANTHROPIC_API_KEY`` ("" offline)."""
    names = KEY_VARIABLES.get(profile_id, ())
    return f"check {' or '.join(names)}" if names and not options.offline else ""


def model_family(model: str) -> str | None:
    """The profile whose service serves ``model`` by its name (``claude…``, ``gpt…``, ``gemini…``), or None."""
    lowered = model.lower()
    return next((profile for prefix, profile in _MODEL_FAMILIES if lowered.startswith(prefix)), None)


def local_target(options: CliOptions, env: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """``(provider name, base URL)`` when the options name a keyless OpenAI-compatible server (see the
    module docstring), else None."""
    env = os.environ if env is None else env
    if options.provider in LOCAL_PROVIDERS:
        return options.provider, options.base_url or LOCAL_PROVIDERS[options.provider]
    if options.provider or (options.model and model_family(options.model)):
        return None
    if options.base_url:
        return "openai_compatible", options.base_url
    base = env.get("OPENAI_BASE_URL", "").strip()
    if base and not env.get("OPENAI_API_KEY", "").strip() and not any(
            env.get(name, "").strip() for names in KEY_VARIABLES.values() for name in names):
        return "openai_compatible", base
    return None


def choose_profile_id(options: CliOptions, env: Mapping[str, str] | None = None) -> str:
    """The profile for the options (see the module docstring); :class:`NoModel` when none fits."""
    env = os.environ if env is None else env
    if local_target(options, env) is not None:
        return LOCAL_PROFILE
    if options.provider:
        return PROVIDER_ALIASES[options.provider]
    if options.model:
        family = model_family(options.model)
        if family is not None:
            return family
        raise ConfigError(f"cannot tell which service serves model {options.model!r}; add --provider "
                          f"({', '.join([*KEY_VARIABLES, *LOCAL_PROVIDERS])})")
    for profile, names in KEY_VARIABLES.items():
        if any(env.get(name, "").strip() for name in names):
            return profile
    every = ", ".join(name for names in KEY_VARIABLES.values() for name in names)
    raise NoModel(f"no model configured: set one of {every} (or pass --model/--provider; a local server: "
                  "--provider ollama|llamacpp|vllm|lmstudio or --base-url URL), or try phi without a key: "
                  "phi --offline")


def describe_choice(options: CliOptions, env: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(service, model)`` as the banner names them, without loading the coding layer; raises what
    :func:`make_profile` would for a choice that cannot work (no key, an unknown service)."""
    if options.offline:
        return "offline", "offline-scripted"
    local = local_target(options, env)
    if local is not None:
        return local[0], options.model or LOCAL_MODEL
    profile_id = choose_profile_id(options, env)
    check_key(options, profile_id, env)
    return profile_id, options.model or DEFAULT_MODELS[profile_id]


def check_key(options: CliOptions, profile_id: str, env: Mapping[str, str] | None = None) -> None:
    """:class:`NoModel` when the service's protocol has no key to send (a base URL does not need one
    only when it is a keyless OpenAI-compatible server, see :func:`local_target`)."""
    environment = os.environ if env is None else env
    names = KEY_VARIABLES[profile_id]
    if any(environment.get(name, "").strip() for name in names):
        return
    if options.base_url or environment.get(BASE_URL_VARIABLES.get(profile_id, ""), "").strip():
        raise NoModel(f"the {profile_id} protocol sends {' or '.join(names)}, which is not set; for a server "
                      "that needs no key use --provider llamacpp|ollama|vllm|lmstudio (OpenAI Chat Completions) "
                      "or --base-url without --provider")
    raise NoModel(f"the {profile_id} models need {' or '.join(names)}: set it, or try phi without a key: "
                  "phi --offline")


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
        if provider and provider not in PROVIDER_ALIASES and provider not in LOCAL_PROVIDERS:
            raise ConfigError(f"unknown service {provider!r} in {model!r}; use one of "
                              f"{', '.join([*KEY_VARIABLES, *LOCAL_PROVIDERS])}")
        model = name
        options = replace(options, model=name, provider=provider or model_family(name) or options.provider)
    environment = os.environ if env is None else env
    local = local_target(options, environment)
    if local is not None:
        return _local_profile(options, *local)
    profile_id = choose_profile_id(options, environment)
    check_key(options, profile_id, environment)
    base_url = options.base_url or environment.get(BASE_URL_VARIABLES.get(profile_id, ""), "").strip() or None
    profile = create_profile(profile_id, model or options.model, base_url=base_url,
                             context_window=options.context_window)
    return _with_timeout(profile, options)


def _local_profile(options: CliOptions, provider: str, base_url: str) -> ProviderProfile:
    from ..coding import create_profile
    from ..providers.model_config import ModelConfig

    name = options.model or LOCAL_MODEL
    window = options.context_window or local_window(base_url, name, provider) or LOCAL_CONTEXT_WINDOW
    config = ModelConfig.openai_compatible(base_url, name, provider=provider, context_window=window,
                                           options={"api_key_required": False})
    return _with_timeout(create_profile(LOCAL_PROFILE, name, model_config=config, context_window=window), options)


def local_window(base_url: str, model: str, provider: str) -> int | None:
    """The window a keyless server says it runs ``model`` with (asked once per process, bounded:
    :func:`phi.providers.local_servers.context_window`), or None when it does not say."""
    from ..providers.local_servers import context_window

    return context_window(base_url, model, "" if provider == "openai_compatible" else provider)


def service_name(profile: ProviderProfile, options: CliOptions | None = None) -> str:
    """The service the banner and ``/model`` name for ``profile``: ``offline``, a keyless server's
    own name (``llamacpp``, ``ollama``, ``openai_compatible``…; its profile is the Anthropic one
    only for the tools it gets), else the profile's id."""
    if options is not None and options.offline:
        return "offline"
    config = profile.model_config
    if config.options.get("api_key_required") is False:
        return config.provider or "openai_compatible"
    return profile.id


def _with_timeout(profile: ProviderProfile, options: CliOptions) -> ProviderProfile:
    if options.timeout is not None:
        config = profile.model_config
        profile.model_config = replace(config, options={**config.options, "read_timeout": options.timeout})
    return profile


__all__ = ["CliOptions", "NoModel", "KEY_VARIABLES", "LOCAL_PROVIDERS", "local_target", "describe_choice", "home_dir",
           "DEFAULT_MODELS", "check_key", "PICK", "parse", "parser", "choose_profile_id", "make_profile",
           "sessions_dir", "model_family", "key_hint", "APPROVAL_MODES", "THINKING_LEVELS", "service_name",
           "local_window"]
