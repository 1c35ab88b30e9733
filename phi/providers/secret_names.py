"""Which environment variables carry credentials (SPEC §9.1 "Environment filtering", §12.1 MCP-20,
§17 OTEL-11): the one rule the shell tools' environment filter, MCP stdio servers and the registry of
secrets phi knows of (:mod:`phi.providers.secret_registry`) share. Standard library only.

"Looks like a secret" is a rule over the variable's name split into words at ``_`` (and any other
non-alphanumeric character), plus a look at its value:

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

``PWD``, ``OLDPWD`` and ``SSH_AUTH_SOCK`` (a socket path git needs) are not secrets. The rule errs
on the side of caution: a harmless ``PUBLIC_KEY`` counts too.
"""

from __future__ import annotations

import re

__all__ = ["is_secret_variable"]

_WORD_ENDINGS = ("SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASSPHRASE", "TOKEN", "TOKENS",
                 "CREDENTIAL", "CREDENTIALS", "APIKEY", "APIKEYS", "PWD", "KEY", "KEYS", "KEYFILE", "PASSFILE",
                 "TOKENFILE", "SECRETFILE", "CREDFILE")
_WHOLE_WORDS = frozenset({"PRIVATE", "AUTH", "PASS", "PAT", "CREDS", "DSN", "WEBHOOK", "SAS", "SK", "RK", "JWT",
                          "AUTHORIZATION", "BEARER", "COOKIE", "HMAC", "KUBECONFIG", "NETRC",
                          "HEADERS"})  # HEADERS: OTEL_EXPORTER_OTLP_HEADERS and the like carry API keys
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
