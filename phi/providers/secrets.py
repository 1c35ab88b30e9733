"""Key hygiene and scrubbing (SPEC §7: authentication; DESIGN §8 "Secrets never appear ...").

Two rules, applied wherever a secret enters or an error text leaves the providers:

* **Clean on the way in.** A key is stripped of surrounding whitespace when configured
  (``ModelConfig``) and again when resolved for a call (explicit key, ``get_api_key`` result or
  environment variable), so the ``"sk-...\\n"`` of a key file or a CRLF ``.env`` works. A key with
  a control character *inside* is refused with an error that names its position, never its value.
* **Scrub every representation on the way out.** Error texts are cleaned of each secret as it may
  appear there: raw, JSON-escaped, ``repr``-escaped and percent-encoded (``quote`` and
  ``quote_plus``), since a server or a library may echo any of them.

Standard library only, so :mod:`phi.providers.model_config` can use it without importing requests.
"""

from __future__ import annotations

import json
import re
from typing import Iterable
from urllib.parse import quote, quote_plus

from ..errors import ConfigError

REDACTED = "***"
MIN_SECRET = 4  # shorter values are not treated as secrets (they would match everywhere)

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_SENSITIVE_HEADER = re.compile(r"auth|key|token|secret|signature|cookie|session|password", re.IGNORECASE)


def check_secret(value: str | None, what: str) -> str | None:
    """``value`` without surrounding whitespace (``None`` if nothing is left).

    Raises :class:`ConfigError` when a control character remains inside; the message says where,
    not what the value is.
    """
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{what} must be a string, not {type(value).__name__}")
    value = value.strip()
    found = _CONTROL.search(value)
    if found is not None:
        raise ConfigError(f"{what} contains a control character (U+{ord(found.group()):04X} at position "
                          f"{found.start() + 1} of {len(value)}); a key read from a file or a .env line must "
                          f"be a single line")
    return value or None


def check_headers(headers: dict[str, str], what: str) -> dict[str, str]:
    """Header values checked like keys (a header may carry a credential): stripped, no control
    characters. Names are kept; values that strip to nothing become empty strings."""
    return {name: check_secret(str(value), f"{what} {name!r}") or "" for name, value in headers.items()}


def is_sensitive_header(name: str) -> bool:
    """Header names whose values are credentials (authorization, x-api-key, x-goog-api-key, ...)."""
    return _SENSITIVE_HEADER.search(name) is not None


def secret_forms(secret: str) -> set[str]:
    """The ways ``secret`` can show up in text: raw, JSON- and repr-escaped, percent-encoded."""
    forms = {
        secret,
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
        repr(secret)[1:-1],
        quote(secret, safe=""),
        quote(secret),
        quote_plus(secret),
    }
    return {form for form in forms if len(form) >= MIN_SECRET}


def scrub(text: str, secrets: Iterable[str], replacement: str = REDACTED) -> str:
    """``text`` with every representation of every secret replaced by ``replacement`` (``***``)."""
    forms: set[str] = set()
    for secret in secrets:
        if secret and len(secret) >= MIN_SECRET:
            forms |= secret_forms(secret)
            stripped = secret.strip()
            if len(stripped) >= MIN_SECRET:
                forms |= secret_forms(stripped)
    for form in sorted(forms, key=len, reverse=True):  # longest first: a form may contain another
        if form in text:
            text = text.replace(form, replacement)
    return text
