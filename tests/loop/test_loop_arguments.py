"""Argument checking (SPEC TOOL-2, phi/loop/arguments.py): the fast checker for simple schemas agrees with
``jsonschema`` — on every schema it compiles, ``jsonschema`` accepts the schema and gives the same verdict
on every value — and a call it accepts runs without ``jsonschema`` being imported at all."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import jsonschema
from hypothesis import given, settings
from hypothesis import strategies as st

from phi.loop.arguments import compile_schema, validate_arguments
from phi.loop.tool import FunctionTool

TYPES = ["object", "array", "string", "boolean", "null", "number", "integer"]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.sampled_from([1.0, 2.0])
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=8)


def schemas(depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    leaf = st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(TYPES) | st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True),
        "enum": st.lists(st.text(max_size=2), max_size=3),
        "minimum": st.integers(-3, 3) | st.floats(-3, 3, allow_nan=False), "maximum": st.integers(-3, 3),
        "minLength": st.integers(0, 3), "maxLength": st.integers(0, 3),
        "minItems": st.integers(0, 3), "maxItems": st.integers(0, 3),
        "description": st.text(max_size=5), "format": st.sampled_from(["email", "date-time"]), "default": json_values,
    })
    if depth == 0:
        return leaf
    inner = schemas(depth - 1)
    return st.fixed_dictionaries({}, optional={
        "type": st.sampled_from(TYPES), "properties": st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
        "required": st.lists(st.sampled_from(["a", "b", "c"]), max_size=3, unique=True),
        "additionalProperties": st.booleans() | inner, "items": inner | st.just(True),
    }) | leaf


@settings(max_examples=400, deadline=None)
@given(schemas(), st.lists(json_values, min_size=1, max_size=6))
def test_the_fast_checker_agrees_with_jsonschema(schema: dict[str, Any], values: list[Any]) -> None:
    check = compile_schema(schema)
    assert check is not None  # the generated schemas stay inside the subset
    jsonschema.Draft202012Validator.check_schema(schema)
    reference = jsonschema.Draft202012Validator(schema)
    for value in values:
        assert check(value) == reference.is_valid(value), (schema, value)


def test_schemas_outside_the_subset_are_left_to_jsonschema() -> None:
    for schema in ({"anyOf": [{"type": "string"}]}, {"$ref": "#/$defs/x"}, {"type": "strng"},
                   {"$schema": "http://json-schema.org/draft-07/schema#"}, {"items": [{"type": "string"}]},
                   {"required": ["a", "a"]}, {"description": 5}, {"enum": [1, "a"]}, {"minLength": -1}):
        assert compile_schema(schema) is None, schema


def test_reasons_come_from_jsonschema_and_a_bad_schema_is_reported() -> None:
    tool = FunctionTool("t", "", {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
                        lambda a, c: "")
    assert validate_arguments(tool, {"n": 1}) is None
    assert validate_arguments(tool, {}) == "'n' is a required property"
    assert validate_arguments(tool, {"n": "x"}) == "n: 'x' is not of type 'integer'"
    broken = FunctionTool("b", "", {"type": "strng"}, lambda a, c: "")
    assert (validate_arguments(broken, {}) or "").startswith("the tool's parameter schema is invalid")


def test_a_valid_call_to_a_simple_tool_never_imports_jsonschema() -> None:
    code = textwrap.dedent("""
        import sys
        from phi import Agent, ScriptedProvider, ScriptedResponse, tool

        @tool
        def add(a: int, b: int) -> int:
            \"\"\"Add.\"\"\"
            return a + b

        agent = Agent(provider=ScriptedProvider([ScriptedResponse.tool_call("add", {"a": 1, "b": 2}), "3"]), tools=[add])
        assert agent.run("go").messages[2].text == "3"
        print("jsonschema" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
