"""Python annotations as JSON Schema, and JSON values back as typed Python values (SPEC TOOL-1, TOOL-2).

This is the machinery behind :func:`phi.tool` and the structured-output helpers (SPEC AGENT-4):

* :func:`json_schema_for` maps an annotation to a JSON Schema: ``str``, ``int``, ``float``,
  ``bool``, ``None``, ``Any``, ``list[T]``, ``set[T]``, ``tuple[A, B]`` / ``tuple[T, ...]``,
  ``dict[str, T]``, ``Optional``/unions, ``Literal``, ``Enum`` subclasses, ``TypedDict`` and
  dataclasses (nested types are inlined), and ``Annotated[T, "description"]``. Anything else raises
  :class:`UnsupportedAnnotation` (a ``ConfigError`` and a ``TypeError``) naming the culprit.
* :func:`convert_value` turns an already JSON-decoded value into the annotated Python type
  (a dataclass instance, an Enum member, a tuple, ...) and raises :class:`ConversionError` with a
  dotted path when the value does not fit.
* :func:`to_jsonable` goes the other way, for tool return values and schema defaults.

* :func:`parse_docstring` splits a docstring into a description and per-parameter
  descriptions; Google (``Args:``) and reST (``:param x:``) styles are understood.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import inspect
import re
import types
import typing
from typing import Any, Literal, TypeGuard, Union, cast

from ..errors import ConfigError
from ..json_values import is_object

__all__ = [
    "UnsupportedAnnotation",
    "ConversionError",
    "json_schema_for",
    "convert_value",
    "to_jsonable",
    "is_typeddict",
    "type_hints",
    "Docstring",
    "parse_docstring",
]

_NoneType = type(None)
_LITERAL_TYPES = (str, int, bool, type(None))


class UnsupportedAnnotation(ConfigError, TypeError):
    """An annotation phi cannot describe as JSON Schema (raised at decoration time)."""


class ConversionError(ValueError):
    """A JSON value does not fit the annotated type. ``path`` names the offending value."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        self.reason = message
        super().__init__(f"{path}: {message}" if path else message)


# --------------------------------------------------------------------------- helpers


def is_typeddict(tp: Any) -> bool:
    """True for classes created with ``typing.TypedDict`` (or typing_extensions')."""
    return isinstance(tp, type) and hasattr(tp, "__required_keys__") and issubclass(tp, dict)


def _is_enum_class(tp: Any) -> TypeGuard[type[enum.Enum]]:
    return isinstance(tp, type) and issubclass(tp, enum.Enum)


def type_hints(obj: Any, where: str) -> dict[str, Any]:
    """``typing.get_type_hints`` with ``Annotated`` kept, turning failures into clear errors."""
    try:
        return typing.get_type_hints(obj, include_extras=True)
    except Exception as exc:  # NameError for unresolved forward references, TypeError, ...
        raise UnsupportedAnnotation(f"cannot resolve the type annotations of {where}: {exc}") from exc


def _is_union(origin: Any) -> bool:
    return origin is Union or origin is types.UnionType


def _describe(tp: Any) -> str:
    return getattr(tp, "__qualname__", None) or repr(tp)


def _literal_type(values: tuple[Any, ...]) -> str | None:
    kinds: set[str] = set()
    for value in values:
        if isinstance(value, bool):
            kinds.add("boolean")
        elif isinstance(value, int):
            kinds.add("integer")
        elif isinstance(value, float):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("string")
        elif value is None:
            kinds.add("null")
        else:
            return None
    return kinds.pop() if len(kinds) == 1 else None


# --------------------------------------------------------------------------- annotation -> schema


def json_schema_for(tp: Any, *, where: str = "annotation") -> dict[str, Any]:
    """The JSON Schema describing values of annotation ``tp``.

    ``where`` is used in error messages (e.g. ``"parameter 'x' of search()"``).
    Raises :class:`UnsupportedAnnotation` for anything that has no JSON equivalent.
    """
    return _schema(tp, where, ())


def _schema(tp: Any, where: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    if tp is Any:
        return {}
    if tp is None or tp is _NoneType:
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    if _is_enum_class(tp):
        return _enum_schema(tp, where)
    if is_typeddict(tp) or dataclasses.is_dataclass(tp):
        if tp in seen:
            raise UnsupportedAnnotation(f"{where}: recursive type {_describe(tp)} cannot be inlined")
        return _object_schema(tp, where, seen + (tp,))
    origin = typing.get_origin(tp)
    if origin is not None:
        return _generic_schema(tp, origin, where, seen)
    if tp in (list, set, frozenset, tuple):
        return {"type": "array"} if tp is not set and tp is not frozenset else {"type": "array", "uniqueItems": True}
    if tp is dict:
        return {"type": "object"}
    raise UnsupportedAnnotation(
        f"{where}: unsupported annotation {_describe(tp)}; use str, int, float, bool, None, list, dict[str, T], "
        "tuple, Optional/Union, Literal, Enum, TypedDict or a dataclass"
    )


def _generic_schema(tp: Any, origin: Any, where: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    args = typing.get_args(tp)
    schema: dict[str, Any]
    if origin is typing.Annotated:
        schema = dict(_schema(args[0], where, seen))
        notes = [a for a in args[1:] if isinstance(a, str)]
        if notes:
            schema["description"] = " ".join(notes)
        return schema
    if _is_union(origin):
        return _union_schema([_schema(a, where, seen) for a in args])
    if origin is Literal:
        if not all(isinstance(v, _LITERAL_TYPES) for v in args):
            raise UnsupportedAnnotation(f"{where}: Literal values must be str, int, bool or None, got {args!r}")
        schema = {"enum": list(args)}
        kind = _literal_type(args)
        if kind:
            schema["type"] = kind
        return schema
    if origin in (list, set, frozenset) or origin in (typing.Sequence, typing.MutableSequence):
        schema = {"type": "array", "items": _schema(args[0], where, seen)} if args else {"type": "array"}
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        return schema
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], where, seen)}
        if args == ((),):  # tuple[()]
            return {"type": "array", "maxItems": 0}
        items = [_schema(a, where, seen) for a in args]
        return {"type": "array", "prefixItems": items, "minItems": len(items), "maxItems": len(items)}
    if origin in (dict, typing.Mapping, typing.MutableMapping):
        if args and args[0] is not str:
            raise UnsupportedAnnotation(f"{where}: dict keys must be str (JSON object keys), got {_describe(args[0])}")
        return {"type": "object", "additionalProperties": _schema(args[1], where, seen)} if args else {"type": "object"}
    raise UnsupportedAnnotation(f"{where}: unsupported generic annotation {tp!r}")


def _union_schema(members: list[dict[str, Any]]) -> dict[str, Any]:
    if any(m == {} for m in members):
        return {}
    simple = all(set(m) == {"type"} and isinstance(m["type"], str) for m in members)
    if simple:
        kinds: list[str] = []
        for m in members:
            if m["type"] not in kinds:
                kinds.append(m["type"])
        return {"type": kinds[0] if len(kinds) == 1 else kinds}
    return {"anyOf": members}


def _enum_schema(tp: type[enum.Enum], where: str) -> dict[str, Any]:
    values = tuple(member.value for member in tp)
    if not values:
        raise UnsupportedAnnotation(f"{where}: Enum {tp.__qualname__} has no members")
    if not all(isinstance(v, (str, int, float)) and not isinstance(v, bool) for v in values):
        raise UnsupportedAnnotation(f"{where}: Enum {tp.__qualname__} values must be str or numbers")
    schema: dict[str, Any] = {"enum": list(values)}
    kind = _literal_type(values)
    if kind:
        schema["type"] = kind
    return schema


def _object_schema(tp: Any, where: str, seen: tuple[Any, ...]) -> dict[str, Any]:
    hints = type_hints(tp, _describe(tp))
    field_docs = parse_docstring(tp.__doc__).params if tp.__doc__ else {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    for name, default, description in _object_fields(tp, hints):
        schema = dict(_schema(hints[name], f"{where} (field {_describe(tp)}.{name})", seen))
        text = description or field_docs.get(name)
        if text and "description" not in schema:
            schema["description"] = text
        if default is _REQUIRED:
            required.append(name)
        elif default is not _NO_DEFAULT:
            _add_default(schema, default)
        properties[name] = schema
    out: dict[str, Any] = {"type": "object", "properties": properties, "required": required}
    out["additionalProperties"] = False
    return out


_REQUIRED: Any = object()
_NO_DEFAULT: Any = object()


def _object_fields(tp: Any, hints: dict[str, Any]) -> list[tuple[str, Any, str | None]]:
    """(name, default-or-_REQUIRED-or-_NO_DEFAULT, description) for each field of ``tp``."""
    if dataclasses.is_dataclass(tp):
        out: list[tuple[str, Any, str | None]] = []
        for f in dataclasses.fields(tp):
            if not f.init:
                continue
            if f.default is not dataclasses.MISSING:
                default = f.default
            elif f.default_factory is not dataclasses.MISSING:
                default = _NO_DEFAULT
            else:
                default = _REQUIRED
            description = f.metadata.get("description") if f.metadata else None
            out.append((f.name, default, description))
        return out
    required_keys: frozenset[str] = getattr(tp, "__required_keys__", frozenset())
    return [(name, _REQUIRED if name in required_keys else _NO_DEFAULT, None) for name in hints]


def _add_default(schema: dict[str, Any], default: Any) -> None:
    # a default with no JSON form is simply not advertised
    with contextlib.suppress(TypeError):
        schema["default"] = to_jsonable(default)


# --------------------------------------------------------------------------- python -> JSON


def to_jsonable(value: Any) -> Any:
    """A JSON-compatible copy of ``value`` (dataclasses, Enums, tuples and sets included).

    Raises ``TypeError`` for values with no JSON form.
    """
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    # the casts say what a checker cannot know from isinstance: the items are any Python values
    if isinstance(value, dict):
        mapping = cast("dict[object, object]", value)
        return {str(k) if not isinstance(k, enum.Enum) else str(k.value): to_jsonable(v) for k, v in mapping.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = cast("list[object] | tuple[object, ...] | set[object] | frozenset[object]", value)
        return [to_jsonable(v) for v in items]
    raise TypeError(f"value of type {type(value).__name__} is not JSON-serialisable")


# --------------------------------------------------------------------------- JSON -> python


def convert_value(value: Any, tp: Any, path: str = "") -> Any:
    """Convert a JSON-decoded ``value`` into annotation ``tp``; raise :class:`ConversionError`.

    Dataclasses are instantiated, TypedDicts checked field by field, Enums looked up by value,
    tuples and sets built from lists, and ints accepted where floats are expected.
    """
    if tp is Any:
        return value
    if tp is None or tp is _NoneType:
        if value is not None:
            raise ConversionError(path, f"expected null, got {_kind(value)}")
        return None
    if tp in (bool, int, float, str):
        return _convert_scalar(value, tp, path)
    if _is_enum_class(tp):
        try:
            return tp(value)
        except ValueError:
            allowed = ", ".join(repr(m.value) for m in tp)
            raise ConversionError(path, f"{value!r} is not one of {allowed}") from None
    if dataclasses.is_dataclass(tp) or is_typeddict(tp):
        return _convert_object(value, tp, path)
    origin = typing.get_origin(tp)
    if origin is not None:
        return _convert_generic(value, tp, origin, path)
    if tp in (list, set, frozenset, tuple):
        items = _expect_list(value, path)  # a new list already
        return items if tp is list else tuple(items) if tp is tuple else set(items) if tp is set else frozenset(items)
    if tp is dict:
        return dict(_expect_dict(value, path))
    raise ConversionError(path, f"cannot convert to unsupported type {_describe(tp)}")


def _kind(value: object) -> str:
    names: dict[type, str] = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
                              dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


def _convert_scalar(value: Any, tp: type, path: str) -> Any:
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
        if not ok and isinstance(value, float) and value.is_integer():
            return int(value)
    elif tp is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        if ok:
            return float(value)
    else:
        ok = isinstance(value, str)
    if not ok:
        expected = {bool: "boolean", int: "integer", float: "number", str: "string"}[tp]
        raise ConversionError(path, f"expected {expected}, got {_kind(value)}")
    return value


def _expect_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise ConversionError(path, f"expected array, got {_kind(value)}")
    return list(cast("list[object] | tuple[object, ...]", value))


def _expect_dict(value: Any, path: str) -> dict[str, Any]:
    if not is_object(value):
        raise ConversionError(path, f"expected object, got {_kind(value)}")
    return value


def _join(path: str, key: Any) -> str:
    return f"{path}[{key}]" if isinstance(key, int) else (f"{path}.{key}" if path else str(key))


def _convert_generic(value: Any, tp: Any, origin: Any, path: str) -> Any:
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return convert_value(value, args[0], path)
    if _is_union(origin):
        return _convert_union(value, args, path)
    if origin is Literal:
        for allowed in args:
            if value == allowed and type(value) is type(allowed):
                return allowed
        raise ConversionError(path, f"{value!r} is not one of {', '.join(repr(a) for a in args)}")
    if origin in (list, set, frozenset, typing.Sequence, typing.MutableSequence):
        items = _expect_list(value, path)
        converted = [convert_value(v, args[0], _join(path, i)) for i, v in enumerate(items)] if args else items
        return set(converted) if origin is set else frozenset(converted) if origin is frozenset else converted
    if origin is tuple:
        items = _expect_list(value, path)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(convert_value(v, args[0], _join(path, i)) for i, v in enumerate(items))
        expected: list[Any] = [] if args == ((),) else list(args)
        if len(items) != len(expected):
            raise ConversionError(path, f"expected an array of {len(expected)} items, got {len(items)}")
        return tuple(convert_value(v, t, _join(path, i)) for i, (v, t) in enumerate(zip(items, expected)))
    if origin in (dict, typing.Mapping, typing.MutableMapping):
        mapping = _expect_dict(value, path)
        if not args:
            return dict(mapping)
        return {k: convert_value(v, args[1], _join(path, k)) for k, v in mapping.items()}
    raise ConversionError(path, f"cannot convert to unsupported type {tp!r}")


def _convert_union(value: Any, members: tuple[Any, ...], path: str) -> Any:
    # Prefer a member whose JSON kind matches exactly (so 3 stays an int in ``float | int``).
    ordered = sorted(members, key=lambda m: 0 if _exact_kind(value, m) else 1)
    errors: list[str] = []
    for member in ordered:
        try:
            return convert_value(value, member, path)
        except ConversionError as exc:
            errors.append(exc.reason)
    raise ConversionError(path, f"{_kind(value)} value matches none of the allowed types ({'; '.join(errors)})")


def _exact_kind(value: Any, tp: Any) -> bool:
    if tp in (bool, int, float, str):
        return type(value) is tp
    return value is None and tp in (None, _NoneType)


def _convert_object(value: Any, tp: Any, path: str) -> Any:
    mapping = _expect_dict(value, path)
    hints = type_hints(tp, _describe(tp))
    fields = _object_fields(tp, hints)
    known = {name for name, _, _ in fields}
    unknown = sorted(set(mapping) - known)
    if unknown:
        raise ConversionError(path, f"unexpected field(s) {', '.join(map(repr, unknown))} for {_describe(tp)}")
    converted: dict[str, Any] = {}
    for name, default, _ in fields:
        if name in mapping:
            converted[name] = convert_value(mapping[name], hints[name], _join(path, name))
        elif default is _REQUIRED:
            raise ConversionError(path, f"missing required field {name!r} of {_describe(tp)}")
    if is_typeddict(tp):
        return converted
    try:
        return tp(**converted)
    except (TypeError, ValueError) as exc:  # __post_init__ validation, for example
        raise ConversionError(path, f"cannot build {_describe(tp)}: {exc}") from exc


# --------------------------------------------------------------------------- docstrings


@dataclasses.dataclass
class Docstring:
    """A parsed docstring: the free text, per-parameter descriptions and the returns text."""

    description: str = ""
    params: dict[str, str] = dataclasses.field(default_factory=dict[str, str])
    returns: str = ""


_GOOGLE_PARAM_SECTIONS = {"args", "arguments", "parameters", "params", "attributes", "keyword args", "kwargs"}
_GOOGLE_RETURN_SECTIONS = {"returns", "return", "yields"}
_GOOGLE_OTHER_SECTIONS = {"raises", "examples", "example", "note", "notes", "see also", "warning", "warnings", "todo"}
_SECTION_RE = re.compile(r"^([A-Za-z][A-Za-z ]*):\s*$")
_GOOGLE_ITEM_RE = re.compile(r"^\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(?:\(([^)]*)\))?\s*:\s*(.*)$")
_REST_FIELD_RE = re.compile(r"^:(param|parameter|arg|argument|key|keyword|returns?|type|rtype|raises?)\b([^:]*):\s*(.*)$")


def parse_docstring(doc: str | None) -> Docstring:
    """Parse a Google- or reST-style docstring.

    The description is the text before the first recognised section or field list, with
    paragraphs kept. Parameter descriptions spanning several lines are joined with spaces.
    """
    if not doc:
        return Docstring()
    lines = inspect.cleandoc(doc).splitlines()
    result = Docstring()
    description: list[str] = []
    in_description = True
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        section = _SECTION_RE.match(stripped)
        if section and not line.startswith((" ", "\t")) and section.group(1).lower() in _ALL_SECTIONS:
            in_description = False
            i = _parse_google_section(lines, i + 1, section.group(1).lower(), result)
            continue
        field = _REST_FIELD_RE.match(stripped)
        if field:
            in_description = False
            i = _parse_rest_field(lines, i, field, result)
            continue
        if in_description:
            description.append(line)
        i += 1
    result.description = "\n".join(description).strip()
    return result


_ALL_SECTIONS = _GOOGLE_PARAM_SECTIONS | _GOOGLE_RETURN_SECTIONS | _GOOGLE_OTHER_SECTIONS


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _parse_google_section(lines: list[str], i: int, name: str, out: Docstring) -> int:
    """Consume an indented Google section starting at ``lines[i]``; return the next index."""
    body: list[str] = []
    while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > 0):
        body.append(lines[i])
        i += 1
    if name in _GOOGLE_RETURN_SECTIONS:
        out.returns = " ".join(b.strip() for b in body if b.strip())
    elif name in _GOOGLE_PARAM_SECTIONS:
        _google_items(body, out.params)
    return i


def _google_items(body: list[str], params: dict[str, str]) -> None:
    item_indent = min((_indent(b) for b in body if b.strip()), default=0)
    current: str | None = None
    for raw in body:
        if not raw.strip():
            continue
        match = _GOOGLE_ITEM_RE.match(raw.strip()) if _indent(raw) == item_indent else None
        if match:
            name: str = match.group(1)  # typed: group() says "str | Any", which would keep `current` optional
            current = name
            params[name] = match.group(3).strip()
        elif current is not None:
            params[current] = (params[current] + " " + raw.strip()).strip()


def _parse_rest_field(lines: list[str], i: int, field: re.Match[str], out: Docstring) -> int:
    kind, rest, text = field.group(1), field.group(2).split(), field.group(3).strip()
    i += 1
    while i < len(lines) and lines[i].strip() and _indent(lines[i]) > 0 and not _REST_FIELD_RE.match(lines[i].strip()):
        text = (text + " " + lines[i].strip()).strip()
        i += 1
    if kind in ("param", "parameter", "arg", "argument", "key", "keyword") and rest:
        out.params[rest[-1]] = text
    elif kind in ("return", "returns"):
        out.returns = text
    return i
