"""Structured-output schema helpers (SPEC §5.5)."""

from __future__ import annotations

import enum
import threading
from dataclasses import dataclass, field
from typing import Literal, Optional, TypedDict

import pytest

from phi.loop.tool import AgentTool, ToolContext
from phi.errors import ConfigError, ToolError
from phi.tools.schema import ConversionError, UnsupportedAnnotation
from phi.agent.final_answer import FINAL_ANSWER_ACCEPTED, FinalAnswerTool, convert_value, final_answer_tool, schema_for_type


class Mood(enum.Enum):
    HAPPY = "happy"
    SAD = "sad"


@dataclass
class Person:
    name: str
    age: int
    mood: Mood = Mood.HAPPY
    tags: list[str] = field(default_factory=list)


@dataclass
class Team:
    lead: Person
    members: list[Person]
    motto: Optional[str] = None


class Movie(TypedDict):
    title: str
    year: int


def _ctx() -> ToolContext:
    return ToolContext("c1", "final_answer")


def test_schema_for_dataclass():
    assert schema_for_type(Person) == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "mood": {"enum": ["happy", "sad"], "type": "string", "default": "happy"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name", "age"],
        "additionalProperties": False,
    }


def test_schema_for_typeddict_and_plain_annotations():
    assert schema_for_type(Movie)["required"] == ["title", "year"]
    assert schema_for_type(list[int]) == {"type": "array", "items": {"type": "integer"}}
    assert schema_for_type(Literal["yes", "no"]) == {"enum": ["yes", "no"], "type": "string"}


def test_schema_for_unsupported_type():
    with pytest.raises(UnsupportedAnnotation, match="structured output type"):
        schema_for_type(complex)


def test_convert_value_builds_nested_dataclasses():
    value = {
        "lead": {"name": "Ada", "age": 36, "mood": "sad"},
        "members": [{"name": "Bob", "age": 30, "tags": ["x"]}],
    }
    team = convert_value(value, Team)
    assert team == Team(Person("Ada", 36, Mood.SAD), [Person("Bob", 30, tags=["x"])])
    assert convert_value({"title": "Up", "year": 2009}, Movie) == {"title": "Up", "year": 2009}
    assert convert_value([1, 2], tuple[int, int]) == (1, 2)
    assert convert_value(3, float) == 3.0 and isinstance(convert_value(3, float), float)
    assert convert_value(3, int | float) == 3 and isinstance(convert_value(3, int | float), int)


@pytest.mark.parametrize(
    "value, tp, fragment",
    [
        ({"name": "A"}, Person, "missing required field 'age'"),
        ({"name": "A", "age": "x"}, Person, "age: expected integer, got string"),
        ({"name": "A", "age": 1, "extra": 2}, Person, "unexpected field(s) 'extra'"),
        ({"name": "A", "age": 1, "mood": "meh"}, Person, "'meh' is not one of"),
        ([1], tuple[int, int], "expected an array of 2 items"),
        ("x", list[int], "expected array"),
        ({"lead": {"name": "A", "age": 1}, "members": [{"name": 3, "age": 1}]}, Team, "members[0].name"),
        (True, int, "expected integer, got boolean"),
        ("maybe", Literal["yes", "no"], "is not one of"),
        ([1, "a"], list[int], "[1]: expected integer"),
    ],
)
def test_convert_value_errors_name_the_path(value, tp, fragment):
    with pytest.raises(ConversionError) as info:
        convert_value(value, tp)
    assert fragment in str(info.value)


def test_final_answer_tool_with_dict_schema():
    schema = {"type": "object", "properties": {"answer": {"type": "integer"}}, "required": ["answer"]}
    tool = final_answer_tool(schema)
    assert isinstance(tool, AgentTool)
    assert tool.name == "final_answer" and tool.parameters == schema and not tool.wrapped
    assert not tool.accepted and tool.value is None and tool.attempts == 0

    with pytest.raises(ToolError) as info:
        tool.execute({"answer": "forty-two"}, _ctx())
    assert "answer: 'forty-two' is not of type 'integer'" in str(info.value)
    assert tool.attempts == 1 and not tool.accepted and "forty-two" in tool.last_error

    result = tool.execute({"answer": 42}, _ctx())
    assert result.content[0].text == FINAL_ANSWER_ACCEPTED
    assert tool.accepted and tool.value == {"answer": 42} and tool.typed == {"answer": 42}
    assert tool.attempts == 2 and tool.last_error == ""


def test_final_answer_tool_with_dataclass_gives_typed_value():
    tool = final_answer_tool(Person, name="submit_person", description="Submit the person.")
    assert tool.name == "submit_person" and tool.description == "Submit the person."
    with pytest.raises(ToolError, match="'age' is a required property"):
        tool.execute({"name": "Ada"}, _ctx())
    tool.execute({"name": "Ada", "age": 36, "mood": "sad"}, _ctx())
    assert tool.typed == Person("Ada", 36, Mood.SAD)
    assert tool.value == {"name": "Ada", "age": 36, "mood": "sad"}


def test_non_object_schema_is_wrapped_and_unwrapped():
    tool = final_answer_tool(list[int])
    assert tool.wrapped
    assert tool.parameters["properties"]["value"] == {"type": "array", "items": {"type": "integer"}}
    with pytest.raises(ToolError) as info:
        tool.execute({"value": [1, "two"]}, _ctx())
    assert str(info.value) == "Invalid final answer: 1: 'two' is not of type 'integer'"
    tool.execute({"value": [1, 2]}, _ctx())
    assert tool.value == [1, 2] and tool.typed == [1, 2]

    string_tool = final_answer_tool({"type": "string", "minLength": 3})
    with pytest.raises(ToolError, match="too short"):
        string_tool.execute({"value": "ab"}, _ctx())
    string_tool.execute({"value": "abc"}, _ctx())
    assert string_tool.value == "abc"


def test_reset_clears_state():
    tool = final_answer_tool({"type": "object"})
    tool.execute({"x": 1}, _ctx())
    tool.reset()
    assert not tool.accepted and tool.value is None and tool.attempts == 0


def test_invalid_schemas_and_names_are_config_errors():
    with pytest.raises(ConfigError, match="not a valid JSON Schema"):
        final_answer_tool({"type": "no-such-type"})
    with pytest.raises(ConfigError, match="unsupported annotation"):
        final_answer_tool(["not", "a", "schema"])
    with pytest.raises(ConfigError, match="must be a JSON Schema object"):
        FinalAnswerTool(["not", "a", "schema"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="name"):
        final_answer_tool({"type": "object"}, name="bad name")


def test_concurrent_attempts_are_counted():
    tool = final_answer_tool({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]})

    def call(i: int) -> None:
        try:
            tool.execute({"n": i} if i % 2 else {"n": "bad"}, _ctx())
        except ToolError:
            pass

    threads = [threading.Thread(target=call, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tool.attempts == 20 and tool.accepted
