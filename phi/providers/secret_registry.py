"""The secrets phi knows of, and the one function that takes them out of everything phi lets out
(SPEC §17 OTEL-11 "Secrets never leave"; DESIGN §8 "Secrets never appear").

What is known:

* every value phi is given or resolves as a credential, registered where it comes in: a
  ``ModelConfig``'s ``api_key`` (so ``Agent(api_key=...)``) and its credential-like headers, the key
  a call resolves (``get_api_key``, or the environment variable a provider reads), the credential-like
  headers and URL password of every provider request (:class:`phi.providers.http.HttpRequest`), an MCP
  server's credential-like headers, URL password, environment entries and options, an OpenAPI
  toolset's credentials, and the secrets an application names (``OtelTracer(secrets=...)``,
  :func:`register_secret`);
* the values of this process's environment variables that look like credentials
  (:func:`phi.providers.secret_names.is_secret_variable`), read again whenever the number of
  variables or the value of one of those changes.

:func:`redact` replaces each of them, in every form it takes in text (raw, JSON- and repr-escaped,
percent-encoded: :func:`phi.providers.secrets.secret_forms`), by ``***``; :func:`redact_data` does it
to every string (object keys too) of JSON data; :func:`redact_encoded` to JSON data already encoded,
encoding again only when a secret is in it. They are applied where bytes leave phi: span names,
attributes and statuses, the ``--json`` event lines, session files, the HTML export, agent snapshots
and the records of phi's loggers (installed here into :mod:`phi.log`).

Rules of the registry:

* a value shorter than :data:`MIN_LENGTH` (8) characters once stripped is not registered: it would
  replace ordinary words;
* at most :data:`CAPACITY` (512) registered values are kept; the one registered or used least
  recently is forgotten first. phi registers a key again at every call that uses it, so a process
  that makes many agents with different keys keeps the ones in use and holds bounded memory;
* registering is thread-safe, and the values never show in ``repr``/``str`` (only how many there are).

Exact occurrences only: a secret split across two strings, or encoded some other way (base64), is
not found. The redaction for pages and traces (:class:`phi.tools.redact.Redactor`) adds credential
shapes and secret-named keys on top of this one.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from typing import Callable, Iterable, Mapping, TypeVar, cast
from urllib.parse import parse_qsl, urlsplit

from ..log import redact_record, redact_records_with
from .secret_names import is_secret_variable
from .secrets import REDACTED, is_sensitive_header, secret_forms

__all__ = ["CAPACITY", "MIN_LENGTH", "SECRETS", "SecretRegistry", "redact", "redact_data", "redact_encoded",
           "register_secret"]

MIN_LENGTH = 8
CAPACITY = 512

T = TypeVar("T")
_Compiled = tuple[tuple[int, int], "re.Pattern[str] | None", "re.Pattern[str] | None"]


class SecretRegistry:
    """A bounded, thread-safe set of secrets and the redaction that follows from it (see the module
    docstring). ``environ``: the environment whose credential-like values are known too (default:
    ``os.environ``; ``{}`` for none)."""

    def __init__(self, capacity: int = CAPACITY, min_length: int = MIN_LENGTH,
                 environ: Mapping[str, str] | None = None) -> None:
        self.capacity, self.min_length = capacity, min_length
        self._environ = environ
        self._lock = threading.Lock()
        self._values: OrderedDict[str, None] = OrderedDict()  # oldest use first
        self._generation = 0  # changes when a value comes or goes (not when one is used again)
        self._env_seen: tuple[int, tuple[str | None, ...]] | None = None  # what the last scan looked at
        self._env_names: tuple[str, ...] = ()
        self._env_values: frozenset[str] = frozenset()
        self._env_generation = 0
        self._compiled: _Compiled | None = None  # replaced whole, never changed: read without the lock

    def __repr__(self) -> str:
        return f"SecretRegistry({len(self._values)} registered, {len(self._env_values)} from the environment)"

    def __len__(self) -> int:
        return len(self._values)

    # ----------------------------------------------------------------- what is known

    def register(self, value: object) -> None:
        """Know ``value`` (stripped) from now on; a non-string, or one shorter than ``min_length``, is
        ignored. Registering a known value again marks it as the most recently used."""
        if not isinstance(value, str):
            return
        value = value.strip()
        if len(value) < self.min_length:
            return
        with self._lock:
            if value in self._values:
                self._values.move_to_end(value)
                return
            self._values[value] = None
            while len(self._values) > self.capacity:
                self._values.popitem(last=False)
            self._generation += 1

    def register_all(self, values: Iterable[object]) -> None:
        for value in values:
            self.register(value)

    def register_headers(self, headers: Mapping[str, str]) -> None:
        """The values of credential-like headers (``Authorization``, ``x-api-key``, ...), and the
        credential of an ``Authorization: Bearer X`` (or ``Basic X``, ``token X``) on its own."""
        for name, value in headers.items():
            if is_sensitive_header(str(name)):
                self.register(value)
                scheme, _, credential = str(value).strip().partition(" ")
                if credential and scheme.isalpha():
                    self.register(credential)

    def register_url(self, url: str) -> None:
        """The password of ``scheme://user:password@host`` and the values of credential-like query
        parameters (``?api_key=...``, ``&token=...``); urllib3's request lines are redacted from then
        on (it logs each URL, query string included, at DEBUG)."""
        _guard_urllib3()
        try:
            parts = urlsplit(url)
            password = parts.password
        except ValueError:  # not a URL after all
            return
        self.register(password)
        for name, value in parse_qsl(parts.query, keep_blank_values=False):
            if is_sensitive_header(name):
                self.register(value)

    def discard(self, value: str) -> None:
        """Forget a registered value (a rotated key that may now appear as plain text)."""
        with self._lock:
            if value.strip() in self._values:
                del self._values[value.strip()]
                self._generation += 1

    # ----------------------------------------------------------------- redaction

    def redact(self, text: str) -> str:
        """``text`` with every form of every known secret replaced by ``***``."""
        pattern = self._patterns()[1]
        return text if pattern is None else pattern.sub(REDACTED, text)

    def redact_data(self, value: T) -> T:
        """A copy of JSON data (``dict``/``list``/``tuple``/scalars) with every string redacted,
        object keys included (the data itself when no secret is known at all)."""
        pattern = self._patterns()[1]
        return value if pattern is None else cast(T, _walk(value, lambda text: pattern.sub(REDACTED, text)))

    def redact_encoded(self, data: T, text: str, encode: Callable[[T], str]) -> tuple[T, str]:
        """``(data, text)`` for JSON data and ``text``, its encoding by ``encode`` (JSON, escaping
        only what JSON must, as ``ensure_ascii=False`` does): unchanged when no secret shows in
        ``text``, else the data redacted and encoded again. Cheaper than :meth:`redact_data` when
        there is nothing to find, and unlike a replacement inside ``text`` it cannot break the
        JSON (a secret that starts with ``n`` after a backslash)."""
        escaped = self._patterns()[2]
        if escaped is None or escaped.search(text) is None:
            return data, text
        cleaned = self.redact_data(data)
        return cleaned, encode(cleaned)

    def _patterns(self) -> _Compiled:
        """``(key, forms, forms as JSON escapes them)``, compiled again only when what is known changed."""
        self._scan_environment()
        compiled = self._compiled
        key = (self._generation, self._env_generation)
        if compiled is not None and compiled[0] == key:
            return compiled
        with self._lock:
            key = (self._generation, self._env_generation)
            values = [*self._values, *self._env_values]
        forms: set[str] = set()
        for value in values:
            forms |= secret_forms(value)
        escaped = {json.dumps(form, ensure_ascii=False)[1:-1] for form in forms}
        compiled = (key, _alternatives(forms), _alternatives(escaped))
        self._compiled = compiled
        return compiled

    def _scan_environment(self) -> None:
        """Read the credential-like values of the environment again when it has changed: another
        number of variables, or another value of one found before."""
        env = os.environ if self._environ is None else self._environ
        try:
            seen = (len(env), tuple(env.get(name) for name in self._env_names))
            if seen == self._env_seen:
                return
            found = {name: value.strip() for name, value in list(env.items())
                     if len(value.strip()) >= self.min_length and is_secret_variable(name, value)}
        except RuntimeError:  # changed while being read by another thread: read it at the next call
            return
        names = tuple(sorted(found))
        values = frozenset(found.values()) | frozenset(
            part for name, value in found.items() if "HEADERS" in name.upper() for part in _header_values(value)
            if len(part) >= self.min_length)
        with self._lock:
            self._env_names = names
            self._env_seen = (len(env), tuple(env.get(name) for name in names))
            if values != self._env_values:
                self._env_values = values
                self._env_generation += 1


_urllib3_guarded = False


def _guard_urllib3() -> None:
    global _urllib3_guarded
    if not _urllib3_guarded:
        import logging

        logging.getLogger("urllib3.connectionpool").addFilter(redact_record)
        _urllib3_guarded = True


def _header_values(value: str) -> list[str]:
    """The values of ``name=value,name2=value2`` (``OTEL_EXPORTER_OTLP_HEADERS``), percent-decoded."""
    from urllib.parse import unquote

    return [unquote(pair.partition("=")[2]).strip() for pair in value.split(",") if "=" in pair]


def _alternatives(forms: set[str]) -> re.Pattern[str] | None:
    # longest first: one form may contain another (a key and the same key with its prefix)
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(map(re.escape, ordered))) if ordered else None


def _walk(value: object, clean: Callable[[str], str]) -> object:
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        items = cast("dict[object, object]", value).items()
        return {clean(k) if isinstance(k, str) else k: _walk(v, clean) for k, v in items}
    if isinstance(value, list):
        return [_walk(item, clean) for item in cast("list[object]", value)]
    if isinstance(value, tuple):
        return tuple(_walk(item, clean) for item in cast("tuple[object, ...]", value))
    return value


#: The process's registry: every part of phi registers into it and redacts with it.
SECRETS = SecretRegistry()


def register_secret(value: str | None) -> None:
    """Make ``value`` a secret phi keeps out of traces, logs, session files, event lines and exports
    (for credentials phi cannot see: a database password a tool uses, a webhook URL's token)."""
    SECRETS.register(value)


def redact(text: str) -> str:
    """:meth:`SecretRegistry.redact` of the process's registry."""
    return SECRETS.redact(text)


def redact_data(value: T) -> T:
    """:meth:`SecretRegistry.redact_data` of the process's registry."""
    return SECRETS.redact_data(value)


def redact_encoded(data: T, text: str, encode: Callable[[T], str]) -> tuple[T, str]:
    """:meth:`SecretRegistry.redact_encoded` of the process's registry."""
    return SECRETS.redact_encoded(data, text, encode)


redact_records_with(redact)  # phi's loggers redact their records from now on
