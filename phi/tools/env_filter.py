"""The environment a command sees (SPEC §9.1 "Environment filtering").

A policy (``inherit_all``, ``core_only``, ``none``) chooses which variables are passed on; under
every policy, variables that look like secrets are removed. "Looks like a secret" is a rule over the
variable's name split into words at ``_`` (and any other non-alphanumeric character), plus a look at
its value:

* a word that is, or ends with, ``SECRET``, ``PASSWORD``, ``PASSWD``, ``PASSPHRASE``, ``TOKEN``,
  ``CREDENTIAL``, ``APIKEY``, ``PWD``, ``KEY`` (plural forms too) or ``KEYFILE``/``PASSFILE``/
  ``TOKENFILE`` — so ``PGPASSWORD``, ``GH_TOKEN``, ``MYSQL_PWD``, ``OPENAIAPIKEY``, ``SSHKEY``,
  ``GOOGLE_KEYFILE``;
* a word that is exactly ``PRIVATE``, ``AUTH``, ``PASS``, ``PAT``, ``CREDS``, ``DSN``, ``WEBHOOK``,
  ``SAS``, ``SK``/``RK`` (Stripe's key names), ``JWT``, ``AUTHORIZATION``, ``BEARER``, ``COOKIE``,
  or ``HMAC`` — so ``AWS_ACCESS_KEY_ID``, ``BASIC_AUTH``, ``SENTRY_DSN``, ``STRIPE_SK_LIVE``,
  but not ``KEYBOARD``, ``AUTHOR`` or ``TOKENIZERS_PARALLELISM``;
* the conventional connection-string names ``DATABASE_URL``/``_URI``, ``DB_URL``/``_URI``, any name
  containing ``CONNECTION_STRING``, and variables that point at credential files: ``KUBECONFIG``,
  ``NETRC``, ``PGPASSFILE``, ``SSLKEYLOGFILE``, ``BOTO_CONFIG``, ``DOCKER_CONFIG``, ...;
* any value that embeds credentials: a URL with ``user:password@`` (``HTTP_PROXY``,
  ``PIP_INDEX_URL``, ``REDIS_URL``, ...), a ``Password=``/``AccountKey=``-style connection string, or a
  value shaped like a well-known token (``sk_live_…``, ``ghp_…``, ``AKIA…``, ``xoxb-…``, a JWT, a
  PEM private key, ...).

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
                 "CREDENTIAL", "CREDENTIALS", "APIKEY", "APIKEYS", "PWD", "KEY", "KEYS", "KEYFILE", "PASSFILE",
                 "TOKENFILE", "SECRETFILE", "CREDFILE")
_WHOLE_WORDS = frozenset({"PRIVATE", "AUTH", "PASS", "PAT", "CREDS", "DSN", "WEBHOOK", "SAS", "SK", "RK", "JWT",
                          "AUTHORIZATION", "BEARER", "COOKIE", "HMAC", "KUBECONFIG", "NETRC"})
#: names of variables that point at credential files (``KUBECONFIG``, ``NETRC``, ...)
_SECRET_NAMES = frozenset({"DATABASE_URL", "DATABASE_URI", "DB_URL", "DB_URI", "KUBECONFIG", "NETRC",
                           "PGPASSFILE", "SSLKEYLOGFILE", "BOTO_CONFIG", "DOCKER_CONFIG", "GIT_CREDENTIALS",
                           "REGISTRY_AUTH_FILE", "VAULT_CONFIG_PATH"})
#: values shaped like well-known credentials, whatever the variable is called
_TOKEN_VALUE = re.compile(
    r"(?:^|[^A-Za-z0-9])(?:"
    r"[sr]k_(?:live|test)_[0-9A-Za-z]{10,}"          # Stripe secret / restricted keys
    r"|sk-(?:proj-|ant-|live-)?[A-Za-z0-9_\-]{20,}"  # OpenAI, Anthropic
    r"|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}"  # GitHub
    r"|glpat-[A-Za-z0-9_\-]{20,}"                     # GitLab
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"                 # Slack
    r"|(?:AKIA|ASIA)[0-9A-Z]{16}"                     # AWS access key ids
    r"|AIza[0-9A-Za-z_\-]{35}"                        # Google API keys
    r"|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36}|pypi-[A-Za-z0-9_\-]{50,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\."  # a JSON web token
    r")|-----BEGIN [A-Z ]*PRIVATE KEY-----")
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
    return bool(_URL_WITH_PASSWORD.search(value) or _CONNECTION_SECRET.search(value) or _TOKEN_VALUE.search(value))


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
