"""From the ``paths`` of an OpenAPI document to operation descriptions: which operations become
tools, their names, descriptions, argument schemas and base URLs (SPEC §12.2, OAPI-2 to OAPI-6).

Argument names are the parameter names with every character outside ``[A-Za-z0-9_.-]`` replaced by
``_`` (providers restrict property names); when two parameters end up with the same name the later
one gets ``_{in}`` appended (``id`` and ``id_query``). The JSON request body is the argument
``body``, or ``_request_body`` when a parameter already took ``body``.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Mapping

from ..json_values import JsonObject, is_array, is_object
from ..log import get_logger
from .budget import fit_schema
from .config import OpenApiConfig, OpenApiError, OperationFilter
from .document import deref, server_url
from .schemas import SchemaConverter

log = get_logger(__name__)

METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
MAX_NAME = 64
_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
_ARG_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_TEMPLATE = re.compile(r"\{([^{}/]+)\}")
_IGNORED_HEADERS = {"accept", "content-type", "authorization"}  # OpenAPI: described elsewhere, ignored
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple"}


@dataclass(frozen=True)
class Param:
    """One path/query/header parameter: its argument name and how it goes on the wire."""

    arg: str
    name: str
    location: str
    style: str
    explode: bool
    allow_reserved: bool = False
    as_json: bool = False  # described with `content`: the value is sent as JSON text


@dataclass(frozen=True)
class Operation:
    """Everything a tool needs to call one operation."""

    name: str
    operation_id: str
    method: str
    path: str
    base_url: str
    description: str
    parameters: dict[str, Any]
    params: tuple[Param, ...]
    body_arg: str | None = None
    body_media_type: str | None = None


def tool_name(operation_id: str, prefix: str | None) -> str:
    """``operationId`` (or ``{prefix}__{operationId}``) made valid for every provider: characters
    outside ``[A-Za-z0-9_-]`` become ``_``; a name over 64 characters keeps its first 55 and a
    hash of the whole."""
    raw = f"{prefix}__{operation_id}" if prefix else operation_id
    name = _NAME_UNSAFE.sub("_", raw)
    if len(name) > MAX_NAME:
        name = f"{name[:MAX_NAME - 9]}_{hashlib.sha1(raw.encode('utf-8')).hexdigest()[:8]}"
    return name


def _unique(name: str, used: set[str]) -> str:
    candidate, n = name, 1
    while candidate in used:
        n += 1
        suffix = f"_{n}"
        candidate = name[:MAX_NAME - len(suffix)] + suffix
    used.add(candidate)
    return candidate


def describe(operation: Mapping[str, Any], method: str, path: str, limit: int) -> str:
    """Summary and description (either may be missing), cut to ``limit`` characters."""
    parts = [p.strip() for p in (operation.get("summary"), operation.get("description")) if isinstance(p, str)]
    parts = [p for i, p in enumerate(parts) if p and p not in parts[:i]]
    text = "\n\n".join(parts) or f"{method.upper()} {path}"
    if operation.get("deprecated") is True:
        text = f"(deprecated) {text}"
    if len(text) > limit:
        cut = text[:limit - 1]
        space = cut.rfind(" ")
        text = (cut[:space] if space > limit // 2 else cut).rstrip() + "…"
    return text


def iter_operations(document: Mapping[str, Any]) -> Iterator[tuple[str, str, dict[str, Any], dict[str, Any]]]:
    """``(path, method, operation, path_item)`` for every operation under ``paths``."""
    paths: JsonObject = document.get("paths") or {}
    for path, item in paths.items():
        item = deref(document, item, f"paths[{path!r}]")
        if not is_object(item):
            log.warning("paths[%r] is not a path item object; skipped", path)
            continue
        for method in METHODS:
            operation = item.get(method)
            if is_object(operation):
                yield path, method, operation, item


def build_operations(document: Mapping[str, Any], config: OpenApiConfig, selection: OperationFilter,
                     spec_url: str | None) -> list[Operation]:
    """The selected operations of ``document`` (OAPI-2), in document order."""
    converter = SchemaConverter(document)
    used: set[str] = set()
    skipped: list[str] = []
    seen_ids: set[str] = set()
    servers = _Servers(document, config, spec_url)
    out: list[Operation] = []
    for path, method, operation, item in iter_operations(document):
        operation_id = operation.get("operationId")
        if not isinstance(operation_id, str) or not operation_id.strip():
            skipped.append(f"{method.upper()} {path}")
            continue
        seen_ids.add(operation_id)
        tags = [t for t in operation.get("tags") or () if isinstance(t, str)]
        if not selection.matches(operation_id, path, tags):
            continue
        built = _operation(document, converter, config, servers, path, method, operation, item, used)
        if built is not None:
            out.append(built)
    if skipped:
        shown = ", ".join(skipped[:10]) + (f" and {len(skipped) - 10} more" if len(skipped) > 10 else "")
        log.warning("skipped %d operation(s) without an operationId: %s", len(skipped), shown)
    if selection.kind == "operation_id":
        missing = [i for i in selection.values if i not in seen_ids]
        if missing:
            log.warning("OperationFilter.by_operation_id: no operation has the id(s) %s", ", ".join(missing))
    return out


class _Servers:
    """Base URL per operation: ``base_url``, else the servers of the operation, of its path item,
    of the document (OAPI-6); computed once per servers list."""

    def __init__(self, document: Mapping[str, Any], config: OpenApiConfig, spec_url: str | None) -> None:
        self.document = document
        self.config = config
        self.spec_url = spec_url
        self._cache: dict[int, str | None] = {}

    def url(self, operation: Mapping[str, Any], item: Mapping[str, Any], where: str) -> str:
        if self.config.base_url is not None:
            return str(self.config.base_url).strip().rstrip("/")
        for servers in (operation.get("servers"), item.get("servers"), self.document.get("servers")):
            if is_array(servers) and servers:
                if id(servers) not in self._cache:
                    self._cache[id(servers)] = server_url(servers, self.config.server_variables, self.spec_url, where)
                found = self._cache[id(servers)]
                if found is not None:
                    return found
        if self.spec_url is not None:  # OpenAPI: no servers means a server at "/"
            found = server_url([{"url": "/"}], {}, self.spec_url, where)
            if found is not None:
                return found
        raise OpenApiError(f"{where}: no server URL: the document has no 'servers' and no "
                           "OpenApiConfig(base_url=...) was given")


def _operation(document: Mapping[str, Any], converter: SchemaConverter, config: OpenApiConfig, servers: _Servers,
               path: str, method: str, operation: dict[str, Any], item: dict[str, Any],
               used: set[str]) -> Operation | None:
    where = f"{method.upper()} {path}"
    operation_id = operation["operationId"]
    base_url = servers.url(operation, item, where)
    properties: dict[str, Any] = {}
    required: list[str] = []
    refs: set[str] = set()
    params: list[Param] = []
    for raw in _merged_parameters(document, item, operation, path, where):
        param, schema, is_required = _parameter(converter, raw, set(properties), refs, where)
        if param is None:
            continue
        params.append(param)
        properties[param.arg] = schema
        if is_required:
            required.append(param.arg)
    body = _request_body(document, converter, operation, refs, where)
    if body is False:
        log.warning("%s (%s): its required request body has no JSON media type; skipped", where, operation_id)
        return None
    body_arg = media_type = None
    if body is not None:
        media_type, schema, body_required = body
        body_arg = _unique("body" if "body" not in properties else "_request_body", set(properties))
        properties[body_arg] = schema
        if body_required:
            required.append(body_arg)
    parameters: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = required
    parameters["additionalProperties"] = False
    if refs:
        parameters["$defs"] = converter.defs_for(refs)
    parameters = fit_schema(parameters, config.max_schema_bytes, where)
    name = _unique(tool_name(operation_id, config.name_prefix), used)
    if name != (f"{config.name_prefix}__{operation_id}" if config.name_prefix else operation_id):
        log.info("%s: operationId %r becomes the tool name %r", where, operation_id, name)
    return Operation(name, operation_id, method.upper(), path, base_url,
                     describe(operation, method, path, config.max_description_chars), parameters,
                     tuple(params), body_arg, media_type)


def _merged_parameters(document: Mapping[str, Any], item: Mapping[str, Any], operation: Mapping[str, Any],
                       path: str, where: str) -> list[dict[str, Any]]:
    """Path-item parameters overridden by the operation's (same ``name`` and ``in``), plus a
    string parameter for each path template variable nobody declared."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for source in (item.get("parameters"), operation.get("parameters")):
        for i, raw in enumerate(source or ()):
            param = deref(document, raw, f"{where} parameters[{i}]")
            if not is_object(param) or not isinstance(param.get("name"), str) \
                    or not isinstance(param.get("in"), str):
                log.warning("%s: parameters[%d] has no 'name' or 'in'; skipped", where, i)
                continue
            merged[(param["name"], param["in"])] = param
    for variable in _TEMPLATE.findall(path):
        if (variable, "path") not in merged:
            log.debug("%s: path variable {%s} is not declared; taking it as a string", where, variable)
            merged[(variable, "path")] = {"name": variable, "in": "path", "required": True,
                                          "schema": {"type": "string"}}
    return list(merged.values())


def _parameter(converter: SchemaConverter, raw: dict[str, Any], taken: set[str], refs: set[str],
               where: str) -> tuple[Param | None, Any, bool]:
    name, location = raw["name"], raw["in"]
    if location == "cookie":
        log.info("%s: cookie parameter %r is not supported; skipped", where, name)
        return None, None, False
    if location not in _DEFAULT_STYLE:
        log.warning("%s: parameter %r has an unknown location %r; skipped", where, name, location)
        return None, None, False
    if location == "header" and name.lower() in _IGNORED_HEADERS:
        log.debug("%s: header parameter %r is ignored (OpenAPI describes it elsewhere)", where, name)
        return None, None, False
    schema_source, as_json = raw.get("schema"), False
    content = raw.get("content")
    if schema_source is None and is_object(content) and content:
        media = next(iter(content.values()))
        schema_source = media.get("schema") if is_object(media) else None
        as_json = True
    schema, found = converter.convert(schema_source if schema_source is not None else {}, f"{where} {name!r}")
    refs |= found
    given_style, given_explode = raw.get("style"), raw.get("explode")
    style = given_style if isinstance(given_style, str) else _DEFAULT_STYLE[location]
    explode = given_explode if isinstance(given_explode, bool) else style == "form"
    arg = _ARG_UNSAFE.sub("_", name)[:MAX_NAME] or "_"
    if arg in taken:
        arg = _unique(f"{arg}_{location}", taken)
    param = Param(arg, name, location, style, explode, raw.get("allowReserved") is True, as_json)
    return param, _annotated(schema, raw.get("description"), raw.get("deprecated")), \
        location == "path" or raw.get("required") is True


def _request_body(document: Mapping[str, Any], converter: SchemaConverter, operation: Mapping[str, Any],
                  refs: set[str], where: str) -> tuple[str, Any, bool] | Literal[False] | None:
    """``(media type, schema, required)`` of a JSON request body; None without one; False when a
    required body has no JSON media type (the operation cannot be called)."""
    body = deref(document, operation.get("requestBody"), f"{where} requestBody")
    if not is_object(body) or not is_object(body.get("content")):
        return None
    required = body.get("required") is True
    media_type = _json_media_type(body["content"])
    if media_type is None:
        if required:
            return False
        log.info("%s: request body types %s are not JSON; the tool sends no body", where, ", ".join(body["content"]))
        return None
    media = body["content"][media_type]
    source: Any = media.get("schema", {}) if is_object(media) else {}  # a schema: JSON of any shape
    schema, found = converter.convert(source, f"{where} requestBody")
    refs |= found
    return media_type, _annotated(schema, body.get("description"), None), required


def _json_media_type(content: Mapping[str, Any]) -> str | None:
    types = list(content)  # document keys are strings: parse_document makes YAML's other keys text
    for media_type in types:
        if media_type.split(";")[0].strip().lower() == "application/json":
            return media_type
    for media_type in types:
        base = media_type.split(";")[0].strip().lower()
        if base.endswith("+json"):
            return media_type
    return None


def _annotated(schema: Any, description: Any, deprecated: Any) -> Any:
    """A copy of ``schema`` (shared with other tools) with the parameter's own annotations."""
    if not isinstance(description, str) and deprecated is not True:
        return schema
    out: JsonObject = ({} if schema else {"not": {}}) if isinstance(schema, bool) else dict(schema)
    if isinstance(description, str) and description.strip() and "description" not in out:
        out["description"] = description.strip()
    if deprecated is True:
        out["deprecated"] = True
    return out
