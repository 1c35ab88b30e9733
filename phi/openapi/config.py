"""Settings of the OpenAPI adapter: config, auth, operation filters, the error type (SPEC §12.2).

Credentials are redacted as ``****`` wherever these objects are shown (``repr``/``str``), and every
secret they hold is listed by :meth:`OpenApiConfig.secrets` so that result texts, error messages
and logs can be scrubbed of it (OAPI-10). Values are checked when the objects are made: a secret
is stripped of surrounding whitespace and refused (:class:`~phi.errors.ConfigError`, naming the
position, never the value) if a control character remains inside.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Iterable, Literal, Mapping, Union

from ..errors import ConfigError, PhiError
from ..providers.secret_registry import SECRETS
from ..providers.secrets import check_secret, is_sensitive_header

REDACTED = "****"


class OpenApiError(PhiError):
    """An OpenAPI document phi cannot turn into tools: unparseable, not OpenAPI 3.x, a ``$ref``
    that does not resolve, no server URL and no ``base_url`` (OAPI-1, OAPI-5, OAPI-6)."""


def _secret(value: str, what: str) -> str:
    checked = check_secret(value, what)
    if not checked:
        raise ConfigError(f"{what} is empty")
    return checked


@dataclass(frozen=True)
class BearerAuth:
    """``Authorization: Bearer {token}``."""

    token: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "token", _secret(self.token, "BearerAuth token"))

    def __repr__(self) -> str:
        return f'BearerAuth(token="{REDACTED}")'

    def secrets(self) -> tuple[str, ...]:
        return (self.token,)


@dataclass(frozen=True)
class ApiKeyAuth:
    """An API key sent as the header ``name`` (``location="header"``) or as the query parameter
    ``name`` (``location="query"``)."""

    name: str
    value: str
    location: Literal["header", "query"] = "header"

    def __post_init__(self) -> None:
        # callers without a type checker pass anything
        if not isinstance(self.name, str) or not self.name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError("ApiKeyAuth name must be a non-empty header or query parameter name")
        if self.location not in ("header", "query"):
            raise ConfigError(f"ApiKeyAuth location must be 'header' or 'query', not {self.location!r}")
        object.__setattr__(self, "name", self.name.strip())
        object.__setattr__(self, "value", _secret(self.value, f"ApiKeyAuth value of {self.name!r}"))

    def __repr__(self) -> str:
        return f'ApiKeyAuth(name={self.name!r}, value="{REDACTED}", location={self.location!r})'

    def secrets(self) -> tuple[str, ...]:
        return (self.value,)


@dataclass(frozen=True)
class BasicAuth:
    """``Authorization: Basic base64(username:password)`` (RFC 7617, UTF-8)."""

    username: str
    password: str

    def __post_init__(self) -> None:
        # callers without a type checker pass anything
        if not isinstance(self.username, str) or ":" in self.username:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError("BasicAuth username must be a string without ':' (RFC 7617)")
        object.__setattr__(self, "password", _secret(self.password, "BasicAuth password"))

    def __repr__(self) -> str:
        return f'BasicAuth(username={self.username!r}, password="{REDACTED}")'

    def credentials(self) -> str:
        """The base64 token of the ``Authorization`` header (itself a secret)."""
        return base64.b64encode(f"{self.username}:{self.password}".encode("utf-8")).decode("ascii")

    def secrets(self) -> tuple[str, ...]:
        return (self.password, self.credentials())


OpenApiAuth = Union[BearerAuth, ApiKeyAuth, BasicAuth]


@dataclass
class OpenApiConfig:
    """How the tools of one OpenAPI document are made and how they call the API.

    ``base_url`` overrides the document's servers; ``server_variables`` fill ``{name}`` in a server
    URL (over each variable's ``default``); ``name_prefix`` makes tool names
    ``{prefix}__{operationId}``; ``max_response_bytes`` caps the response body shown to the model
    (cut on a UTF-8 boundary); ``timeout_secs`` bounds each request, connecting included;
    ``max_description_chars`` caps a tool's description; ``max_schema_bytes`` (None: no limit) is
    the size above which a tool's argument schema is shortened (see :mod:`phi.openapi.budget`).
    """

    base_url: str | None = None
    auth: OpenApiAuth | None = None
    custom_headers: Mapping[str, str] = field(default_factory=dict[str, str])
    max_response_bytes: int = 65536
    timeout_secs: float = 30.0
    name_prefix: str | None = None
    server_variables: Mapping[str, str] = field(default_factory=dict[str, str])
    max_description_chars: int = 1024
    max_schema_bytes: int | None = 32768

    def __post_init__(self) -> None:
        # every check stays: callers without a type checker pass anything
        if self.auth is not None and not isinstance(  # pyright: ignore[reportUnnecessaryIsInstance]
                self.auth, (BearerAuth, ApiKeyAuth, BasicAuth)):
            raise ConfigError(f"auth must be BearerAuth, ApiKeyAuth or BasicAuth, not {type(self.auth).__name__}")
        if (isinstance(self.max_response_bytes, bool)
                or not isinstance(self.max_response_bytes, int)  # pyright: ignore[reportUnnecessaryIsInstance]
                or self.max_response_bytes < 1):
            raise ConfigError(f"max_response_bytes must be a positive integer, not {self.max_response_bytes!r}")
        if (isinstance(self.timeout_secs, bool)
                or not isinstance(self.timeout_secs, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]
                or not 0 < self.timeout_secs < float("inf")):
            raise ConfigError(f"timeout_secs must be a positive number of seconds, not {self.timeout_secs!r}")
        if self.max_description_chars < 16:
            raise ConfigError("max_description_chars must be at least 16")
        if self.max_schema_bytes is not None and self.max_schema_bytes < 256:
            raise ConfigError("max_schema_bytes must be at least 256 (or None for no limit)")
        headers: dict[str, str] = {}
        for name, value in dict(self.custom_headers).items():
            if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ConfigError(f"custom header names must be non-empty strings, not {name!r}")
            headers[name.strip()] = check_secret(str(value), f"custom header {name!r}") or ""
        self.custom_headers = headers
        self.server_variables = {str(k): str(v) for k, v in dict(self.server_variables).items()}
        if self.base_url is not None and not str(self.base_url).strip():
            raise ConfigError("base_url is empty; leave it None to use the document's servers")
        SECRETS.register_all(self.secrets())  # kept out of traces, logs and files too (OTEL-11)

    def secrets(self) -> tuple[str, ...]:
        """Every value to scrub from texts: the auth's secrets and credential-like custom headers."""
        found: list[str] = list(self.auth.secrets()) if self.auth is not None else []
        found += [v for k, v in self.custom_headers.items() if v and is_sensitive_header(k)]
        return tuple(dict.fromkeys(found))

    def __repr__(self) -> str:
        headers = {k: (REDACTED if is_sensitive_header(k) else v) for k, v in self.custom_headers.items()}
        return (f"OpenApiConfig(base_url={self.base_url!r}, auth={self.auth!r}, custom_headers={headers!r}, "
                f"max_response_bytes={self.max_response_bytes}, timeout_secs={self.timeout_secs}, "
                f"name_prefix={self.name_prefix!r}, server_variables={self.server_variables!r}, "
                f"max_description_chars={self.max_description_chars}, max_schema_bytes={self.max_schema_bytes})")


@dataclass(frozen=True)
class OperationFilter:
    """Which operations become tools (OAPI-2). Make one with :meth:`all`, :meth:`by_operation_id`,
    :meth:`by_tag` or :meth:`by_path_prefix`."""

    kind: Literal["all", "operation_id", "tag", "path_prefix"] = "all"
    values: tuple[str, ...] = ()

    @classmethod
    def all(cls) -> OperationFilter:
        """Every operation that has an ``operationId``."""
        return cls("all")

    @classmethod
    def by_operation_id(cls, ids: Iterable[str]) -> OperationFilter:
        """Operations whose ``operationId`` is one of ``ids`` (ids not in the document are logged)."""
        return cls("operation_id", _strings(ids, "by_operation_id"))

    @classmethod
    def by_tag(cls, tags: Iterable[str]) -> OperationFilter:
        """Operations tagged with any of ``tags``."""
        return cls("tag", _strings(tags, "by_tag"))

    @classmethod
    def by_path_prefix(cls, prefix: str) -> OperationFilter:
        """Operations whose path template starts with ``prefix`` (plain string prefix: ``/pet``
        also matches ``/pets``; write ``/pet/`` for the sub-paths of ``/pet`` only)."""
        if not isinstance(prefix, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
            raise ConfigError(f"by_path_prefix takes a string, not {type(prefix).__name__}")
        return cls("path_prefix", (prefix,))

    def matches(self, operation_id: str, path: str, tags: Iterable[str]) -> bool:
        if self.kind == "all":
            return True
        if self.kind == "operation_id":
            return operation_id in self.values
        if self.kind == "tag":
            return any(tag in self.values for tag in tags)
        return path.startswith(self.values[0])


def _strings(values: Iterable[str], what: str) -> tuple[str, ...]:
    if isinstance(values, str):
        return (values,)
    out = tuple(values)
    if not all(isinstance(v, str) for v in out):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers
        raise ConfigError(f"{what} takes strings")
    return out
