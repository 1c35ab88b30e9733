"""Which operations become tools and what their arguments are (SPEC §12.2 OAPI-2, OAPI-3, OAPI-4):
filters, naming, descriptions, parameter merging, request bodies."""

from __future__ import annotations

import logging

import pytest
from openapi_helpers import FIXTURES, items_spec, spec_with, tool_named

from phi.openapi import OpenApiConfig, OperationFilter, from_file, from_str
from phi.loop.arguments import validate_arguments

LOCAL = OpenApiConfig(base_url="http://127.0.0.1:9")
PETSTORE = FIXTURES / "swagger-petstore-3.0.yaml"


def names(tools):
    return [t.name for t in tools]


def test_filter_all_is_the_default():
    """OAPI-2: every operation with an operationId, in document order."""
    assert names(from_file(PETSTORE)) == names(from_file(PETSTORE, None, OperationFilter.all()))
    assert len(from_file(PETSTORE)) == 19


def test_filter_by_operation_id(caplog):
    """OAPI-2: only the listed ids; ids the document lacks are logged."""
    caplog.set_level(logging.WARNING, logger="phi.openapi")
    tools = from_file(PETSTORE, None, OperationFilter.by_operation_id(["getPetById", "loginUser", "nope"]))
    assert names(tools) == ["getPetById", "loginUser"]
    assert any("no operation has the id(s) nope" in r.getMessage() for r in caplog.records)
    assert names(from_file(PETSTORE, None, OperationFilter.by_operation_id("deleteUser"))) == ["deleteUser"]


def test_filter_by_tag():
    """OAPI-2: operations tagged with any listed tag."""
    assert names(from_file(PETSTORE, None, OperationFilter.by_tag(["store"]))) == [
        "getInventory", "placeOrder", "getOrderById", "deleteOrder"]
    assert len(from_file(PETSTORE, None, OperationFilter.by_tag(["store", "user"]))) == 11
    assert from_file(PETSTORE, None, OperationFilter.by_tag(["nope"])) == []


def test_filter_by_path_prefix():
    """OAPI-2: a plain string prefix of the path template."""
    assert names(from_file(PETSTORE, None, OperationFilter.by_path_prefix("/store/order"))) == [
        "placeOrder", "getOrderById", "deleteOrder"]
    assert names(from_file(PETSTORE, None, OperationFilter.by_path_prefix("/pet/{petId}"))) == [
        "getPetById", "updatePetWithForm", "deletePet", "uploadFile"]


def test_operations_without_operation_id_are_logged_and_skipped(caplog):
    """OAPI-2: skipped with one warning naming them."""
    caplog.set_level(logging.WARNING, logger="phi.openapi")
    paths = {"/a": {"get": {"responses": {}}, "post": {"operationId": "  ", "responses": {}}},
             "/b": {"get": {"operationId": "b", "responses": {}}}}
    assert names(from_str(spec_with(paths), LOCAL)) == ["b"]
    assert any("skipped 2 operation(s) without an operationId: GET /a, POST /a" in r.getMessage()
               for r in caplog.records)


def test_webhooks_and_callbacks_are_not_tools():
    """OAPI-2: only operations under paths are called by the client."""
    tools = from_file(FIXTURES / "oai-tictactoe-3.1.yaml", LOCAL)  # has a callback and a webhook with ids
    assert "markOperationCallback" not in names(tools) and "markOperationWebhook" not in names(tools)


def test_name_prefix():
    """OAPI-3: {prefix}__{operationId}."""
    tools = from_file(PETSTORE, OpenApiConfig(name_prefix="pets"), OperationFilter.by_tag(["store"]))
    assert names(tools) == ["pets__getInventory", "pets__placeOrder", "pets__getOrderById", "pets__deleteOrder"]
    assert tools[0].operation_id == "getInventory"


def test_names_are_made_valid_for_providers(caplog):
    """OAPI-3: [A-Za-z0-9_-] only, at most 64 characters, unique."""
    caplog.set_level(logging.INFO, logger="phi.openapi")
    long_id = "list" + "VeryLong" * 10
    paths = {"/a": {"get": {"operationId": "pets.list all/ü", "responses": {}},
                    "put": {"operationId": long_id, "responses": {}},
                    "post": {"operationId": long_id + "Other", "responses": {}},
                    "delete": {"operationId": "pets.list all/ü", "responses": {}}},
             "/b": {"get": {"operationId": "pets_list_all__", "responses": {}}}}
    tools = from_str(spec_with(paths), LOCAL)
    got = names(tools)
    assert got[0] == "pets_list_all__"
    assert len(got[1]) == 64 and got[1].startswith("listVeryLong") and len(got[2]) == 64 and got[1] != got[2]
    assert got[3] == "pets_list_all___2" and got[4] == "pets_list_all___3"
    assert all(len(n) <= 64 and all(c.isascii() and (c.isalnum() or c in "_-") for c in n) for n in got)
    assert any("'pets.list all/ü' becomes the tool name 'pets_list_all__'" in r.getMessage() for r in caplog.records)


def test_description_from_summary_and_description():
    """OAPI-3: summary and description, else METHOD path; deprecated marked; cut to the limit."""
    paths = {"/a": {"get": {"operationId": "a", "summary": "Short.", "description": "Longer text.", "responses": {}},
                    "put": {"operationId": "b", "description": "Only this.", "deprecated": True, "responses": {}},
                    "post": {"operationId": "c", "summary": "word " * 400, "responses": {}},
                    "delete": {"operationId": "d", "responses": {}}}}
    a, b, c, d = from_str(spec_with(paths), LOCAL)
    assert a.description == "Short.\n\nLonger text."
    assert b.description == "(deprecated) Only this."
    assert len(c.description) <= 1024 and c.description.endswith("word…")
    assert d.description == "DELETE /a"


def test_path_level_parameters_are_merged_and_overridden_by_name_and_in():
    """OAPI-4: the operation's parameter replaces the path item's with the same name and location."""
    paths = {"/u/{id}": {
        "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "string"}},
                       {"name": "v", "in": "query", "schema": {"type": "string"}, "description": "item"}],
        "get": {"operationId": "g", "parameters": [
            {"name": "v", "in": "query", "required": True, "schema": {"type": "integer"}},
            {"name": "v", "in": "header", "schema": {"type": "string"}}], "responses": {}}}}
    tool = from_str(spec_with(paths), LOCAL)[0]
    assert tool.parameters["properties"] == {"id": {"type": "string"}, "v": {"type": "integer"},
                                             "v_header": {"type": "string"}}
    assert tool.parameters["required"] == ["id", "v"]
    assert [(p.arg, p.name, p.location) for p in tool.operation.params] == [
        ("id", "id", "path"), ("v", "v", "query"), ("v_header", "v", "header")]


def test_parameter_refs_and_undeclared_path_variables():
    """OAPI-4: parameters by $ref; a {variable} nobody declared is a required string."""
    document = {"components": {"parameters": {"Limit": {"name": "limit", "in": "query", "required": True,
                                                          "schema": {"type": "integer", "minimum": 1}}}}}
    paths = {"/a/{x}/{y}": {"get": {"operationId": "a", "parameters": [
        {"$ref": "#/components/parameters/Limit"}, {"name": "y", "in": "path", "schema": {"type": "integer"}}],
        "responses": {}}}}
    tool = from_str(spec_with(paths, **document), LOCAL)[0]
    assert tool.parameters["properties"] == {"limit": {"type": "integer", "minimum": 1}, "y": {"type": "integer"},
                                             "x": {"type": "string"}}
    assert sorted(tool.parameters["required"]) == ["limit", "x", "y"]  # path parameters are always required


def test_cookie_parameters_are_skipped_and_logged(caplog):
    """OAPI-4: cookie parameters are not supported."""
    caplog.set_level(logging.INFO, logger="phi.openapi")
    tool = tool_named(from_str(items_spec(), LOCAL), "getItem")
    assert "session" not in tool.parameters["properties"]
    assert any("cookie parameter 'session' is not supported" in r.getMessage() for r in caplog.records)


def test_argument_names_are_cleaned():
    paths = {"/a": {"get": {"operationId": "a", "parameters": [
        {"name": "page[size]", "in": "query", "schema": {"type": "integer"}},
        {"name": "$filter", "in": "query", "schema": {"type": "string"}},
        {"name": "Accept", "in": "header", "schema": {"type": "string"}}], "responses": {}}}}
    tool = from_str(spec_with(paths), LOCAL)[0]
    assert list(tool.parameters["properties"]) == ["page_size_", "_filter"]  # Accept is ignored (OpenAPI rule)
    assert [p.name for p in tool.operation.params] == ["page[size]", "$filter"]


def test_json_body_is_body_or_request_body_on_a_clash():
    """OAPI-4: the JSON body is `body`, or `_request_body` when a parameter is called body."""
    body = {"required": True, "content": {"application/json": {"schema": {"type": "object"}}}}
    paths = {"/a": {"post": {"operationId": "a", "requestBody": body, "responses": {}},
                    "put": {"operationId": "b", "requestBody": {**body, "required": False},
                            "parameters": [{"name": "body", "in": "query", "schema": {"type": "string"}}],
                            "responses": {}}}}
    tools = from_str(spec_with(paths), LOCAL)
    a, b = tool_named(tools, "a"), tool_named(tools, "b")
    assert a.parameters["required"] == ["body"] and a.operation.body_arg == "body"
    assert list(b.parameters["properties"]) == ["body", "_request_body"] and "required" not in b.parameters
    assert b.operation.body_arg == "_request_body"


def test_json_like_media_types_and_non_json_bodies(caplog):
    """OAPI-4: application/json or any +json type; a required non-JSON body skips the operation."""
    caplog.set_level(logging.INFO, logger="phi.openapi")
    paths = {"/a": {
        "patch": {"operationId": "merge", "requestBody": {"content": {
            "application/xml": {}, "application/merge-patch+json": {"schema": {"type": "object"}}}}, "responses": {}},
        "post": {"operationId": "upload", "requestBody": {"required": True, "content": {
            "multipart/form-data": {"schema": {"type": "object"}}}}, "responses": {}},
        "put": {"operationId": "optional", "requestBody": {"content": {"text/plain": {}}}, "responses": {}}}}
    tools = from_str(spec_with(paths), LOCAL)
    assert names(tools) == ["optional", "merge"]
    assert tool_named(tools, "merge").operation.body_media_type == "application/merge-patch+json"
    assert tool_named(tools, "optional").parameters["properties"] == {}
    assert any("upload" in r.getMessage() and "no JSON media type" in r.getMessage() for r in caplog.records)


def test_parameters_described_with_content_are_sent_as_json():
    paths = {"/a": {"get": {"operationId": "a", "parameters": [
        {"name": "where", "in": "query", "content": {"application/json": {"schema": {"type": "object"}}}}],
        "responses": {}}}}
    tool = from_str(spec_with(paths), LOCAL)[0]
    assert tool.parameters["properties"]["where"] == {"type": "object"}
    assert tool.operation.params[0].as_json is True


def test_required_lists_drive_validation():
    tool = tool_named(from_str(items_spec(), LOCAL), "createItem")
    assert validate_arguments(tool, {"body": {"name": "x"}}) is None
    assert validate_arguments(tool, {}) == "'body' is a required property"
    assert "'name' is a required property" in validate_arguments(tool, {"body": {"size": 1}})
    assert "Additional properties are not allowed" in validate_arguments(tool, {"body": {"name": "x"}, "extra": 1})


@pytest.mark.parametrize("bad", ["x", 1, None])
def test_path_items_that_are_not_objects_are_skipped(bad, caplog):
    paths = {"/bad": bad, "/b": {"get": {"operationId": "b", "responses": {}}}}
    assert names(from_str(spec_with(paths), LOCAL)) == ["b"]
