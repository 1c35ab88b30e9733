"""What keeps secrets out of every exported span (SPEC §17 OTEL-3; DESIGN §8 "Secrets never appear").

Every string the tracer writes — attribute values, status descriptions, event attributes — goes
through a :class:`Scrubber` first, whether content capture is on or off:

* values of this process's environment variables whose names say they hold a credential
  (:func:`phi.tools.env_filter.is_secret_variable`: ``ANTHROPIC_API_KEY``, ``GH_TOKEN``, ...) and the
  secrets the application names (``OtelTracer(secrets=[...])``), in each form a secret takes in text
  (raw, JSON- and percent-encoded: :func:`phi.providers.secrets.secret_forms`);
* text shaped like a well-known credential, whoever wrote it: ``sk-…`` keys, AWS key ids, GitHub,
  Slack and Google tokens, the value after ``Bearer``, the password in ``scheme://user:pass@host``;
* in JSON data (tool arguments), every string under a key named like a secret (``api_key``,
  ``password``, ``token``; the same word rule as for environment variables).
"""

from __future__ import annotations

import os
import re
from typing import Any, Iterable, Mapping

from ..providers.secrets import MIN_SECRET, REDACTED, secret_forms
from ..tools.env_filter import is_secret_variable

_MIN_ENVIRONMENT_SECRET = 8  # "1", "true", "dev" would match everywhere

_CREDENTIAL_SHAPES = re.compile(
    r"\bsk-[A-Za-z0-9_\-]{16,}"             # OpenAI, Anthropic and look-alike API keys
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"       # AWS access key ids
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}"        # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{30,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{10,}"     # Slack tokens
    r"|\bAIza[0-9A-Za-z_\-]{35}"            # Google API keys
)
_AFTER_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*")
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*://[^/\s:@]*:)[^/\s@]+(@)")


class Scrubber:
    """Cleans text and JSON data of secrets (see the module docstring). Built once per tracer: the
    environment is read when it is made."""

    def __init__(self, secrets: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        env = os.environ if environ is None else environ
        known = {value.strip() for name, value in env.items()
                 if len(value.strip()) >= _MIN_ENVIRONMENT_SECRET and is_secret_variable(name, value)}
        known |= {secret.strip() for secret in secrets if secret and len(secret.strip()) >= MIN_SECRET}
        forms: set[str] = set()
        for secret in known:
            forms |= secret_forms(secret)
        alternatives = sorted(forms, key=len, reverse=True)  # a longer form may contain a shorter one
        self._known = re.compile("|".join(map(re.escape, alternatives))) if alternatives else None
        self.count = len(known)

    def __repr__(self) -> str:
        return f"Scrubber({self.count} secret(s))"

    def text(self, value: str) -> str:
        """``value`` with every known secret and credential-shaped piece replaced by ``***``."""
        if self._known is not None:
            value = self._known.sub(REDACTED, value)
        value = _CREDENTIAL_SHAPES.sub(REDACTED, value)
        value = _AFTER_BEARER.sub(lambda m: m.group(1) + REDACTED, value)
        return _URL_PASSWORD.sub(lambda m: m.group(1) + REDACTED + m.group(2), value)

    def data(self, value: Any) -> Any:
        """JSON data with its strings cleaned and the strings under secret-named keys replaced."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(key)): REDACTED if isinstance(item, str) and item and is_secret_variable(str(key))
                    else self.data(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.data(item) for item in value]
        return value
