"""OpenAPI schemas as JSON Schema 2020-12 (SPEC §12.2 OAPI-5): references, recursion, the 3.0
dialect, invalid keywords, size budget. Every produced schema must pass meta-validation and work
with the loop's validator."""

from __future__ import annotations

import json

import pytest
from jsonschema import Draft202012Validator
from openapi_helpers import spec_with

from phi.openapi import OpenApiConfig, OpenApiError, from_str
from phi.loop.arguments import validate_arguments

LOCAL = OpenApiConfig(base_url="http://127.0.0.1:9")


def body_tool(schema, components=None, config=LOCAL, version="3.0.3"):
    paths = {"/a": {"post": {"operationId": "a", "requestBody": {"required": True, "content": {
        "application/json": {"schema": schema}}}, "responses": {}}}}
    extra = {"components": {"schemas": components}} if components else {}
    text = spec_with(paths, **extra).replace('"3.0.3"', json.dumps(version))
    tool = from_str(text, config)[0]
    Draft202012Validator.check_schema(tool.parameters)
    return tool


def body_of(tool):
    return tool.parameters["properties"]["body"]


def valid(tool, body):
    return validate_arguments(tool, {"body": body}) is None


def test_component_refs_become_defs_with_only_what_is_reached():
    """OAPI-5: #/components/schemas/X is #/$defs/X; $defs holds exactly the reachable entries."""
    components = {"Pet": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/Person"}}},
                  "Person": {"type": "object", "properties": {"name": {"type": "string"}}},
                  "Unused": {"type": "string"}}
    tool = body_tool({"$ref": "#/components/schemas/Pet"}, components)
    assert body_of(tool) == {"$ref": "#/$defs/Pet"}
    assert sorted(tool.parameters["$defs"]) == ["Person", "Pet"]
    assert valid(tool, {"owner": {"name": "ann"}}) and not valid(tool, {"owner": {"name": 1}})


def test_recursive_schemas_terminate_and_validate():
    """OAPI-5: a self-recursive and a mutually recursive schema, validated to any depth."""
    components = {"Node": {"type": "object", "properties": {
                      "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                      "other": {"$ref": "#/components/schemas/Other"}}},
                  "Other": {"type": "object", "properties": {"back": {"$ref": "#/components/schemas/Node"},
                                                             "n": {"type": "integer"}}}}
    tool = body_tool({"$ref": "#/components/schemas/Node"}, components)
    assert sorted(tool.parameters["$defs"]) == ["Node", "Other"]
    deep: dict = {"children": []}
    for _ in range(50):
        deep = {"children": [deep], "other": {"back": {"children": []}, "n": 1}}
    assert valid(tool, deep)
    deep["other"]["back"]["other"] = {"n": "not an integer"}
    assert not valid(tool, deep)


def test_a_long_chain_of_refs_does_not_recurse():
    components = {f"S{i}": {"type": "object", "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}}}
                  for i in range(1500)}
    components["S1500"] = {"type": "string"}
    tool = body_tool({"$ref": "#/components/schemas/S0"}, components, OpenApiConfig(base_url="http://x",
                                                                                    max_schema_bytes=None))
    assert len(tool.parameters["$defs"]) == 1501


def test_refs_inside_parameters_request_bodies_and_nested_schemas():
    document = {"components": {
        "schemas": {"Id": {"type": "integer"}, "Body": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"allOf": [{"$ref": "#/components/schemas/Id"}]}},
            "map": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Id"}}}}},
        "parameters": {"P": {"name": "p", "in": "query", "schema": {"$ref": "#/components/schemas/Id"}}},
        "requestBodies": {"B": {"$ref": "#/components/requestBodies/B2"},
                          "B2": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Body"}}}}}}}
    paths = {"/a": {"post": {"operationId": "a", "parameters": [{"$ref": "#/components/parameters/P"}],
                             "requestBody": {"$ref": "#/components/requestBodies/B"}, "responses": {}}}}
    tool = from_str(spec_with(paths, **document), LOCAL)[0]
    assert tool.parameters["properties"] == {"p": {"$ref": "#/$defs/Id"}, "body": {"$ref": "#/$defs/Body"}}
    assert validate_arguments(tool, {"p": 1, "body": {"items": [1, 2], "map": {"a": 3}}}) is None
    assert validate_arguments(tool, {"body": {"map": {"a": "x"}}}) is not None


def test_refs_to_any_pointer_and_with_escapes():
    components = {"a/b": {"type": "object", "properties": {"x~y": {"type": "integer", "minimum": 5}}}}
    tool = body_tool({"type": "object", "properties": {
        "whole": {"$ref": "#/components/schemas/a~1b"},
        "part": {"$ref": "#/components/schemas/a~1b/properties/x~0y"}}}, components)
    assert sorted(tool.parameters["$defs"]) == ["a_b", "a_b_properties_x_y"]
    assert valid(tool, {"whole": {"x~y": 5}, "part": 6}) and not valid(tool, {"part": 4})


@pytest.mark.parametrize("ref, message", [
    ("#/components/schemas/Missing", "'Missing' not found"),
    ("other.yaml#/components/schemas/Pet", "no schema has the \\$id"),
    ("https://example.com/schemas/pet.json", "no schema has the \\$id"),
])
def test_unresolvable_refs_are_clear_errors(ref, message):
    """OAPI-5: OpenApiError naming the reference and where it is."""
    with pytest.raises(OpenApiError, match=f"POST /a requestBody.*unresolvable \\$ref.*{message}"):
        body_tool({"type": "object", "properties": {"x": {"$ref": ref}}}, {"Pet": {"type": "string"}})


def test_a_ref_cycle_between_parameters_is_an_error():
    document = {"components": {"parameters": {"A": {"$ref": "#/components/parameters/B"},
                                              "B": {"$ref": "#/components/parameters/A"}}}}
    paths = {"/a": {"get": {"operationId": "a", "parameters": [{"$ref": "#/components/parameters/A"}],
                            "responses": {}}}}
    with pytest.raises(OpenApiError, match="\\$ref cycle"):
        from_str(spec_with(paths, **document), LOCAL)


def test_nullable_becomes_a_type_union():
    """OAPI-5: OpenAPI 3.0 nullable: true."""
    tool = body_tool({"type": "object", "properties": {
        "s": {"type": "string", "nullable": True},
        "e": {"type": "string", "enum": ["a", "b"], "nullable": True},
        "r": {"$ref": "#/components/schemas/Pet", "nullable": True},
        "all": {"allOf": [{"$ref": "#/components/schemas/Pet"}], "nullable": True},
        "f": {"type": "string", "nullable": False}}}, {"Pet": {"type": "object"}})
    props = body_of(tool)["properties"]
    assert props["s"] == {"type": ["string", "null"]}
    assert props["e"] == {"type": ["string", "null"], "enum": ["a", "b", None]}
    assert props["r"] == {"anyOf": [{"$ref": "#/$defs/Pet"}, {"type": "null"}]}
    assert props["all"] == {"anyOf": [{"allOf": [{"$ref": "#/$defs/Pet"}]}, {"type": "null"}]}
    assert props["f"] == {"type": "string"}
    assert valid(tool, {"s": None, "e": None, "r": None, "all": None})
    assert not valid(tool, {"f": None})


def test_openapi_3_0_exclusive_bounds_and_tuple_items():
    tool = body_tool({"type": "object", "properties": {
        "n": {"type": "number", "maximum": 10, "exclusiveMaximum": True, "minimum": 0, "exclusiveMinimum": False},
        "t": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}}})
    props = body_of(tool)["properties"]
    assert props["n"] == {"type": "number", "exclusiveMaximum": 10, "minimum": 0}
    assert props["t"] == {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}
    assert valid(tool, {"n": 0, "t": ["a", 1]}) and not valid(tool, {"n": 10}) and not valid(tool, {"t": [1]})


def test_keywords_with_wrong_shapes_are_dropped():
    """OAPI-5: what real specs get wrong does not make the tool unusable."""
    tool = body_tool({"type": "object", "required": ["a", "a", "ro"], "properties": {
        "a": {"type": "string", "required": True, "pattern": "^\\p{L}+$", "minLength": -1, "maxLength": 3.0,
              "example": "x", "xml": {"name": "a"}, "x-internal": True, "discriminator": {"propertyName": "a"}},
        "b": {"type": "file", "format": "binary"},
        "c": {"type": ["string", "bogus", "string"], "enum": "not a list", "multipleOf": 0},
        "ro": {"type": "string", "readOnly": True},
        "d": "not a schema"}})
    props = body_of(tool)["properties"]
    assert props["a"] == {"type": "string", "maxLength": 3}
    assert props["b"] == {"format": "binary"}
    assert props["c"] == {"type": ["string"]}
    assert props["d"] == {}
    assert body_of(tool)["required"] == ["a"]  # de-duplicated; readOnly is not required in a request


def test_boolean_schemas_and_3_1_keywords_pass_through():
    tool = body_tool({"type": "object", "properties": {
        "any": True, "never": False, "c": {"const": 3}, "u": {"type": ["integer", "null"], "examples": [1]},
        "p": {"patternProperties": {"^x-": {"type": "string"}, "\\p{L}": {}}, "unevaluatedProperties": False}},
        "dependentRequired": {"a": ["b"]}}, version="3.1.0")
    body = body_of(tool)
    assert body["properties"]["any"] is True and body["properties"]["never"] is False
    assert body["properties"]["u"] == {"type": ["integer", "null"]}
    assert body["properties"]["p"] == {"patternProperties": {"^x-": {"type": "string"}}, "unevaluatedProperties": False}
    assert body["dependentRequired"] == {"a": ["b"]}


def test_ids_inside_schemas_do_not_change_where_refs_point():
    tool = body_tool({"$ref": "#/components/schemas/A"}, {
        "A": {"$id": "https://example.com/a", "$schema": "https://json-schema.org/draft/2020-12/schema",
              "type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
        "B": {"type": "integer"}}, version="3.1.0")
    assert tool.parameters["$defs"]["A"] == {"type": "object", "properties": {"b": {"$ref": "#/$defs/B"}}}
    assert valid(tool, {"b": 1}) and not valid(tool, {"b": "x"})


def test_yaml_alias_cycles_terminate():
    text = """openapi: 3.0.0
info: {title: t, version: '1'}
paths:
  /a:
    post:
      operationId: a
      requestBody:
        content:
          application/json:
            schema: &node
              type: object
              properties:
                child: *node
      responses: {}
"""
    tool = from_str(text, LOCAL)[0]
    Draft202012Validator.check_schema(tool.parameters)
    json.dumps(tool.parameters)  # finite
    assert validate_arguments(tool, {"body": {"child": {"child": {}}}}) is None


def test_oversized_schemas_are_reduced_but_accept_the_same_values():
    """OAPI-5: nested descriptions go first, then deep references become permissive placeholders."""
    components = {f"S{i}": {"type": "object", "description": "d" * 200, "properties": {
        "value": {"type": "integer", "description": "v" * 200},
        "next": {"$ref": f"#/components/schemas/S{i + 1}"}}} for i in range(40)}
    components["S40"] = {"type": "string"}
    schema = {"$ref": "#/components/schemas/S0", "description": "the body"}
    full = body_tool(schema, components, OpenApiConfig(base_url="http://x", max_schema_bytes=None))
    slim = body_tool(schema, components, OpenApiConfig(base_url="http://x", max_schema_bytes=2000))
    small = body_tool(schema, components, OpenApiConfig(base_url="http://x", max_schema_bytes=1000))
    assert len(json.dumps(full.parameters)) > 16000
    assert len(json.dumps(slim.parameters, separators=(",", ":"))) <= 2000
    assert len(json.dumps(small.parameters, separators=(",", ":"))) <= 1000
    assert "d" * 200 not in json.dumps(slim.parameters)
    assert body_of(slim)["description"] == "the body"
    assert "schema omitted" in json.dumps(slim.parameters)
    value: object = "end"  # S40 is a string
    for _ in range(40):
        value = {"value": 2, "next": value}
    for tool in (full, slim, small):
        assert valid(tool, value)
    assert not valid(full, {"value": "x"}) and not valid(slim, {"value": "x"})


def test_only_descriptions_go_when_that_is_enough():
    components = {"Pet": {"type": "object", "description": "p" * 3000,
                          "properties": {"name": {"type": "string", "description": "n" * 3000}}}}
    tool = body_tool({"$ref": "#/components/schemas/Pet"}, components,
                     OpenApiConfig(base_url="http://x", max_schema_bytes=1000))
    assert tool.parameters["$defs"] == {"Pet": {"type": "object", "properties": {"name": {"type": "string"}}}}


def test_required_properties_referenced_by_id_are_read():
    """OAPI-5: a required property given by an $id reference (its readOnly flag is looked up)."""
    tool = body_tool({"type": "object", "required": ["a", "b"], "properties": {
        "a": {"$ref": "/schemas/a"}, "b": {"$ref": "/schemas/b#/properties/x"}}}, {
        "A": {"$id": "/schemas/a", "type": "string", "readOnly": True},
        "B": {"$id": "/schemas/b", "type": "object", "properties": {"x": {"type": "integer"}}}}, version="3.1.0")
    assert body_of(tool)["required"] == ["b"]
    assert valid(tool, {"b": 1}) and not valid(tool, {"b": "x"})
