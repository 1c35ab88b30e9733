"""Reading an OpenAPI document: JSON or YAML text to a checked mapping, local ``$ref`` lookups and
server URL resolution (SPEC §12.2, OAPI-1, OAPI-5, OAPI-6).

YAML is read the way OpenAPI 3.1 asks (YAML 1.2 core schema), not PyYAML's YAML 1.1 defaults:
``yes``/``no``/``on``/``off`` stay strings (they are real property names), dates stay strings (a
schema's ``default: 2024-01-01`` must stay JSON), and non-string mapping keys (``200:``) become
strings. JSON ``NaN``/``Infinity`` are refused: they are not JSON and no provider accepts them.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Iterator, Mapping, NoReturn, Protocol
from urllib.parse import unquote, urljoin, urlsplit

import yaml
from yaml.nodes import Node

from ..json_values import JsonObject, is_array, is_object
from .config import OpenApiError

if TYPE_CHECKING:
    _BaseLoader = yaml.SafeLoader  # the C loader, when there, has the same constructor and resolver API
else:
    _BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML12_BOOL = re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")
_DROPPED_TAGS = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:timestamp"}


class _Loader(_BaseLoader):
    """Safe loading with YAML 1.2 booleans, dates kept as text and string mapping keys."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag not in _DROPPED_TAGS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_Loader.add_implicit_resolver(  # pyright: ignore[reportUnknownMemberType]  # untyped in PyYAML's stubs
    "tag:yaml.org,2002:bool", _YAML12_BOOL, list("tTfF"))


class _Constructor(Protocol):
    """The loader's ``construct_object``, typed (PyYAML's stubs leave ``node`` unannotated)."""

    def construct_object(self, node: Node, deep: bool = False) -> Any: ...


def _construct(loader: _Constructor, node: Node) -> Any:
    return loader.construct_object(node, deep=False)


def _construct_map(loader: _Loader, node: yaml.MappingNode) -> Iterator[dict[str, Any]]:
    data: dict[str, Any] = {}
    yield data
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = _construct(loader, key_node)
        if not isinstance(key, str):
            key = json.dumps(key) if isinstance(key, (bool, type(None))) else str(key)
        data[key] = _construct(loader, value_node)


_Loader.add_constructor("tag:yaml.org,2002:map", _construct_map)


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def parse_document(text: str, source: str) -> dict[str, Any]:
    """The OpenAPI document in ``text``: JSON when the first non-blank character is ``{`` or ``[``,
    else YAML. Raises :class:`OpenApiError` naming ``source`` and what is wrong."""
    if not isinstance(text, str):  # pyright: ignore[reportUnnecessaryIsInstance]  # untyped callers of from_str
        raise OpenApiError(f"{source}: the spec must be text (str), not {type(text).__name__}")
    text = text.lstrip("\ufeff")
    stripped = text.lstrip()
    try:
        if stripped[:1] in ("{", "["):
            data = json.loads(text, parse_constant=_no_constant)
        else:
            data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a safe loader
    except json.JSONDecodeError as exc:
        raise OpenApiError(f"{source}: not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except yaml.YAMLError as exc:
        raise OpenApiError(f"{source}: not valid YAML: {_yaml_reason(exc)}") from None
    except (ValueError, RecursionError) as exc:
        raise OpenApiError(f"{source}: cannot read the document: {exc}") from None
    return check_version(data, source)


def _yaml_reason(exc: yaml.YAMLError) -> str:
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    if mark is not None:
        return f"{problem} at line {mark.line + 1} column {mark.column + 1}"
    return str(problem)


def check_version(data: Any, source: str) -> dict[str, Any]:
    """``data`` if it is an OpenAPI 3.x document with a ``paths`` mapping (or none)."""
    if not is_object(data):
        found = "empty" if data is None else f"a {type(data).__name__}"
        raise OpenApiError(f"{source}: an OpenAPI document is a mapping at the top level; this one is {found}")
    version = data.get("openapi")
    if version is None:
        if "swagger" in data:
            raise OpenApiError(f"{source}: Swagger {data['swagger']} (OpenAPI 2) is not supported; convert it "
                               "to OpenAPI 3 first (for example with swagger2openapi)")
        raise OpenApiError(f"{source}: no 'openapi' field; only OpenAPI 3.x documents are supported")
    if not str(version).startswith("3."):
        raise OpenApiError(f"{source}: OpenAPI version {version!r} is not supported; phi reads OpenAPI 3.x")
    paths = data.get("paths")
    if paths is not None and not is_object(paths):
        raise OpenApiError(f"{source}: 'paths' must be a mapping, not {type(paths).__name__}")
    return data


# --------------------------------------------------------------------------- $ref


def resolve_pointer(document: Mapping[str, Any], ref: str) -> Any:
    """The value a local ``$ref`` (``#/a/b~1c``) points at, or :class:`OpenApiError`."""
    if not ref.startswith("#"):
        raise OpenApiError(f"unresolvable $ref {ref!r}: only local references (#/...) are supported; "
                           "bundle the document into one file first")
    fragment = unquote(ref[1:])
    if fragment in ("", "/"):
        return document
    if not fragment.startswith("/"):
        raise OpenApiError(f"unresolvable $ref {ref!r}: anchors are not supported, use a JSON pointer")
    node: Any = document
    for token in fragment[1:].split("/"):
        key = token.replace("~1", "/").replace("~0", "~")
        if is_object(node) and key in node:
            node = node[key]
        elif is_array(node) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            raise OpenApiError(f"unresolvable $ref {ref!r}: {key!r} not found")
    return node


def deref(document: Mapping[str, Any], node: Any, what: str) -> Any:
    """Follow ``$ref`` chains of a non-schema object (parameter, request body, path item)."""
    seen: set[str] = set()
    while is_object(node) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        if ref in seen:
            raise OpenApiError(f"{what}: $ref cycle through {ref!r}")
        seen.add(ref)
        node = resolve_pointer(document, ref)
    return node


# --------------------------------------------------------------------------- servers

_VARIABLE = re.compile(r"\{([^{}]+)\}")


def server_url(servers: Any, variables: Mapping[str, str], spec_url: str | None, where: str) -> str | None:
    """The base URL from ``servers[0]``: variables filled (``variables`` over each ``default``),
    a relative URL resolved against ``spec_url``, trailing ``/`` removed. None when there is no
    usable server entry; :class:`OpenApiError` when one cannot be resolved."""
    if not is_array(servers) or not servers:
        return None
    server = servers[0]
    if not is_object(server) or not isinstance(server.get("url"), str):
        raise OpenApiError(f"{where}: servers[0] has no 'url' string")
    given = server.get("variables")
    declared: JsonObject = given if is_object(given) else {}

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        if name in variables:
            return variables[name]
        spec = declared.get(name)
        if is_object(spec) and spec.get("default") is not None:
            return str(spec["default"])
        raise OpenApiError(f"{where}: server variable {name!r} of {server['url']!r} has no default; "
                           f"pass it in OpenApiConfig(server_variables={{{name!r}: ...}})")

    url = _VARIABLE.sub(fill, server["url"]).strip()
    if not urlsplit(url).scheme:
        if not spec_url or urlsplit(spec_url).scheme not in ("http", "https"):
            raise OpenApiError(f"{where}: the server URL {url!r} is relative and the spec was not loaded from "
                               "an http(s) URL; pass OpenApiConfig(base_url=...) or spec_url=...")
        url = urljoin(spec_url, url)
    if urlsplit(url).scheme not in ("http", "https"):
        raise OpenApiError(f"{where}: the server URL {url!r} is not http(s)")
    return url.rstrip("/")
