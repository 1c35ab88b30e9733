"""@tool: schemas from signatures, docstrings, validation/conversion, errors (SPEC §5.4)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, TypedDict, Union

import pytest

from phi.loop.tool import AgentTool, ToolContext
from phi.errors import ConfigError, InvalidArgs, ToolError
from phi.tools.function_tool import DecoratedTool, tool
from phi.tools.schema import UnsupportedAnnotation, parse_docstring
from phi.types import TextContent, ToolResult


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


@dataclass
class Point:
    """A point in the plane.

    Attributes:
        x: Horizontal position.
        y: Vertical position.
    """

    x: float
    y: float = 0.0


@dataclass
class Shape:
    name: str
    points: list[Point] = field(default_factory=list)
    color: Color = Color.RED


class Options(TypedDict, total=False):
    verbose: bool
    depth: int


class Required(TypedDict):
    key: str


def _ctx(name: str = "t") -> ToolContext:
    return ToolContext("call-1", name)


# --------------------------------------------------------------------------- schema table


def f_str(a: str): ...
def f_int(a: int): ...
def f_float(a: float): ...
def f_bool(a: bool): ...
def f_none(a: None): ...
def f_any(a: Any): ...
def f_list(a: list[int]): ...
def f_List(a: List[str]): ...
def f_bare_list(a: list): ...
def f_dict(a: dict[str, float]): ...
def f_Dict(a: Dict[str, List[int]]): ...
def f_tuple(a: tuple[int, str]): ...
def f_tuple_var(a: Tuple[int, ...]): ...
def f_set(a: set[str]): ...
def f_optional(a: Optional[int]): ...
def f_pipe_none(a: str | None): ...
def f_union(a: Union[int, str]): ...
def f_union_obj(a: Union[int, list[str]]): ...
def f_literal(a: Literal["x", "y"]): ...
def f_literal_int(a: Literal[1, 2, 3]): ...
def f_enum(a: Color): ...
def f_int_enum(a: Level): ...
def f_annotated(a: Annotated[int, "how many"]): ...
def f_default(a: int = 5): ...
def f_default_none(a: int = None): ...  # type: ignore[assignment]
def f_typeddict(a: Options): ...
def f_typeddict_req(a: Required): ...


POINT_SCHEMA = {
    "type": "object",
    "properties": {
        "x": {"type": "number", "description": "Horizontal position."},
        "y": {"type": "number", "description": "Vertical position.", "default": 0.0},
    },
    "required": ["x"],
    "additionalProperties": False,
}


def f_dataclass(a: Point): ...


SCHEMA_TABLE = [
    (f_str, {"type": "string"}),
    (f_int, {"type": "integer"}),
    (f_float, {"type": "number"}),
    (f_bool, {"type": "boolean"}),
    (f_none, {"type": "null"}),
    (f_any, {}),
    (f_list, {"type": "array", "items": {"type": "integer"}}),
    (f_List, {"type": "array", "items": {"type": "string"}}),
    (f_bare_list, {"type": "array"}),
    (f_dict, {"type": "object", "additionalProperties": {"type": "number"}}),
    (f_Dict, {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}}),
    (
        f_tuple,
        {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "minItems": 2, "maxItems": 2},
    ),
    (f_tuple_var, {"type": "array", "items": {"type": "integer"}}),
    (f_set, {"type": "array", "items": {"type": "string"}, "uniqueItems": True}),
    (f_optional, {"type": ["integer", "null"]}),
    (f_pipe_none, {"type": ["string", "null"]}),
    (f_union, {"type": ["integer", "string"]}),
    (f_union_obj, {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"type": "string"}}]}),
    (f_literal, {"enum": ["x", "y"], "type": "string"}),
    (f_literal_int, {"enum": [1, 2, 3], "type": "integer"}),
    (f_enum, {"enum": ["red", "green"], "type": "string"}),
    (f_int_enum, {"enum": [1, 2], "type": "integer"}),
    (f_annotated, {"type": "integer", "description": "how many"}),
    (f_typeddict, {
        "type": "object",
        "properties": {"verbose": {"type": "boolean"}, "depth": {"type": "integer"}},
        "required": [],
        "additionalProperties": False,
    }),
    (f_typeddict_req, {
        "type": "object",
        "properties": {"key": {"type": "string"}},
        "required": ["key"],
        "additionalProperties": False,
    }),
    (f_dataclass, POINT_SCHEMA),
]


@pytest.mark.parametrize("fn, expected", SCHEMA_TABLE, ids=[f.__name__ for f, _ in SCHEMA_TABLE])
def test_schema_table_required_parameter(fn, expected):
    t = tool(fn)
    assert t.parameters == {
        "type": "object",
        "properties": {"a": expected},
        "required": ["a"],
        "additionalProperties": False,
    }


def test_defaults_make_parameters_optional_and_are_advertised():
    assert tool(f_default).parameters["required"] == []
    assert tool(f_default).parameters["properties"]["a"] == {"type": "integer", "default": 5}


def test_default_none_allows_null():
    schema = tool(f_default_none).parameters["properties"]["a"]
    assert schema == {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}


def test_nested_dataclass_schema_is_inlined():
    @tool
    def draw(shape: Shape) -> str:
        return shape.name

    props = draw.parameters["properties"]["shape"]
    assert props["required"] == ["name"]
    assert props["properties"]["points"] == {"type": "array", "items": POINT_SCHEMA}
    assert props["properties"]["color"] == {"enum": ["red", "green"], "type": "string", "default": "red"}


def test_is_an_agent_tool_and_still_callable():
    @tool
    def add(a: int, b: int = 1) -> int:
        """Add two numbers."""
        return a + b

    assert isinstance(add, AgentTool)
    assert isinstance(add, DecoratedTool)
    assert add(2, 3) == 5
    assert add.name == "add" and add.__name__ == "add"
    assert add.description == "Add two numbers."
    assert add.label == "add" and add.timeout_ms is None


def test_decorator_with_options():
    @tool(name="web-search", description="Search the web.", timeout_ms=1500, label="Search")
    def search(query: str) -> str:
        """Ignored docstring."""
        return query

    assert search.name == "web-search"
    assert search.description == "Search the web."
    assert search.timeout_ms == 1500
    assert search.label == "Search"


# --------------------------------------------------------------------------- docstrings


def test_google_docstring_descriptions():
    @tool
    def grep(pattern: str, path: str = ".", ignore_case: bool = False) -> str:
        """Search files for a pattern.

        Uses regular expressions.

        Args:
            pattern (str): The regular expression
                to look for.
            path: Where to search.
            ignore_case: Match case-insensitively.

        Returns:
            Matching lines.

        Raises:
            ToolError: when the pattern is invalid.
        """
        return ""

    assert grep.description == "Search files for a pattern.\n\nUses regular expressions."
    props = grep.parameters["properties"]
    assert props["pattern"]["description"] == "The regular expression to look for."
    assert props["path"]["description"] == "Where to search."
    assert props["ignore_case"]["description"] == "Match case-insensitively."


def test_rest_docstring_descriptions():
    @tool
    def fetch(url: str, retries: int = 2) -> str:
        """Fetch a URL.

        :param url: The address
            to fetch.
        :param int retries: How often to retry.
        :type url: str
        :returns: The body.
        """
        return ""

    assert fetch.description == "Fetch a URL."
    props = fetch.parameters["properties"]
    assert props["url"]["description"] == "The address to fetch."
    assert props["retries"]["description"] == "How often to retry."


def test_parse_docstring_returns_and_empty():
    doc = parse_docstring("Summary.\n\n:param a: A.\n:return: the result")
    assert doc.description == "Summary." and doc.params == {"a": "A."} and doc.returns == "the result"
    assert parse_docstring(None).description == ""
    assert parse_docstring("Just text.").params == {}


def test_annotated_description_wins_over_docstring():
    @tool
    def f(n: Annotated[int, "from annotation"]) -> None:
        """F.

        Args:
            n: from docstring
        """

    assert f.parameters["properties"]["n"]["description"] == "from annotation"


# --------------------------------------------------------------------------- execution


def test_execute_converts_arguments():
    seen = {}

    @tool
    def make(shape: Shape, pair: tuple[int, str], level: Level, tags: set[str], opts: Optional[Options] = None) -> str:
        seen.update(shape=shape, pair=pair, level=level, tags=tags, opts=opts)
        return "done"

    result = make.execute(
        {
            "shape": {"name": "tri", "points": [{"x": 1, "y": 2}, {"x": 3}], "color": "green"},
            "pair": [7, "seven"],
            "level": 2,
            "tags": ["a", "b"],
        },
        _ctx(),
    )
    assert isinstance(result, ToolResult) and result.content == [TextContent("done")]
    assert seen["shape"] == Shape("tri", [Point(1.0, 2.0), Point(3.0, 0.0)], Color.GREEN)
    assert isinstance(seen["shape"].points[0].x, float)
    assert seen["pair"] == (7, "seven")
    assert seen["level"] is Level.HIGH
    assert seen["tags"] == {"a", "b"}
    assert seen["opts"] is None


def test_tool_context_is_injected_and_not_in_schema():
    @tool
    def report(msg: str, ctx: ToolContext) -> str:
        ctx.progress("working")
        return f"{ctx.tool_call_id}:{msg}"

    assert list(report.parameters["properties"]) == ["msg"]
    progress = []
    ctx = ToolContext("id-9", "report", on_progress=progress.append)
    assert report.execute({"msg": "hi"}, ctx).content == [TextContent("id-9:hi")]
    assert progress == ["working"]


def test_optional_tool_context_parameter():
    @tool
    def f(ctx: Optional[ToolContext] = None) -> str:
        return "ctx" if ctx else "none"

    assert f.parameters["properties"] == {}
    assert f.execute({}, _ctx()).content == [TextContent("ctx")]
    assert f() == "none"


def test_positional_only_parameters():
    @tool
    def f(a: int, /, b: int = 2) -> int:
        return a * 10 + b

    assert f.execute({"a": 1}, _ctx()).content == [TextContent("12")]
    assert f.execute({"a": 1, "b": 5}, _ctx()).content == [TextContent("15")]


@pytest.mark.parametrize(
    "value, expected_text",
    [
        ("plain", "plain"),
        (ToolResult.from_text("custom", details={"k": 1}), "custom"),
        (TextContent("block"), "block"),
        ([TextContent("a"), TextContent("b")], "ab"),
        ({"n": 1}, '{"n": 1}'),
        ([1, 2], "[1, 2]"),
        (Point(1.0, 2.0), '{"x": 1.0, "y": 2.0}'),
        (Color.RED, "red"),
        (None, ""),
        (3, "3"),
    ],
)
def test_return_values_are_normalised(value, expected_text):
    @tool
    def f() -> Any:
        return value

    result = f.execute({}, _ctx())
    assert isinstance(result, ToolResult)
    assert "".join(b.text for b in result.content) == expected_text


# --------------------------------------------------------------------------- bad calls


@tool
def typed(count: int, name: str, mode: Literal["fast", "slow"] = "fast", point: Optional[Point] = None) -> str:
    return "ok"


BAD_CALLS = [
    ({}, "'count' is a required property"),
    ({"count": "3", "name": "x"}, "count: '3' is not of type 'integer'"),
    ({"count": True, "name": "x"}, "count: True is not of type 'integer'"),
    ({"count": 1, "name": "x", "extra": 1}, "'extra' was unexpected"),
    ({"count": 1, "name": "x", "mode": "medium"}, "mode: 'medium' is not one of ['fast', 'slow']"),
    ({"count": 1, "name": "x", "point": {"y": 1}}, "'x' is a required property"),
    ({"count": 1, "name": "x", "point": {"x": "far"}}, "'far'"),
    ([1, 2], "expected a JSON object"),
]


@pytest.mark.parametrize("args, fragment", BAD_CALLS)
def test_bad_calls_raise_invalid_args(args, fragment):
    with pytest.raises(InvalidArgs) as info:
        typed.execute(args, _ctx())
    message = str(info.value)
    assert message.startswith("Invalid arguments for tool typed: ")
    assert fragment in message
    assert isinstance(info.value, ToolError)


def test_invalid_args_never_reach_the_function():
    calls = []

    @tool
    def f(n: int) -> int:
        calls.append(n)
        return n

    with pytest.raises(InvalidArgs):
        f.execute({"n": 1.5}, _ctx())
    assert calls == []
    f.execute({"n": 2}, _ctx())
    assert calls == [2]


def test_tool_errors_from_the_function_propagate():
    @tool
    def f() -> str:
        raise ToolError("disk full")

    with pytest.raises(ToolError, match="disk full"):
        f.execute({}, _ctx())


def test_none_args_treated_as_empty_object():
    @tool
    def f(n: int = 4) -> int:
        return n

    assert f.execute(None, _ctx()).content == [TextContent("4")]  # type: ignore[arg-type]


# --------------------------------------------------------------------------- decoration-time errors


class Unknown:
    pass


def bad_class(a: Unknown): ...
def bad_dict_key(a: dict[int, str]): ...
def bad_no_annotation(a): ...
def bad_varargs(*a: int): ...
def bad_kwargs(**kw: int): ...
def bad_literal(a: Literal[1.5]): ...
def bad_nested(a: list[Unknown]): ...
def bad_forward(a: "NoSuchType"): ...  # noqa: F821


@pytest.mark.parametrize(
    "fn, fragment",
    [
        (bad_class, "unsupported annotation"),
        (bad_dict_key, "dict keys must be str"),
        (bad_no_annotation, "has no type annotation"),
        (bad_varargs, "*args/**kwargs"),
        (bad_kwargs, "*args/**kwargs"),
        (bad_literal, "Literal values"),
        (bad_nested, "Unknown"),
        (bad_forward, "cannot resolve"),
    ],
)
def test_unsupported_annotations_fail_at_decoration(fn, fragment):
    with pytest.raises(UnsupportedAnnotation) as info:
        tool(fn)
    assert fragment in str(info.value)
    assert isinstance(info.value, TypeError) and isinstance(info.value, ConfigError)


@dataclass
class Node:
    value: int
    children: list["Node"] = field(default_factory=list)


def test_recursive_types_are_rejected():
    def f(n: Node): ...

    with pytest.raises(UnsupportedAnnotation, match="recursive"):
        tool(f)


def test_async_functions_and_bad_names_are_rejected():
    async def f() -> None: ...

    with pytest.raises(ConfigError, match="async"):
        tool(f)
    with pytest.raises(ConfigError, match="tool name"):
        tool(name="has space")(f_str)
    with pytest.raises(ConfigError, match="timeout_ms"):
        tool(timeout_ms=0)(f_str)


# --- one def, many tools (a tool per session from a closure): each owns its schema and its defaults ---


def _session_tool(seen: list[int], limit: int = 3) -> DecoratedTool[..., Any]:
    """A tool made per session, closing over the session's state (a service's pattern)."""

    @tool
    def record(n: int, tag: str = "x", cap: int = limit) -> str:
        """Record a number.

        Args:
            n: The number.
        """
        seen.append(n)
        return f"{tag}{n}"

    return record


def test_tools_of_one_def_each_own_their_schema() -> None:
    first, second = _session_tool([]), _session_tool([])
    assert first.parameters == second.parameters
    assert first.parameters is not second.parameters
    first.parameters["properties"]["n"]["description"] = "changed by a caller"
    second.parameters["properties"]["n"]["description"] = "changed by another"
    assert first.parameters["properties"]["n"]["description"] == "changed by a caller"
    assert _session_tool([]).parameters["properties"]["n"]["description"] == "The number."
    seen: list[int] = []
    assert _session_tool(seen).execute({"n": 4}, None).content == [TextContent("x4")]  # type: ignore[arg-type]
    assert seen == [4]


def test_a_default_made_anew_is_seen() -> None:
    assert _session_tool([], limit=3).parameters["properties"]["cap"]["default"] == 3
    assert _session_tool([], limit=9).parameters["properties"]["cap"]["default"] == 9


def test_changed_annotations_and_docstring_are_seen() -> None:
    def make(doc: str | None = None, retype: bool = False) -> DecoratedTool[..., Any]:
        def fn(n: int) -> str:
            """Do it.

            Args:
                n: Old words.
            """
            return str(n)

        if doc is not None:
            fn.__doc__ = doc
        if retype:
            fn.__annotations__["n"] = str
        return tool(fn)

    assert make().parameters["properties"]["n"] == {"type": "integer", "description": "Old words."}
    assert make(retype=True).parameters["properties"]["n"]["type"] == "string"
    assert make(doc="Do it.\n\nArgs:\n    n: New words.\n").parameters["properties"]["n"]["description"] == "New words."
    assert make().parameters["properties"]["n"] == {"type": "integer", "description": "Old words."}


def test_a_wrapper_of_one_def_takes_each_wrapped_signature() -> None:
    import functools

    def wrap(fn: Any) -> Any:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return fn(*args, **kwargs)

        return wrapper

    def a(x: int) -> int:
        return x

    def b(y: str, z: bool = False) -> str:
        return y

    assert list(tool(wrap(a)).parameters["properties"]) == ["x"]
    assert list(tool(wrap(b)).parameters["properties"]) == ["y", "z"]


def test_a_dropped_tool_keeps_its_default_values_nowhere() -> None:
    import gc
    import weakref

    def make() -> tuple[DecoratedTool[..., Any], weakref.ref[Point]]:
        origin = Point(1.0, 2.0)

        def at(p: Point = origin) -> str:
            return f"{p.x},{p.y}"

        return tool(at), weakref.ref(origin)

    first, _ = make()  # the definition is known from now on
    second, origin = make()
    assert second.parameters["properties"]["p"]["default"] == {"x": 1.0, "y": 2.0}
    assert second.execute({}, None).content == [TextContent("1.0,2.0")]  # type: ignore[arg-type]
    was = gc.isenabled()
    gc.disable()
    try:
        del second
        assert origin() is None  # freed by reference counting: nothing of phi's holds it
    finally:
        if was:
            gc.enable()
    del first
