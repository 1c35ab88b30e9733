"""The environment a command sees (SPEC §9.1 "Environment filtering").

A policy (``inherit_all``, ``core_only``, ``none``) chooses which variables are passed on; under
every policy, variables that look like secrets are removed. "Looks like a secret" is
:func:`phi.providers.secret_names.is_secret_variable`, a rule over the variable's name split into
words (``GH_TOKEN``, ``PGPASSWORD``, ``AWS_ACCESS_KEY_ID``, ``DATABASE_URL``, but not ``KEYBOARD``)
and a look at its value (a URL with a password, a connection string, a token-shaped value); its
docstring lists the words.

``PWD``, ``OLDPWD`` and ``SSH_AUTH_SOCK`` (a socket path git needs) are kept. The rule errs on the
side of removing: a harmless ``PUBLIC_KEY`` is removed too. It is a safety default against leaking
credentials into command output, not a security boundary: a command can still read files such as
``~/.netrc`` or ``~/.aws/credentials``.
"""

from __future__ import annotations

import fnmatch
from typing import Iterable, Mapping

from ..errors import ConfigError
from ..providers.secret_names import is_secret_variable

__all__ = ["ENV_POLICIES", "CORE_ENV_VARS", "filter_environment", "is_secret_variable"]

ENV_POLICIES = ("inherit_all", "core_only", "none")

#: Variables kept by the ``core_only`` policy (plus every ``LC_*``).
CORE_ENV_VARS: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ", "PWD",
    "GOPATH", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "NODE_PATH", "PYENV_ROOT",
    "VIRTUAL_ENV", "CONDA_PREFIX", "JAVA_HOME", "GEM_HOME", "GEM_PATH", "DENO_DIR", "BUN_INSTALL",
)


def _matches_any(name: str, patterns: tuple[str, ...]) -> bool:
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern.upper()) for pattern in patterns)


def filter_environment(
    source: Mapping[str, str],
    policy: str = "inherit_all",
    secret_patterns: Iterable[str] | None = None,
    core_vars: Iterable[str] = CORE_ENV_VARS,
) -> dict[str, str]:
    """The environment a command sees: ``source`` reduced by ``policy``, then secrets removed.

    ``secret_patterns=None`` applies :func:`is_secret_variable`; a list of name globs (matched
    case-insensitively) replaces that rule; ``()`` removes nothing.
    """
    if policy not in ENV_POLICIES:
        raise ConfigError(f"unknown env policy {policy!r}; use one of {', '.join(ENV_POLICIES)}")
    if policy == "none":
        return {}
    patterns = None if secret_patterns is None else tuple(secret_patterns)
    core = set(core_vars)
    out: dict[str, str] = {}
    for name, value in source.items():
        if policy == "core_only" and name not in core and not name.startswith("LC_"):
            continue
        secret = is_secret_variable(name, value) if patterns is None else _matches_any(name, patterns)
        if not secret:
            out[name] = value
    return out
