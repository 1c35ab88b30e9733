"""A compiled check of JSON values against the suite's own schemas (SPEC §10; issue 32).

The runner checks every line a driver writes against ``schema/event.schema.json``. jsonschema
walks the schema afresh for each value, which for the reference driver's ~1.5 MB of output per
suite run costs several seconds, more than the run itself; :func:`compile_schema` instead turns
the schema into nested closures once. A ``oneOf`` whose branches are told apart by the ``const``
of a property they all require (an event's ``type``, a message's ``role``, a line's ``kind``) is
dispatched on that property instead of trying every branch, which is also what makes the reasons
precise: a message without ``model`` is "required property missing" at ``/message/model``, not
"valid under none of the branches".

Only the keywords the shipped schemas use are known; compiling a schema with any other raises
:class:`SchemaError`, so a schema is never checked only in part. Annotations (``title``,
``description``, ``format``, ...) are ignored, as JSON Schema 2020-12 does by default.
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable, Union, cast

from ..json_values import is_array, is_object

#: (JSON pointer of the value, reason) — the pointer is "" for the whole value
Issue = tuple[str, str]
Check = Callable[[Any, str, list[Issue]], None]

_ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "$comment", "title", "description", "format", "examples",
                          "default", "deprecated", "readOnly", "writeOnly"})
_KNOWN = _ANNOTATIONS | {"type", "const", "enum", "minimum", "pattern", "required", "properties",
                         "additionalProperties", "items", "oneOf", "anyOf", "$ref"}
_TYPE_NAMES = {"object": "an object", "array": "an array", "string": "a string", "integer": "an integer",
               "number": "a number", "boolean": "true or false", "null": "null"}
_MISSING = object()


class SchemaError(ValueError):
    """The schema uses something :func:`compile_schema` cannot check."""


def compile_schema(document: dict[str, Any], pointer: str = "") -> Callable[[Any], list[Issue]]:
    """A function returning every issue of a value against the subschema at ``pointer`` (a JSON
    pointer into ``document``; "" for the document itself); ``$ref`` resolves within ``document``."""
    check = _Compiler(document).ref("#" + pointer, "#" + pointer)

    def issues(value: Any) -> list[Issue]:
        found: list[Issue] = []
        if check is not None:
            check(value, "", found)
        return found

    return issues


def escape(key: str) -> str:
    """A property name as one JSON pointer token (RFC 6901)."""
    return key.replace("~", "~0").replace("/", "~1")


def show(value: Any, limit: int = 60) -> str:
    """A value as a short piece of JSON for a reason."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1.0`` is ``1``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if is_object(a) and is_object(b):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if is_array(a) and is_array(b):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b or _number(a) and _number(b) and a == b


def _number(value: Any) -> bool:
    return type(value) in (int, float)


def _is_type(value: object, name: str) -> bool:
    kind = type(value)
    if name == "object":
        return kind is dict
    if name == "string":
        return kind is str
    if name == "array":
        return kind is list
    if name == "integer":
        return kind is int or type(value) is float and value.is_integer()
    if name == "number":
        return kind is int or kind is float
    if name == "boolean":
        return kind is bool
    return value is None  # "null"


class _Compiler:
    def __init__(self, document: dict[str, Any]) -> None:
        self.document = document
        self.refs: dict[str, Check | None] = {}
        self.pending: dict[str, list[Check | None]] = {}

    def ref(self, target: str, where: str) -> Check | None:
        if not target.startswith("#"):
            raise SchemaError(f"{where}: $ref {target!r} leaves the document")
        if target in self.refs:
            return self.refs[target]
        if target in self.pending:  # a recursive reference: resolved late through a cell
            waiting = self.pending[target]

            def late(value: Any, path: str, issues: list[Issue]) -> None:
                check = waiting[0]
                if check is not None:
                    check(value, path, issues)
            return late
        node: Any = self.document
        for token in filter(None, target[1:].split("/")):
            token = token.replace("~1", "/").replace("~0", "~")
            if not is_object(node) or token not in node:
                raise SchemaError(f"{where}: $ref {target!r} names nothing in the schema")
            node = node[token]
        cell: list[Check | None] = [None]
        self.pending[target] = cell
        cell[0] = check = self.compile(node, target)
        del self.pending[target]
        self.refs[target] = check
        return check

    def compile(self, node: Any, where: str) -> Check | None:
        """The check of one schema node; None when it accepts everything."""
        if node is True:
            return None
        if node is False:
            return lambda value, path, issues: issues.append((path, "no value is allowed here"))
        if not is_object(node):
            raise SchemaError(f"{where}: a schema must be an object or a boolean")
        unknown = set(node) - _KNOWN
        if unknown:
            raise SchemaError(f"{where}: keyword(s) {', '.join(sorted(unknown))} not supported")
        checks: list[Check] = []
        if "$ref" in node:
            target = self.ref(node["$ref"], where)
            if target is not None:
                checks.append(target)
        if "oneOf" in node or "anyOf" in node:
            checks.append(self._choice(node, where))
        object_check = self._object(node, where)
        if object_check is not None:
            checks.append(object_check)
        if "items" in node:
            item = self.compile(node["items"], f"{where}/items")
            if item is not None:
                checks.append(_items(item))
        checks += _scalar_checks(node)
        guard = _type_guard(node.get("type"))
        return _chain(guard, checks)

    def _object(self, node: dict[str, Any], where: str) -> Check | None:
        required = tuple(node.get("required", ()))
        properties = {name: (self.compile(sub, f"{where}/properties/{escape(name)}"), "/" + escape(name))
                      for name, sub in node.get("properties", {}).items()}
        extra_node = node.get("additionalProperties", True)
        closed = extra_node is False
        extra = None if closed else self.compile(extra_node, f"{where}/additionalProperties")
        if not required and not closed and extra is None and all(c is None for c, _ in properties.values()):
            return None

        def check(value: Any, path: str, issues: list[Issue]) -> None:
            if type(value) is not dict:
                return  # the type guard speaks for objects; without one, these keywords do not apply
            for name in required:
                if name not in value:
                    issues.append((f"{path}/{escape(name)}", "required property missing"))
            for key, item in cast("dict[str, Any]", value).items():  # decoded JSON: its keys are strings
                known = properties.get(key)
                if known is not None:
                    if known[0] is not None:
                        known[0](item, path + known[1], issues)
                elif closed:
                    issues.append((f"{path}/{escape(key)}", "unknown property (not in the schema)"))
                elif extra is not None:
                    extra(item, f"{path}/{escape(key)}", issues)
        return check

    def _choice(self, node: dict[str, Any], where: str) -> Check:
        keyword = "oneOf" if "oneOf" in node else "anyOf"
        if "oneOf" in node and "anyOf" in node:
            raise SchemaError(f"{where}: oneOf and anyOf together are not supported")
        branches = node[keyword]
        tagged = self._tagged(branches, where, keyword)
        if tagged is not None:
            return tagged
        checks = [self.compile(branch, f"{where}/{keyword}/{i}") for i, branch in enumerate(branches)]
        exactly_one = keyword == "oneOf"

        def check(value: Any, path: str, issues: list[Issue]) -> None:
            passed = 0
            reasons: list[str] = []
            for branch in checks:
                found: list[Issue] = []
                if branch is not None:
                    branch(value, path, found)
                if not found:
                    passed += 1
                else:
                    reasons.append(found[0][1] if found[0][0] == path else f"{found[0][0][len(path):]}: {found[0][1]}")
            if passed == 0:
                issues.append((path, f"{show(value)} has none of the allowed forms ({'; '.join(reasons)})"))
            elif passed > 1 and exactly_one:
                issues.append((path, f"{show(value)} has more than one of the allowed forms"))
        return check

    def _tagged(self, branches: list[Any], where: str, keyword: str) -> Check | None:
        """A oneOf/anyOf whose branches all require one property with a distinct string ``const``,
        as a dispatch on that property; None when the branches are not of that shape."""
        resolved = [self._resolve(branch) for branch in branches]
        if not resolved or not all(is_object(b) for b in resolved):
            return None
        required: list[set[str]] = [set(b.get("required", ())) for b in resolved]
        common = required[0].intersection(*required[1:])
        for tag in sorted(common):
            values = [b.get("properties", {}).get(tag, {}).get("const", _MISSING) for b in resolved]
            if all(isinstance(v, str) for v in values) and len(set(values)) == len(values):
                table = {v: self.compile(b, f"{where}/{keyword}/{i}") for i, (v, b) in enumerate(zip(values, branches))}
                return _dispatch(tag, table)
        return None

    def _resolve(self, node: Any) -> Any:
        """A branch itself, or what a branch that is only a local ``$ref`` points to."""
        seen = 0
        while is_object(node) and set(node) == {"$ref"} and str(node["$ref"]).startswith("#") and seen < 32:
            target: Any = self.document
            for token in filter(None, node["$ref"][1:].split("/")):
                token = token.replace("~1", "/").replace("~0", "~")
                if not is_object(target) or token not in target:
                    return None
                target = target[token]
            node, seen = target, seen + 1
        return node


def _dispatch(tag: str, table: dict[str, Check | None]) -> Check:
    token = "/" + escape(tag)
    allowed = ", ".join(table)

    def check(value: Any, path: str, issues: list[Issue]) -> None:
        if type(value) is not dict:
            issues.append((path, f"expected an object, got {show(value)}"))
            return
        said = cast("dict[str, Any]", value).get(tag, _MISSING)
        if said is _MISSING:
            issues.append((path + token, "required property missing"))
            return
        if type(said) is not str or said not in table:
            issues.append((path + token, f"expected one of {allowed}, got {show(said)}"))
            return
        branch = table[said]
        if branch is not None:
            branch(value, path, issues)
    return check


def _items(item: Check) -> Check:
    def check(value: Any, path: str, issues: list[Issue]) -> None:
        if is_array(value):
            for i, element in enumerate(value):
                item(element, f"{path}/{i}", issues)
    return check


def _scalar_checks(node: dict[str, Any]) -> list[Check]:
    checks: list[Check] = []
    if "const" in node:
        expected = node["const"]

        def const(value: Any, path: str, issues: list[Issue]) -> None:
            if not _same(value, expected):
                issues.append((path, f"expected {show(expected)}, got {show(value)}"))
        checks.append(const)
    if "enum" in node:
        options = list(node["enum"])
        names = ", ".join(show(o) for o in options)

        def enum(value: Any, path: str, issues: list[Issue]) -> None:
            if not any(_same(value, o) for o in options):
                issues.append((path, f"expected one of {names}, got {show(value)}"))
        checks.append(enum)
    if "minimum" in node:
        least = node["minimum"]

        def minimum(value: Any, path: str, issues: list[Issue]) -> None:
            if _number(value) and value < least:
                issues.append((path, f"expected at least {least}, got {show(value)}"))
        checks.append(minimum)
    if "pattern" in node:
        source = str(node["pattern"])
        pattern = re.compile(_python_pattern(source), re.ASCII)  # ECMA-262's \d is ASCII digits only

        def matches(value: Any, path: str, issues: list[Issue]) -> None:
            if type(value) is str and pattern.search(value) is None:
                issues.append((path, f"{show(value)} does not match {source}"))
        checks.append(matches)
    return checks


def _python_pattern(pattern: str) -> str:
    """An ECMA-262 pattern for :mod:`re`: a closing ``$`` means the end of the text there, where
    Python's also matches before a final newline."""
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        return pattern[:-1] + "\\Z"
    return pattern


def _type_guard(spec: Any) -> Callable[[Any, str, list[Issue]], bool] | None:
    """A check of ``type`` that says whether the other checks should run (not on a wrong type:
    one reason per value is enough)."""
    if spec is None:
        return None
    names = [spec] if isinstance(spec, str) else list(spec)
    if not names or any(name not in _TYPE_NAMES for name in names):
        raise SchemaError(f"unknown type {spec!r}")
    wanted = " or ".join(_TYPE_NAMES[name] for name in names)

    def guard(value: Any, path: str, issues: list[Issue]) -> bool:
        for name in names:
            if _is_type(value, name):
                return True
        issues.append((path, f"expected {wanted}, got {show(value)}"))
        return False
    return guard


def _chain(guard: Callable[[Any, str, list[Issue]], bool] | None, checks: list[Check]) -> Check | None:
    if guard is None and not checks:
        return None
    if guard is None and len(checks) == 1:
        return checks[0]
    if guard is not None and not checks:
        def only_type(value: Any, path: str, issues: list[Issue]) -> None:
            guard(value, path, issues)
        return only_type

    def check(value: Any, path: str, issues: list[Issue]) -> None:
        if guard is not None and not guard(value, path, issues):
            return
        for one in checks:
            one(value, path, issues)
    return check


#: how deeply arrays and objects may nest in a fixture or a driver's line (README §2): the shipped
#: fixtures reach 12, a driver's lines a few levels more; the runner's recursive steps (schema
#: check, normalisation, matching) stay far below Python's recursion limit at this bound
MAX_DEPTH = 64

_DEPTH_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]')


def too_deep(text: str, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than ``limit`` deep; read without
    recursion (strings are skipped), so that nothing recursive ever sees such a value."""
    if text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for token in _DEPTH_TOKENS.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > limit:
                return True
        elif mark in "]}":
            depth -= 1
    return False


#: a path into a JSON value: keys and array indexes
Path = list[Union[str, int]]


def load_json(text: str) -> tuple[Any, list[tuple[Path, str]]]:
    """``text`` parsed as strict JSON (RFC 8259: ``NaN`` and ``Infinity`` are refused with
    :class:`ValueError`), and every key an object repeats, with the path of that object — a
    repeated key would otherwise silently replace the value before it."""
    repeated: dict[int, tuple[dict[str, Any], list[str]]] = {}

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        value = dict(items)
        if len(value) != len(items):
            seen: set[str] = set()
            keys: list[str] = []
            for key, _ in items:
                if key in seen:
                    keys.append(key)
                seen.add(key)
            # the object itself is kept so that its id() is not reused while the paths are found
            repeated[id(value)] = (value, list(dict.fromkeys(keys)))
        return value

    value = json.loads(text, object_pairs_hook=pairs, parse_constant=_refuse_constant)
    if not repeated:
        return value, []
    found: list[tuple[Path, str]] = []
    stack: list[tuple[Any, Path]] = [(value, [])]
    while stack:  # depth-first without recursion, in document order
        item, path = stack.pop()
        if is_object(item):
            if id(item) in repeated:
                found += [(path, key) for key in repeated[id(item)][1]]
            stack += [(v, path + [k]) for k, v in reversed(item.items())]
        elif is_array(item):
            stack += [(v, path + [i]) for i, v in reversed(list(enumerate(item)))]
    return value, found


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogates(text: str, value: Any) -> list[Path]:
    """Where ``value`` (parsed from ``text``) holds a string or key with a ``\\uD800``-style escape
    that is not half of a pair: not a Unicode character, so it cannot be written out as UTF-8
    (RFC 8259 §8.2). Only a text with such an escape is searched."""
    if not _SURROGATE_ESCAPE.search(text):
        return []
    found: list[Path] = []
    stack: list[tuple[Any, Path]] = [(value, [])]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                found.append(path)
        elif is_object(item):
            for key, inner in item.items():
                if _SURROGATE.search(key):
                    found.append([*path, key])
                stack.append((inner, [*path, key]))
        elif is_array(item):
            stack += [(inner, [*path, i]) for i, inner in enumerate(item)]
    return sorted(found, key=str)


def json_path(path: Path) -> str:
    """``$.expect.events[0]``, as jsonschema names a place in a fixture."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" if re.fullmatch(r"[A-Za-z_][\w-]*", p)
                         else f"[{json.dumps(p)}]" for p in path)


def pointer(path: Path) -> str:
    """``/event/message``, as a line problem names a place in a line (RFC 6901)."""
    return "".join(f"/{escape(str(p))}" for p in path)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


__all__ = ["MAX_DEPTH", "Issue", "Path", "SchemaError", "compile_schema", "escape", "json_path", "load_json",
           "lone_surrogates", "pointer", "show", "too_deep"]
