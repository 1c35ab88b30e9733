"""OpenAPI schema objects to JSON Schema 2020-12, the dialect of phi's argument validation
(SPEC §12.2, OAPI-5).

* **References.** Every local schema ``$ref`` becomes ``#/$defs/{key}``; the referenced schema is
  converted once per document and each tool's ``$defs`` holds exactly the entries its arguments
  reach. Recursive schemas therefore need no special case and never loop. ``key`` is the component
  name (any other pointer: its tokens joined by ``_``), with characters outside ``[A-Za-z0-9_.-]``
  replaced by ``_`` and a ``_2``… suffix where two would collide. A reference by a schema's
  ``$id`` (with a pointer or ``$anchor`` fragment, as 3.1 documents may write) is found too.
* **OpenAPI 3.0 dialect.** ``nullable: true`` adds ``"null"`` to ``type`` (or wraps the schema in
  ``anyOf`` with ``{"type": "null"}`` when it has no ``type``, e.g. next to a ``$ref``), and adds
  ``null`` to an ``enum``; boolean ``exclusiveMinimum``/``exclusiveMaximum`` become the numeric
  form; a list-valued ``items`` becomes ``prefixItems``.
* **Small and valid.** Only JSON Schema keywords are kept (``example``, ``xml``,
  ``discriminator``, ``externalDocs``, ``x-…`` extensions and ``$id``/``$schema`` are dropped), and a
  keyword whose value has the wrong shape (``required: true`` on a property, an unknown ``type``,
  a ``pattern`` Python's ``re`` cannot compile) is dropped, so every produced schema passes
  meta-validation and can be used by the validator. A property marked ``readOnly`` is not
  ``required`` in a request. Nesting deeper than :data:`MAX_DEPTH` is cut to ``{}`` (which also
  ends a cycle made with YAML aliases).
"""

from __future__ import annotations

import re
from typing import Any, Callable, Mapping, TypeGuard
from urllib.parse import urljoin

from ..json_values import is_array, is_object
from ..log import get_logger
from .config import OpenApiError
from .document import resolve_pointer

log = get_logger(__name__)

MAX_DEPTH = 64
_BASE = "https://document.invalid/openapi"  # base URI of relative $id values and references
_TYPES = {"string", "number", "integer", "boolean", "array", "object", "null"}
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")
_SCHEMA_MAPS = ("properties", "patternProperties", "dependentSchemas")
_SCHEMA_ONE = ("additionalProperties", "not", "if", "then", "else", "propertyNames", "contains",
               "unevaluatedProperties", "unevaluatedItems", "contentSchema")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")
_COUNTS = ("maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties",
           "maxContains", "minContains")
_NUMBERS = ("maximum", "minimum")
_TEXTS = ("title", "description", "format", "contentMediaType", "contentEncoding")
_FLAGS = ("uniqueItems", "readOnly", "writeOnly", "deprecated")
_ANY = ("default", "const")


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    return _is_number(value) and value >= 0 and float(value).is_integer()


def _compiles(pattern: Any) -> bool:
    if not isinstance(pattern, str):
        return False
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError):
        return False
    return True


class SchemaConverter:
    """Converts the schemas of one document; shared by all of its operations."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document
        self._keys: dict[str, str] = {}  # pointer -> $defs key
        self._taken: set[str] = set()
        self._defs: dict[str, Any] = {}  # pointer -> converted schema
        self._deps: dict[str, set[str]] = {}  # pointer -> pointers its schema references
        self._memo: dict[int, tuple[Any, Any, frozenset[str]]] = {}
        self._ids: dict[str, str] | None = None  # $id URI -> pointer, built on the first such $ref
        self._anchors: dict[tuple[str, str], str] = {}

    # ------------------------------------------------------------------ public

    def convert(self, schema: Any, where: str) -> tuple[Any, set[str]]:
        """``schema`` as JSON Schema 2020-12 and the pointers it references directly."""
        refs: set[str] = set()
        return self._node(schema, refs, where, 0), refs

    def defs_for(self, refs: set[str]) -> dict[str, Any]:
        """The ``$defs`` a schema that references ``refs`` needs: those entries and, transitively,
        every entry they reference."""
        out: dict[str, Any] = {}
        pending = list(refs)
        while pending:
            pointer = pending.pop()
            key = self._keys[pointer]
            if key in out:
                continue
            out[key] = self._definition(pointer)
            pending.extend(self._deps[pointer])
        return dict(sorted(out.items()))

    def raw(self, schema: Any) -> Any:
        """``schema`` with ``$ref`` chains followed (for reading flags such as ``readOnly``)."""
        seen: set[str] = set()
        while is_object(schema) and isinstance(schema.get("$ref"), str) and schema["$ref"] not in seen:
            seen.add(schema["$ref"])
            schema = resolve_pointer(self.document, self._pointer(schema["$ref"]))
        return schema

    # ------------------------------------------------------------------ references

    def _key(self, pointer: str) -> str:
        key = self._keys.get(pointer)
        if key is not None:
            return key
        tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer.lstrip("#/").split("/")]
        if tokens[:2] == ["components", "schemas"]:
            tokens = tokens[2:]
        name = _UNSAFE.sub("_", "_".join(tokens)).strip("_") or "schema"
        key, n = name, 1
        while key in self._taken:
            n += 1
            key = f"{name}_{n}"
        self._taken.add(key)
        self._keys[pointer] = key
        return key

    def _reference(self, ref: str, refs: set[str], where: str) -> dict[str, Any]:
        try:
            pointer = self._pointer(ref)
            resolve_pointer(self.document, pointer)
        except OpenApiError as exc:
            raise OpenApiError(f"{where}: {exc}") from None
        refs.add(pointer)
        return {"$ref": f"#/$defs/{self._key(pointer)}"}

    def _pointer(self, ref: str) -> str:
        """The document pointer a reference means: a local one as it is; one by a schema's
        ``$id`` (with a JSON pointer or an ``$anchor`` as fragment, as OpenAPI 3.1 documents may
        write them) looked up."""
        if ref.startswith("#"):
            return ref
        if self._ids is None:
            self._ids, self._anchors = _index_ids(self.document)
        uri, _, fragment = urljoin(_BASE, ref).partition("#")
        pointer = self._ids.get(uri)
        if pointer is None:
            raise OpenApiError(f"unresolvable $ref {ref!r}: no schema has the $id {uri!r}; only references "
                               "inside the document are supported (bundle it into one file first)")
        if not fragment or fragment.startswith("/"):
            return pointer + fragment
        anchored = self._anchors.get((uri, fragment))
        if anchored is None:
            raise OpenApiError(f"unresolvable $ref {ref!r}: no $anchor {fragment!r} in the schema {uri!r}")
        return anchored

    def _definition(self, pointer: str) -> Any:
        if pointer not in self._defs:  # a reference only names its target, so this never recurses
            deps: set[str] = set()
            self._defs[pointer] = self._node(resolve_pointer(self.document, pointer), deps, pointer, 0)
            self._deps[pointer] = deps
        return self._defs[pointer]

    # ------------------------------------------------------------------ nodes

    def _node(self, node: Any, refs: set[str], where: str, depth: int) -> Any:
        if isinstance(node, bool):
            return node
        if not is_object(node):
            log.debug("%s: a schema must be an object or a boolean, found %s; allowing anything",
                      where, type(node).__name__)
            return {}
        if depth > MAX_DEPTH:
            log.debug("%s: schema nested deeper than %d levels; the rest allows anything", where, MAX_DEPTH)
            return {}
        memo = self._memo.get(id(node))
        if memo is not None and memo[0] is node:
            refs.update(memo[2])
            return memo[1]
        found: set[str] = set()
        out = self._object(node, found, where, depth)
        self._memo[id(node)] = (node, out, frozenset(found))
        refs.update(found)
        return out

    def _object(self, node: dict[str, Any], refs: set[str], where: str, depth: int) -> Any:
        out: dict[str, Any] = {}
        child: Callable[[Any, str], Any] = lambda value, name: self._node(value, refs, f"{where}/{name}", depth + 1)
        for name, value in node.items():
            if name == "$ref":
                if isinstance(value, str):
                    out.update(self._reference(value, refs, where))
            elif name in _SCHEMA_MAPS and is_object(value):
                out[name] = {k: child(v, f"{name}/{k}") for k, v in value.items()
                             if name != "patternProperties" or _compiles(k)}
            elif name in _SCHEMA_ONE:
                out[name] = child(value, name)
            elif name in _SCHEMA_LISTS and is_array(value) and value:
                out[name] = [child(v, f"{name}/{i}") for i, v in enumerate(value)]
            elif name == "items":
                if is_array(value):
                    out["prefixItems"] = [child(v, f"items/{i}") for i, v in enumerate(value)]
                else:
                    out["items"] = child(value, name)
            else:
                self._keyword(out, name, value)
        if "additionalItems" in node and isinstance(node.get("items"), list):
            out["items"] = child(node["additionalItems"], "additionalItems")
        self._exclusive(node, out)
        self._required(node, out)
        if node.get("nullable") is True:
            return _nullable(out)
        return out

    def _keyword(self, out: dict[str, Any], name: str, value: Any) -> None:
        if name in _NUMBERS or name in ("exclusiveMaximum", "exclusiveMinimum"):
            if _is_number(value):
                out[name] = value
        elif name == "multipleOf":
            if _is_number(value) and value > 0:
                out[name] = value
        elif name in _COUNTS:
            if _is_count(value):
                out[name] = int(value)
        elif name in _TEXTS:
            if isinstance(value, str):
                out[name] = value
        elif name in _FLAGS:
            if isinstance(value, bool):
                out[name] = value
        elif name in _ANY:
            out[name] = value
        elif name == "type":
            kinds = _types(value)
            if kinds:
                out["type"] = kinds
        elif name == "enum":
            if isinstance(value, list):
                out["enum"] = value
        elif name == "pattern":
            if _compiles(value):
                out["pattern"] = value
        elif name == "dependentRequired":
            if is_object(value) and all(_string_list(v) for v in value.values()):
                out[name] = value

    @staticmethod
    def _exclusive(node: Mapping[str, Any], out: dict[str, Any]) -> None:
        for flag, bound in (("exclusiveMaximum", "maximum"), ("exclusiveMinimum", "minimum")):
            if node.get(flag) is True and bound in out:  # OpenAPI 3.0: a flag on the bound
                out[flag] = out.pop(bound)

    def _required(self, node: Mapping[str, Any], out: dict[str, Any]) -> None:
        required = node.get("required")
        if not _string_list(required):
            return
        given = node.get("properties")
        properties: Mapping[str, Any] = given if is_object(given) else {}
        kept: list[str] = []
        for name in dict.fromkeys(required):
            schema = self.raw(properties.get(name))
            if not (is_object(schema) and schema.get("readOnly") is True):
                kept.append(name)
        if kept:
            out["required"] = kept


def _index_ids(document: Mapping[str, Any]) -> tuple[dict[str, str], dict[tuple[str, str], str]]:
    """Where each ``$id`` and ``$anchor`` of the document is, as JSON pointers (one iterative walk;
    a nested ``$id`` is resolved against the one around it)."""
    ids: dict[str, str] = {}
    anchors: dict[tuple[str, str], str] = {}
    stack: list[tuple[Any, str, str]] = [(document, "#", _BASE)]
    while stack:
        node, pointer, base = stack.pop()
        if is_object(node):
            if isinstance(node.get("$id"), str):
                base = urljoin(base, node["$id"]).partition("#")[0]
                ids.setdefault(base, pointer)
            if isinstance(node.get("$anchor"), str):
                anchors.setdefault((base, node["$anchor"]), pointer)
            items: Any = node.items()
        elif is_array(node):
            items = enumerate(node)
        else:
            continue
        for key, value in items:
            if is_object(value) or is_array(value):
                token = str(key).replace("~", "~0").replace("/", "~1")
                stack.append((value, f"{pointer}/{token}", base))
    return ids, anchors


def _string_list(value: object) -> TypeGuard[list[str]]:
    return is_array(value) and all(isinstance(v, str) for v in value)


def _types(value: Any) -> str | list[str] | None:
    if isinstance(value, str):
        return value if value in _TYPES else None
    if is_array(value):
        kinds = [v for v in dict.fromkeys(value) if isinstance(v, str) and v in _TYPES]
        return kinds or None
    return None


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 ``nullable: true`` in JSON Schema terms."""
    kinds = schema.get("type")
    if kinds is None:
        if not schema:
            return schema  # already allows null
        return {"anyOf": [schema, {"type": "null"}]}
    schema = dict(schema)
    listed = [kinds] if isinstance(kinds, str) else list(kinds)
    if "null" not in listed:
        schema["type"] = listed + ["null"]
    if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
        schema["enum"] = schema["enum"] + [None]
    return schema
