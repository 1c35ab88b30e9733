"""Checking a tool call's arguments against the tool's JSON Schema before it runs (SPEC TOOL-2).

The rule is JSON Schema (draft 2020-12 unless the schema names another draft) as the ``jsonschema``
package implements it, and every reason a call is refused comes from that package. Importing it costs
a process about a tenth of a second, though, and most tool schemas — everything ``@tool`` writes, and
most MCP and hand-written ones — use a handful of keywords. So a schema made only of those keywords is
compiled into a small checker here, and a call it accepts runs without ``jsonschema`` ever being
loaded; anything else (a keyword outside the subset, a call the checker does not accept, a schema
that names a draft) goes to ``jsonschema``, which gives the verdict and the reason. The checker only
ever says "valid" where ``jsonschema`` would (``tests/loop/test_loop_arguments.py`` compares the two on
generated schemas and values).

The subset: ``type``, ``properties``, ``required``, ``additionalProperties``, ``items`` (one schema),
``enum`` of strings, ``minimum``/``maximum``, ``minLength``/``maxLength``, ``minItems``/``maxItems``,
and the annotations ``title``, ``description``, ``default``, ``examples``, ``format`` (not checked by
default in ``jsonschema`` either) and ``$comment``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Callable, Sized, cast

from ..json_values import is_array, is_object
from .tool import AgentTool

if TYPE_CHECKING:  # jsonschema itself is imported only when a call needs it (see the module docstring)
    from jsonschema.exceptions import ValidationError
    from jsonschema.protocols import Validator

Check = Callable[[Any], bool]

_VALIDATORS_MAX = 512
# id(schema) -> (schema, fast checker or None, jsonschema validator or None or the schema's problem), LRU
_validators: OrderedDict[int, tuple[Any, Check | None, Validator | str | None]] = OrderedDict()
_validators_lock = threading.Lock()

_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}
_ANNOTATIONS = {"title": str, "description": str, "$comment": str, "format": str, "examples": list}
_BOUNDS = {"minimum", "maximum"}
_COUNTS: dict[str, type[Sized]] = {"minLength": str, "maxLength": str, "minItems": list, "maxItems": list}


def validate_arguments(tool: AgentTool, args: Any) -> str | None:
    """Check ``args`` against the tool's JSON Schema; returns the reason they are invalid, or None."""
    if is_object(args) and set(args) == {"__raw_arguments"}:
        raw = str(args["__raw_arguments"])
        return f"arguments are not valid JSON: {raw[:200]!r}"
    schema = tool.parameters
    quick, validator = _cached(schema)
    if quick is not None and quick(args):
        return None
    if validator is None:
        validator = _jsonschema_validator(schema)
    if isinstance(validator, str):
        return validator
    if validator.is_valid(args):
        return None
    error = best_error(validator, args)
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else str(error.message)


def best_error(validator: Validator, instance: Any) -> ValidationError | None:
    """The violation of ``validator``'s schema by ``instance`` that ``jsonschema`` ranks most relevant
    (its ``best_match``), or None when there is none."""
    from jsonschema import exceptions

    errors = validator.iter_errors(instance)
    # types-jsonschema leaves best_match's return unannotated: it is the chosen ValidationError or None
    return cast("ValidationError | None", exceptions.best_match(errors))  # pyright: ignore[reportUnknownMemberType]


def compile_schema(schema: object) -> Check | None:
    """A checker for ``schema`` if it uses only the subset (see the module docstring), else None."""
    if schema is True or schema == {}:
        return _anything
    if not is_object(schema):
        return None
    checks: list[Check] = []
    for key, value in schema.items():
        check = _keyword(key, value, schema)
        if check is None:
            return None
        if check is not _anything:
            checks.append(check)
    if not checks:
        return _anything
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(check(v) for check in checks)


def _anything(value: Any) -> bool:
    return True


def _keyword(key: str, value: Any, schema: dict[str, Any]) -> Check | None:
    """The check of one keyword, ``_anything`` for an annotation, None outside the subset."""
    if key in _ANNOTATIONS:
        return _anything if isinstance(value, _ANNOTATIONS[key]) else None
    if key == "default":
        return _anything
    if key == "type":
        return _type_check(value)
    if key == "properties":
        return _properties_check(value)
    if key == "required":
        if not (is_array(value) and all(isinstance(n, str) for n in value) and len(set(value)) == len(value)):
            return None
        return lambda v: not isinstance(v, dict) or all(name in v for name in value)
    if key == "additionalProperties":
        return _additional_check(value, schema.get("properties", {}))
    if key == "items":
        inner = compile_schema(value)
        return None if inner is None else (lambda v: not is_array(v) or all(inner(x) for x in v))
    if key == "enum":
        if not (is_array(value) and all(isinstance(x, str) for x in value)):
            return None
        allowed = frozenset(value)
        return lambda v: isinstance(v, str) and v in allowed
    if key in _BOUNDS:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        number = _TYPES["number"]
        if key == "minimum":
            return lambda v: not number(v) or v >= value
        return lambda v: not number(v) or v <= value
    if key in _COUNTS:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return None
        kind = _COUNTS[key]
        if key.startswith("min"):
            return lambda v: not isinstance(v, kind) or len(v) >= value
        return lambda v: not isinstance(v, kind) or len(v) <= value
    return None


def _type_check(value: Any) -> Check | None:
    names = [value] if isinstance(value, str) else value
    if not is_array(names) or not names or len(set(map(str, names))) != len(names) \
            or not all(isinstance(n, str) and n in _TYPES for n in names):
        return None
    checks = [_TYPES[n] for n in names]
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(check(v) for check in checks)


def _properties_check(value: Any) -> Check | None:
    if not is_object(value):
        return None
    inner: dict[str, Check] = {}
    for name, sub in value.items():
        check = compile_schema(sub)
        if check is None:
            return None
        if check is not _anything:
            inner[name] = check
    return lambda v: not isinstance(v, dict) or all(check(v[n]) for n, check in inner.items() if n in v)


def _additional_check(value: Any, properties: Any) -> Check | None:
    if not is_object(properties):
        return None
    known = frozenset(properties)
    if value is False:
        return lambda v: not is_object(v) or all(k in known for k in v)
    extra = compile_schema(value)
    if extra is None:
        return None
    return lambda v: not is_object(v) or all(extra(x) for k, x in v.items() if k not in known)


def _cached(schema: Any) -> tuple[Check | None, Validator | str | None]:
    """The schema's fast checker (None outside the subset) and its ``jsonschema`` validator (None until
    one was needed; a string: what is wrong with the schema)."""
    key = id(schema)
    with _validators_lock:
        cached = _validators.get(key)
        if cached is not None and cached[0] is schema:
            _validators.move_to_end(key)
            return cached[1], cached[2]
    quick = compile_schema(schema)
    _remember(schema, quick, None)
    return quick, None


def _jsonschema_validator(schema: Any) -> Validator | str:
    """A ``jsonschema`` validator for ``schema`` (cached with the fast checker), or the schema's problem."""
    import jsonschema.validators  # lazy: costs about 0.1 s; many processes never need it

    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    try:
        cls.check_schema(schema)
    except jsonschema.SchemaError as error:
        validator: Validator | str = f"the tool's parameter schema is invalid ({error.message})"
    else:
        validator = cls(schema)
    with _validators_lock:
        cached = _validators.get(id(schema))
        quick = cached[1] if cached is not None and cached[0] is schema else None
    _remember(schema, quick, validator)
    return validator


def _remember(schema: Any, quick: Check | None, validator: Validator | str | None) -> None:
    with _validators_lock:
        _validators[id(schema)] = (schema, quick, validator)  # holding the schema keeps its id from being reused
        _validators.move_to_end(id(schema))
        if len(_validators) > _VALIDATORS_MAX:
            _validators.popitem(last=False)
