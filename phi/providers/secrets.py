"""Key hygiene and scrubbing (SPEC §7: authentication; DESIGN §8 "Secrets never appear ...").

Two rules, applied wherever a secret enters or an error text leaves the providers:

* **Clean on the way in.** A key is stripped of surrounding whitespace when configured
  (``ModelConfig``) and again when resolved for a call (explicit key, ``get_api_key`` result or
  environment variable), so the ``"sk-...\\n"`` of a key file or a CRLF ``.env`` works. A key with
  a control character *inside* is refused with an error that names its position, never its value;
  so is a key with a character that is not ASCII (a smart quote or a non-breaking space pasted
  from a web page: HTTP cannot carry it, and no service issues such keys), and a header value
  with a character HTTP cannot carry at all (beyond Latin-1).
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


def check_secret(value: str | None, what: str, *, ascii_only: bool = False) -> str | None:
    """``value`` without surrounding whitespace (``None`` if nothing is left).

    Raises :class:`ConfigError` when a control character remains inside, or a character an HTTP
    header cannot carry (beyond Latin-1; with ``ascii_only``, as for API keys, anything not
    ASCII). The message names ``what`` and says where, never what the value is.
    """
    if value is None:
        return None
    if not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # config files, untyped callers
        raise ConfigError(f"{what} must be a string, not {type(value).__name__}")
    value = value.strip()
    found = _CONTROL.search(value)
    if found is not None:
        raise ConfigError(f"{what} contains a control character (U+{ord(found.group()):04X} at position "
                          f"{found.start() + 1} of {len(value)}); a key read from a file or a .env line must "
                          f"be a single line")
    if value.isascii():
        return value or None
    limit = 0x7F if ascii_only else 0xFF
    for position, char in enumerate(value):
        if ord(char) > limit:
            kind = "a non-ASCII character" if ascii_only else "a character HTTP headers cannot carry"
            raise ConfigError(f"{what} contains {kind} (U+{ord(char):04X} at position {position + 1} of "
                              f"{len(value)}), often a quote or space pasted from a web page or a word "
                              f"processor; copy the value again as plain text")
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
