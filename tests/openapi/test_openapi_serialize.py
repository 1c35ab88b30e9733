"""Parameter serialisation (SPEC §12.2 OAPI-7): OpenAPI styles and RFC 3986 percent-encoding,
checked against the "Style Examples" table of OpenAPI 3.0.4 / 3.1.1 (which follows RFC 6570; the
3.0.3 table's non-exploded label row was wrong) with the values it uses:
color = "blue" / ["blue", "black", "brown"] / {"R": 100, "G": 200, "B": 150}."""

from __future__ import annotations

import pytest

from phi.errors import ToolError
from phi.openapi.operations import Param
from phi.openapi.serialize import header_value, path_segment, query_items

PRIMITIVE, ARRAY, OBJECT = "blue", ["blue", "black", "brown"], {"R": 100, "G": 200, "B": 150}


def param(location, style, explode, **kwargs):
    return Param("color", "color", location, style, explode, **kwargs)


@pytest.mark.parametrize("style, explode, expected", [
    ("simple", False, ["blue", "blue,black,brown", "R,100,G,200,B,150"]),
    ("simple", True, ["blue", "blue,black,brown", "R=100,G=200,B=150"]),
    ("label", False, [".blue", ".blue,black,brown", ".R,100,G,200,B,150"]),
    ("label", True, [".blue", ".blue.black.brown", ".R=100.G=200.B=150"]),
    ("matrix", False, [";color=blue", ";color=blue,black,brown", ";color=R,100,G,200,B,150"]),
    ("matrix", True, [";color=blue", ";color=blue;color=black;color=brown", ";R=100;G=200;B=150"]),
])
def test_path_styles_match_the_specification_table(style, explode, expected):
    p = param("path", style, explode)
    assert [path_segment(p, v) for v in (PRIMITIVE, ARRAY, OBJECT)] == expected


@pytest.mark.parametrize("style, explode, expected", [
    ("form", False, [["color=blue"], ["color=blue,black,brown"], ["color=R,100,G,200,B,150"]]),
    ("form", True, [["color=blue"], ["color=blue", "color=black", "color=brown"], ["R=100", "G=200", "B=150"]]),
    ("spaceDelimited", False, [["color=blue"], ["color=blue%20black%20brown"], ["color=R,100,G,200,B,150"]]),
    ("pipeDelimited", False, [["color=blue"], ["color=blue%7Cblack%7Cbrown"], ["color=R,100,G,200,B,150"]]),
    ("deepObject", True, [["color=blue"], ["color=blue", "color=black", "color=brown"],
                          ["color[R]=100", "color[G]=200", "color[B]=150"]]),
])
def test_query_styles_match_the_specification_table(style, explode, expected):
    p = param("query", style, explode)
    assert [query_items(p, v) for v in (PRIMITIVE, ARRAY, OBJECT)] == expected


def test_values_are_percent_encoded_but_delimiters_are_not():
    p = param("query", "form", False)
    assert query_items(p, ["a,b", "c d", "é/&="]) == ["color=a%2Cb,c%20d,%C3%A9%2F%26%3D"]
    assert path_segment(param("path", "simple", False), "a/b") == "a%2Fb"
    assert query_items(param("query", "form", True, allow_reserved=True), "a/b?c:d&e=f#g+h") == \
        ["color=a/b?c:d%26e%3Df%23g%2Bh"]


def test_scalars_are_spelled_as_json_and_structures_inside_arrays_as_json_text():
    p = param("query", "form", True)
    assert query_items(p, True) == ["color=true"] and query_items(p, 1.5) == ["color=1.5"]
    assert query_items(p, [{"a": 1}]) == ["color=%7B%22a%22%3A1%7D"]
    assert query_items(p, None) == [] and query_items(p, []) == []
    assert query_items(param("query", "form", True, as_json=True), {"a": [1]}) == ["color=%7B%22a%22%3A%5B1%5D%7D"]


def test_header_values():
    assert header_value(param("header", "simple", False), ARRAY) == "blue,black,brown"
    assert header_value(param("header", "simple", True), OBJECT) == "R=100,G=200,B=150"
    assert header_value(param("header", "simple", False), OBJECT) == "R,100,G,200,B,150"
    with pytest.raises(ToolError, match="Latin-1"):
        header_value(param("header", "simple", False), "日本")
