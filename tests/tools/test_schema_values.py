"""phi.tools.schema on the values its pyright-strict typing (issue 33) touched: bare container
annotations, Python containers with non-string keys, TypedDict detection and the error wording."""

from __future__ import annotations

import enum
from typing import Any, TypedDict

import pytest

from phi.tools.schema import ConversionError, convert_value, is_typeddict, json_schema_for, to_jsonable


class Colour(enum.Enum):
    RED = "red"


class Point(TypedDict):
    x: int


@pytest.mark.parametrize("tp, expected", [
    (list, [1, "a"]),
    (tuple, (1, "a")),
    (set, {1, "a"}),
    (frozenset, frozenset({1, "a"})),
])
def test_a_bare_container_annotation_takes_an_array_or_a_tuple(tp: Any, expected: Any) -> None:
    for given in ([1, "a"], (1, "a")):
        converted = convert_value(given, tp)
        assert converted == expected and type(converted) is tp
    source = [1, "a"]
    assert convert_value(source, list) is not source  # a new list, as list(value) gave


def test_a_bare_dict_annotation_copies_an_object_and_refuses_the_rest() -> None:
    source = {"a": 1}
    assert convert_value(source, dict) == source and convert_value(source, dict) is not source
    with pytest.raises(ConversionError, match="expected object, got array"):
        convert_value([1], dict)
    with pytest.raises(ConversionError, match="expected array, got boolean"):
        convert_value(True, list)
    with pytest.raises(ConversionError, match="expected integer, got Colour"):
        convert_value(Colour.RED, int)


def test_python_containers_become_json_whatever_their_keys() -> None:
    assert to_jsonable({Colour.RED: (1, 2), 3: {"x"}, "k": frozenset()}) == {"red": [1, 2], "3": ["x"], "k": []}
    with pytest.raises(TypeError):
        to_jsonable({"a": object()})


def test_enum_and_typeddict_annotations() -> None:
    assert json_schema_for(Colour) == {"enum": ["red"], "type": "string"}
    assert convert_value("red", Colour) is Colour.RED
    with pytest.raises(ConversionError, match="'blue' is not one of 'red'"):
        convert_value("blue", Colour)
    assert is_typeddict(Point) and not is_typeddict(dict) and not is_typeddict(Point(x=1))
    assert convert_value({"x": 1}, Point) == {"x": 1}
