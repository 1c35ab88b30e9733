"""Tools from typed Python functions: the ``@tool`` decorator (SPEC TOOL-1, TOOL-2).

::

    @tool
    def search(query: str, limit: int = 10, ctx: ToolContext | None = None) -> list[str]:
        \"\"\"Search the index.

        Args:
            query: What to look for.
            limit: How many hits to return at most.
        \"\"\"

``search`` is now an :class:`~phi.loop.tool.AgentTool` (``name``, ``description``,
``parameters``, ``execute``) that can still be called like the original function. The JSON Schema
is built once, at decoration time, from the annotations (see :mod:`phi.tools.schema`); parameters with a
default are optional; the docstring supplies the tool description and per-parameter descriptions.
A parameter annotated :class:`~phi.loop.tool.ToolContext` receives the running tool's context and
is not part of the schema.

At call time ``execute(args, ctx)`` validates ``args`` against the schema (``jsonschema``, imported
lazily), converts them to the annotated types (dataclass instances, Enum members, tuples, ...) and
calls the function. Bad arguments raise :class:`~phi.errors.InvalidArgs` with the text
``Invalid arguments for tool {name}: {reason}`` and never reach the function. Return values may be
a string, content blocks, a :class:`~phi.types.ToolResult` or any JSON-serialisable value
(dataclasses and Enums included).

Unsupported annotations, missing annotations, ``*args``/``**kwargs`` and coroutine functions are
rejected at decoration time with :class:`~phi.tools.schema.UnsupportedAnnotation` / ``ConfigError``.

A tool pickles by reference (its module and name), so a parallel branch can take it to another
process (SPEC EVAL-7); the function must be importable there.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import re
import sys
import threading
import typing
from typing import Any, Callable, Generic, ParamSpec, TypeVar, cast, overload

from ..errors import ConfigError, InvalidArgs
from ..json_values import is_array
from ..log import get_logger
from ..loop.tool import ToolContext, to_tool_result
from ..types import ImageContent, TextContent, ThinkingContent, ToolCall, ToolResult
from .schema import (
    ConversionError,
    Docstring,
    UnsupportedAnnotation,
    convert_value,
    json_schema_for,
    parse_docstring,
    to_jsonable,
    type_hints,
)

_CONTENT_TYPES = (TextContent, ImageContent, ThinkingContent, ToolCall)

__all__ = ["tool", "DecoratedTool", "validate_args"]

log = get_logger(__name__)

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MISSING: Any = object()
P = ParamSpec("P")
R = TypeVar("R")


@dataclasses.dataclass(frozen=True)
class _Param:
    name: str
    annotation: Any
    positional_only: bool
    default: Any  # _MISSING when required
    is_context: bool


class DecoratedTool(Generic[P, R]):
    """An AgentTool wrapping a typed function; still callable like the function itself, with the same
    signature for type checkers (``DecoratedTool[P, R]`` is ``Callable[P, R]`` and a tool)."""

    def __init__(
        self,
        fn: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        label: str | None = None,
        timeout_ms: int | None = None,
        inline: bool = False,
    ) -> None:
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
            raise ConfigError(f"@tool cannot wrap async function {fn.__name__}(): phi tools are synchronous")
        self.fn = fn
        self.name: str = name if name is not None else getattr(fn, "__name__", "")
        # checked at run time too: a name given by a caller without a type checker may be anything
        if not isinstance(self.name, str) or not _NAME_RE.match(self.name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"tool name {self.name!r} is invalid: use 1-64 letters, digits, '_' or '-'")
        # checked at run time too: callers without a type checker pass anything
        if timeout_ms is not None and (not isinstance(timeout_ms, int)  # pyright: ignore[reportUnnecessaryIsInstance]
                                       or isinstance(timeout_ms, bool) or timeout_ms <= 0):
            raise ConfigError(f"timeout_ms of tool {self.name} must be a positive integer, got {timeout_ms!r}")
        if inline and timeout_ms is not None:
            raise ConfigError(f"tool {self.name}: an inline tool runs on the loop's thread and cannot time out; "
                              "drop timeout_ms or inline")
        raw = getattr(fn, "__doc__", None)
        doc = _parsed_docstring(raw) if isinstance(raw, str) else parse_docstring(inspect.getdoc(fn))
        self.description = description if description is not None else doc.description
        self.label = label or self.name
        self.timeout_ms = timeout_ms
        self.inline = inline
        self._params = _inspect_params(fn, self.name)
        self.parameters = _build_schema(self._params, doc.params, self.name)
        self._validator: Any = None
        self._lock = threading.Lock()
        functools.update_wrapper(self, fn)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle by reference (SPEC EVAL-7): a module-level ``@tool`` is found again by its module and
        name; a tool made with ``tool(fn, ...)`` is made again from ``fn`` (itself pickled by reference)."""
        module, qualname = getattr(self, "__module__", None), getattr(self, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and _find(module, qualname) is self:
            return (_tool_by_reference, (module, qualname))
        return (_remade_tool, (self.fn, self.name, self.description, self.label, self.timeout_ms, self.inline))

    # The original function, unchanged: no validation, no conversion.
    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<tool {self.name} wrapping {getattr(self.fn, '__qualname__', self.fn)!r}>"

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate and convert ``args``, call the function, normalise its return value."""
        positional, keywords = self.bind(args, ctx)
        fn: Callable[..., R] = self.fn  # arguments checked against the schema, not the static signature
        return _normalise_result(fn(*positional, **keywords))

    def bind(self, args: Any, ctx: ToolContext | None) -> tuple[list[Any], dict[str, Any]]:
        """Validate and convert ``args`` into the function's call arguments; raise InvalidArgs."""
        if args is None:
            args = {}
        if ctx is None or not ctx.arguments_validated:  # the loop validated already (SPEC TOOL-2)
            validate_args(self._get_validator(), args, self.name)
        positional: list[Any] = []
        keywords: dict[str, Any] = {}
        for param in self._params:
            if param.is_context:
                value = ctx
            elif param.name in args:
                try:
                    value = convert_value(args[param.name], param.annotation, param.name)
                except ConversionError as exc:
                    raise InvalidArgs(f"Invalid arguments for tool {self.name}: {exc}") from None
            elif param.positional_only and param.default is not _MISSING:
                value = param.default
            else:
                continue  # optional parameter left to its default
            if param.positional_only:
                positional.append(value)
            else:
                keywords[param.name] = value
        return positional, keywords

    def _get_validator(self) -> Any:
        with self._lock:
            if self._validator is None:
                from jsonschema import Draft202012Validator

                self._validator = Draft202012Validator(self.parameters)
            return self._validator


def _find(module: str, qualname: str) -> object:
    """The object ``module.qualname`` names now, or None."""
    found: object = sys.modules.get(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return found


def _tool_by_reference(module: str, qualname: str) -> DecoratedTool[..., Any]:
    """Unpickling a module-level ``@tool``: import its module and take it from there."""
    importlib.import_module(module)
    found = _find(module, qualname)
    if not isinstance(found, DecoratedTool):
        raise ConfigError(f"unpickling tool {module}.{qualname}: that name is {found!r} here, not a @tool")
    return cast("DecoratedTool[..., Any]", found)


def _remade_tool(fn: Callable[..., Any], name: str, description: str, label: str, timeout_ms: int | None,
                 inline: bool) -> DecoratedTool[..., Any]:
    return DecoratedTool(fn, name=name, description=description, label=label, timeout_ms=timeout_ms, inline=inline)


def validate_args(validator: Any, args: Any, tool_name: str) -> None:
    """Raise :class:`InvalidArgs` naming the first schema violation of ``args`` (if any)."""
    if not isinstance(args, dict):
        raise InvalidArgs(f"Invalid arguments for tool {tool_name}: expected a JSON object, got {type(args).__name__}")
    # types-jsonschema leaves best_match's result partly unannotated: a ValidationError or None
    from jsonschema.exceptions import best_match  # pyright: ignore[reportUnknownVariableType]

    error: Any = cast(Any, best_match(validator.iter_errors(args)))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        reason = f"{where}: {error.message}" if where else error.message
        raise InvalidArgs(f"Invalid arguments for tool {tool_name}: {reason}")


def _normalise_result(value: Any) -> ToolResult:
    if value is None or isinstance(value, (str, ToolResult, *_CONTENT_TYPES)):
        return to_tool_result(value)
    if is_array(value) and value and all(isinstance(v, _CONTENT_TYPES) for v in value):
        return to_tool_result(value)
    try:
        jsonable = to_jsonable(value)
    except TypeError:
        return to_tool_result(value)  # falls back to str() for values without a JSON form
    return to_tool_result(jsonable)


@functools.lru_cache(maxsize=512)
def _parsed_docstring(doc: str) -> Docstring:
    """:func:`parse_docstring`, once per text: a service making a tool per session (a closure over the
    session's state) parses the same docstring every time. Only read, never changed, by the tool."""
    return parse_docstring(doc)


def _is_context_annotation(tp: Any) -> bool:
    if tp is ToolContext:
        return True
    args = typing.get_args(tp)
    return bool(args) and ToolContext in args and all(a in (ToolContext, type(None)) for a in args)


def _inspect_params(fn: Callable[..., Any], name: str) -> list[_Param]:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"@tool cannot read the signature of {fn!r}: {exc}") from exc
    hints = type_hints(fn, f"{name}()")
    params: list[_Param] = []
    for p in signature.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise UnsupportedAnnotation(f"parameter {p.name!r} of {name}(): *args/**kwargs cannot be described as JSON Schema")
        if p.name not in hints:
            raise UnsupportedAnnotation(f"parameter {p.name!r} of {name}() has no type annotation; annotate it (e.g. str)")
        annotation = hints[p.name]
        default = _MISSING if p.default is p.empty else p.default
        params.append(_Param(p.name, annotation, p.kind is p.POSITIONAL_ONLY, default, _is_context_annotation(annotation)))
    return params


def _allows_null(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if schema == {} or kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    return any(_allows_null(s) for s in schema.get("anyOf", []))


def _build_schema(params: list[_Param], docs: dict[str, str], name: str) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params:
        if param.is_context:
            continue
        annotation = param.annotation
        schema: dict[str, Any] = dict(json_schema_for(annotation, where=f"parameter {param.name!r} of {name}()"))
        if param.default is None and not _allows_null(schema):
            schema = {"anyOf": [schema, {"type": "null"}]}
        if param.name in docs and docs[param.name] and "description" not in schema:
            schema["description"] = docs[param.name]
        if param.default is _MISSING:
            required.append(param.name)
        else:
            try:
                schema["default"] = to_jsonable(param.default)
            except TypeError:
                pass
        properties[param.name] = schema
    for documented in docs:
        if documented not in properties and not any(p.name == documented for p in params):
            log.warning("docstring of tool %s documents unknown parameter %r", name, documented)
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


@overload
def tool(fn: Callable[P, R]) -> DecoratedTool[P, R]: ...


@overload
def tool(
    fn: None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    timeout_ms: int | None = None,
    inline: bool = False,
) -> Callable[[Callable[P, R]], DecoratedTool[P, R]]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    label: str | None = None,
    timeout_ms: int | None = None,
    inline: bool = False,
) -> Any:
    """Turn a typed function into an AgentTool; use as ``@tool`` or ``@tool(name=..., ...)``.

    ``name`` defaults to the function name, ``description`` to the docstring's free text,
    ``label`` to the name. ``timeout_ms`` overrides the loop's default tool timeout. ``inline=True``
    runs the tool on the loop's own thread (see :mod:`phi.loop.tool_execution`): only for a function that
    returns at once and never blocks.
    """
    if fn is not None:
        if not callable(fn):
            raise ConfigError(f"@tool expects a function, got {fn!r}")
        return DecoratedTool(fn, name=name, description=description, label=label, timeout_ms=timeout_ms,
                             inline=inline)

    def decorate(inner: Callable[P, R]) -> DecoratedTool[P, R]:
        return DecoratedTool(inner, name=name, description=description, label=label, timeout_ms=timeout_ms,
                             inline=inline)

    return decorate
