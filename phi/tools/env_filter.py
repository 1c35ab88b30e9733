"""The environment a command sees (SPEC §9.1 "Environment filtering").

A policy (``inherit_all``, ``core_only``, ``none``) chooses which variables are passed on; under
every policy, variables that look like secrets are removed. "Looks like a secret" is a rule over the
variable's name split into words at ``_`` (and any other non-alphanumeric character), plus a look at
its value:

* a word that is, or ends with, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASSPHRASE``, ``TOKEN``,
  ``CREDENTIAL``, ``APIKEY`` or ``PWD`` (plural forms too) — so ``PGPASSWORD``, ``GH_TOKEN``,
  ``MYSQL_PWD``, ``OPENAIAPIKEY``;
* a word that is exactly ``KEY``, ``KEYS``, ``PRIVATE``, ``AUTH``, ``PASS``, ``PAT``, ``CREDS``, ``DSN``,
  ``WEBHOOK`` or ``SAS`` — so ``AWS_ACCESS_KEY_ID``, ``PRIVATE_KEY``, ``BASIC_AUTH``, ``SENTRY_DSN``,
  but not ``KEYBOARD`` or ``TOKENIZERS_PARALLELISM``;
* the conventional connection-string names ``DATABASE_URL``/``_URI``, ``DB_URL``/``_URI`` and any
  name containing ``CONNECTION_STRING``;
* any value that embeds credentials: a URL with ``user:password@`` (``HTTP_PROXY``,
  ``PIP_INDEX_URL``, ``REDIS_URL``, ...) or a ``Password=``/``AccountKey=``-style connection string.

``PWD``, ``OLDPWD`` and ``SSH_AUTH_SOCK`` (a socket path git needs) are kept. The rule errs on the
side of removing: a harmless ``PUBLIC_KEY`` is removed too. It is a safety default against leaking
credentials into command output, not a security boundary: a command can still read files such as
``~/.netrc`` or ``~/.aws/credentials``.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Iterable, Mapping

from ..errors import ConfigError

__all__ = ["ENV_POLICIES", "CORE_ENV_VARS", "filter_environment", "is_secret_variable"]

ENV_POLICIES = ("inherit_all", "core_only", "none")

#: Variables kept by the ``core_only`` policy (plus every ``LC_*``).
CORE_ENV_VARS: tuple[str, ...] = (
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TERM", "TMPDIR", "TZ", "PWD",
    "GOPATH", "GOROOT", "CARGO_HOME", "RUSTUP_HOME", "NVM_DIR", "NODE_PATH", "PYENV_ROOT",
    "VIRTUAL_ENV", "CONDA_PREFIX", "JAVA_HOME", "GEM_HOME", "GEM_PATH", "DENO_DIR", "BUN_INSTALL",
)

_WORD_ENDINGS = ("SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE", "TOKEN", "TOKENS",
                 "CREDENTIAL", "CREDENTIALS", "APIKEY", "APIKEYS", "PWD")
_WHOLE_WORDS = frozenset({"KEY", "KEYS", "PRIVATE", "AUTH", "PASS", "PAT", "CREDS", "DSN", "WEBHOOK", "SAS"})
_SECRET_NAMES = frozenset({"DATABASE_URL", "DATABASE_URI", "DB_URL", "DB_URI"})
_KEPT_NAMES = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK"})
_URL_WITH_PASSWORD = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:[^/\s@]+@")
_CONNECTION_SECRET = re.compile(r"(?i)(?:^|;)\s*(?:password|pwd|accountkey|sharedaccesskey)\s*=")
_WORD_SPLIT = re.compile(r"[^A-Z0-9]+")


def is_secret_variable(name: str, value: str = "") -> bool:
    """True when the variable ``name`` (with ``value``) looks like it carries a credential."""
    upper = name.upper()
    if upper in _KEPT_NAMES:
        return False
    if upper in _SECRET_NAMES or any(upper.endswith("_" + n) for n in _SECRET_NAMES) or "CONNECTION_STRING" in upper:
        return True
    for word in _WORD_SPLIT.split(upper):
        if word in _WHOLE_WORDS or word.endswith(_WORD_ENDINGS):
            return True
    return bool(_URL_WITH_PASSWORD.search(value) or _CONNECTION_SECRET.search(value))


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
