"""Keeping secrets out of text phi writes for people and other tools (DESIGN §8 "Secrets never appear";
used by the session export, SPEC §16 EXPORT-4, and the trace exporter, SPEC §17 OTEL-3, OTEL-11).

A :class:`Redactor` cleans strings and JSON data:

* every secret phi knows of (:mod:`phi.providers.secret_registry`: the keys of configs, providers and
  MCP servers, the values of environment variables that look like credentials), the values of the
  given ``environ``'s credential-like variables, and the secrets the caller names (registered too,
  so they stay out of logs and session files as well), in every form a secret may take (raw,
  JSON-escaped, percent-encoded — :func:`phi.providers.secrets.secret_forms`);
* strings that have the shape of well-known credentials whatever their origin (``sk-…`` keys,
  AWS access key ids, GitHub and Slack tokens, Google API keys, ``Bearer`` values, the password of a
  ``scheme://user:password@host`` URL);
* in JSON data (tool arguments, details, metadata) the string values of keys named like secrets
  (``api_key``, ``password``, ``authorization`` — the same word rule as environment variables).
"""

from __future__ import annotations

import re
from typing import Iterable, Mapping, cast

from ..providers.secret_names import is_secret_variable
from ..providers.secret_registry import SECRETS
from ..providers.secrets import MIN_SECRET, REDACTED, secret_forms

_MIN_ENV_SECRET = 8  # shorter variable values ("1", "true") would match everywhere

_SHAPES = re.compile(
    r"\bsk-(?:ant-|proj-)?[A-Za-z0-9_\-]{16,}"          # OpenAI / Anthropic style keys
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"                   # AWS access key ids (long-term, temporary)
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"                    # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"                 # Slack tokens
    r"|\bAIza[0-9A-Za-z_\-]{35}"                        # Google API keys
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*")
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)[^/\s@]+(@)")


class Redactor:
    """Cleans strings and JSON data of secrets; see the module docstring."""

    def __init__(self, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        # os.environ's credential-like values are the registry's; another environ's are added here
        found: set[str] = set()
        if environ is not None:
            found = {value for name, value in environ.items()
                     if len(value.strip()) >= _MIN_ENV_SECRET and is_secret_variable(name, value)}
        named = {s for s in secrets if s}
        SECRETS.register_all(named)
        self.secrets = sorted(found | named, key=len, reverse=True)
        forms: set[str] = set()
        for secret in self.secrets:  # every form scrub() knows, matched in one pass per string
            forms |= secret_forms(secret)
            if len(secret.strip()) >= MIN_SECRET:
                forms |= secret_forms(secret.strip())
        alternatives = sorted(forms, key=len, reverse=True)  # longest first: a form may contain another
        self._known = re.compile("|".join(map(re.escape, alternatives))) if alternatives else None

    def __repr__(self) -> str:
        return f"Redactor({len(self.secrets)} secret(s))"

    def text(self, value: str) -> str:
        """``value`` with every known secret and credential-shaped string replaced by ``***``."""
        value = SECRETS.redact(value)
        if self._known is not None:
            value = self._known.sub(REDACTED, value)
        value = _SHAPES.sub(REDACTED, value)
        value = _BEARER.sub(lambda m: m.group(1) + REDACTED, value)
        return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), value)

    def data(self, value: object) -> object:
        """JSON data with every string cleaned and string values of secret-named keys replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            mapping = cast("Mapping[object, object]", value)  # any keys: each is turned into a str
            return {self.text(str(k)): (REDACTED if isinstance(v, str) and v and is_secret_variable(str(k))
                                        else self.data(v)) for k, v in mapping.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(item) for item in cast("list[object] | tuple[object, ...]", value)]
        return value
