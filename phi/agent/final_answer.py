"""Schema helpers for structured output (SPEC AGENT-4, TOOL-2).

``Agent.run_structured(prompt, schema, max_retries=2)`` asks the model for a JSON value of a given
shape. It works by adding a synthetic tool, built here by :func:`final_answer_tool`, that the model
must call with its answer as arguments:

1. ``tool = final_answer_tool(schema)`` — ``schema`` is either a JSON Schema ``dict`` or a Python
   annotation (a dataclass, a TypedDict, ``list[int]``, ...), turned into JSON Schema with
   :func:`schema_for_type`.
2. The tool's ``execute(args, ctx)`` validates ``args`` against the schema. An invalid answer raises
   :class:`~phi.errors.ToolError` whose message is the validation failure, so the model sees an
   error tool result and can retry. A valid answer is stored: ``tool.accepted`` becomes True,
   ``tool.value`` holds the JSON value and ``tool.typed`` the converted Python value (a dataclass
   instance for a dataclass schema; the JSON value itself for a dict schema).
3. The agent counts ``tool.attempts`` (calls that reached execute) and, once ``tool.attempts``
   exceeds ``1 + max_retries`` without success, raises
   ``StructuredOutputFailed(tool.attempts, tool.last_error)``.

A tool's arguments must be a JSON object, so a schema that is not an object schema (for example
``list[int]`` or ``{"type": "string"}``) is wrapped as ``{"value": <schema>}``; the wrapper is
removed again before the value is stored, so callers never see it (``tool.wrapped`` tells which).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..concurrency import sync
from ..errors import ConfigError, ToolError
from ..json_values import is_object
from ..log import get_logger
from ..loop.arguments import best_error
from ..loop.tool import ToolContext
from ..tools.schema import ConversionError, convert_value, json_schema_for
from ..types import ToolResult

if TYPE_CHECKING:  # jsonschema is imported when a schema is first checked
    from jsonschema.protocols import Validator

__all__ = ["schema_for_type", "convert_value", "final_answer_tool", "FinalAnswerTool", "FINAL_ANSWER_ACCEPTED"]

log = get_logger(__name__)

FINAL_ANSWER_ACCEPTED = "Final answer accepted."
_WRAP_KEY = "value"


def schema_for_type(tp: Any) -> dict[str, Any]:
    """The JSON Schema for a dataclass, TypedDict or any annotation ``@tool`` supports.

    Raises :class:`~phi.tools.schema.UnsupportedAnnotation` (a ``ConfigError``) for anything else.
    """
    name = getattr(tp, "__qualname__", None) or repr(tp)
    return json_schema_for(tp, where=f"structured output type {name}")


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return schema.get("type") == "object"


class FinalAnswerTool:
    """The synthetic tool through which the model delivers a structured answer.

    Attributes after a call: ``accepted`` (bool), ``value`` (the accepted JSON value, or None),
    ``typed`` (the accepted value converted to ``python_type``, or ``value`` when no type was given),
    ``attempts`` (number of calls, valid or not) and ``last_error`` (the latest validation failure).
    Thread-safe; :meth:`reset` clears the state for a new run.
    """

    def __init__(
        self,
        schema: dict[str, Any],
        *,
        name: str = "final_answer",
        description: str | None = None,
        python_type: Any = None,
    ) -> None:
        _check_schema(schema)
        if (not isinstance(name, str)  # pyright: ignore[reportUnnecessaryIsInstance]  # callers without a type checker
                or not re.match(r"^[A-Za-z0-9_-]{1,64}$", name)):
            raise ConfigError(f"final answer tool name {name!r} is invalid: use 1-64 letters, digits, '_' or '-'")
        self.name = name
        self.label = name
        self.timeout_ms: int | None = None
        self.answer_schema = schema
        self.python_type = python_type
        self.wrapped = not _is_object_schema(schema)
        self.parameters = (
            {"type": "object", "properties": {_WRAP_KEY: schema}, "required": [_WRAP_KEY], "additionalProperties": False}
            if self.wrapped
            else schema
        )
        self.description = description or (
            "Call this tool exactly once, as your final action, to deliver the final answer. "
            "Its arguments are the answer and must match the parameter schema."
        )
        self._lock = sync.Lock()
        self._validator: Validator | None = None
        self.reset()

    def reset(self) -> None:
        """Forget any previous answer and attempt count."""
        with self._lock:
            self.accepted = False
            self.value: Any = None
            self.typed: Any = None
            self.attempts = 0
            self.last_error = ""

    def validate(self, args: Any) -> tuple[Any, Any]:
        """Return ``(json_value, typed_value)`` for ``args`` or raise ToolError saying why not."""
        with self._lock:
            if self._validator is None:
                from jsonschema.validators import validator_for

                self._validator = validator_for(self.parameters)(self.parameters)
            validator = self._validator
        error = best_error(validator, args)
        if error is not None:
            path = list(error.absolute_path)
            if self.wrapped and path[:1] == [_WRAP_KEY]:
                path = path[1:]
            where = "/".join(str(p) for p in path)
            raise ToolError(f"Invalid final answer: {where + ': ' if where else ''}{error.message}")
        value = args[_WRAP_KEY] if self.wrapped else args
        if self.python_type is None:
            return value, value
        try:
            return value, convert_value(value, self.python_type)
        except ConversionError as exc:
            raise ToolError(f"Invalid final answer: {exc}") from None

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        """Validate the answer; store it when valid, raise ToolError with the reason otherwise."""
        with self._lock:
            self.attempts += 1
        try:
            value, typed = self.validate(args)
        except ToolError as exc:
            with self._lock:
                self.last_error = str(exc)
            log.debug("final answer rejected: %s", exc)
            raise
        with self._lock:
            self.accepted = True
            self.value = value
            self.typed = typed
            self.last_error = ""
        return ToolResult.from_text(FINAL_ANSWER_ACCEPTED, details={"final_answer": True})


def _check_schema(schema: Any) -> None:
    if not is_object(schema):
        raise ConfigError(f"structured output schema must be a JSON Schema object (dict), got {type(schema).__name__}")
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ConfigError(f"structured output schema is not a valid JSON Schema: {exc.message}") from None


def final_answer_tool(schema: Any, name: str = "final_answer", description: str | None = None) -> FinalAnswerTool:
    """Build the synthetic final-answer tool for ``schema``.

    ``schema`` is a JSON Schema dict, or a Python type (dataclass, TypedDict, ``list[int]``, ...)
    whose schema comes from :func:`schema_for_type`; with a type, ``tool.typed`` holds the converted
    value (e.g. a dataclass instance). Raises ``ConfigError`` for an invalid schema or type.
    """
    if is_object(schema):
        return FinalAnswerTool(schema, name=name, description=description)
    return FinalAnswerTool(schema_for_type(schema), name=name, description=description, python_type=schema)
