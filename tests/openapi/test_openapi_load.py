"""Loading OpenAPI documents (SPEC §12.2 OAPI-1, OAPI-2, OAPI-5): real public specs (provenance in
tests/fixtures/openapi/PROVENANCE.md), JSON/YAML detection, YAML 1.2 reading, clear errors."""

from __future__ import annotations

import json

import pytest
from openapi_helpers import FIXTURES, spec_with, tool_named

from phi.openapi import OpenApiConfig, OpenApiError, from_file, from_str
from phi.loop.arguments import validate_arguments

LOCAL = OpenApiConfig(base_url="http://127.0.0.1:9")


def assert_usable(tools):
    """Every schema passes meta-validation and works with the loop's own validator (which runs
    Draft202012Validator.check_schema first and reports "the tool's parameter schema is invalid")."""
    for tool in tools:
        assert "$schema" not in tool.parameters  # so the loop picks Draft 2020-12
        reason = validate_arguments(tool, {})
        assert reason is None or "is a required property" in reason, (tool.name, reason)
        json.dumps(tool.parameters)  # plain JSON, as a provider sends it
        assert tool.parameters["type"] == "object" and tool.parameters["additionalProperties"] is False


@pytest.mark.parametrize("fixture, names", [
    ("oai-petstore-3.0.yaml", ["listPets", "createPets", "showPetById"]),
    ("oai-petstore-expanded-3.0.yaml", ["findPets", "addPet", "find_pet_by_id", "deletePet"]),
    ("oai-tictactoe-3.1.yaml", ["get-board", "get-square", "put-square"]),
    ("oai-webhook-example-3.1.yaml", []),
    ("swagger-petstore-3.0.yaml", ["updatePet", "addPet", "findPetsByStatus", "findPetsByTags", "getPetById",
                                   "updatePetWithForm", "deletePet", "uploadFile", "getInventory", "placeOrder",
                                   "getOrderById", "deleteOrder", "createUser", "createUsersWithListInput",
                                   "loginUser", "logoutUser", "getUserByName", "updateUser", "deleteUser"]),
    ("swagger-petstore-3.1.yaml", ["updatePet", "addPet", "findPetsByStatus", "findPetsByTags", "getPetById",
                                   "deletePet"]),
])
def test_real_public_specs_become_usable_tools(fixture, names):
    """OAPI-2, OAPI-5: the OAI examples and the Swagger Petstores (3.0 and 3.1)."""
    tools = from_file(FIXTURES / fixture, LOCAL)
    assert [t.name for t in tools] == names
    assert_usable(tools)


def test_petstore_3_0_tool_shape():
    tools = from_file(FIXTURES / "oai-petstore-3.0.yaml")
    show = tool_named(tools, "showPetById")
    assert show.description == "Info for a specific pet"
    assert show.parameters["properties"] == {
        "petId": {"type": "string", "description": "The id of the pet to retrieve"}}
    assert show.parameters["required"] == ["petId"]
    assert (show.method, show.path) == ("GET", "/pets/{petId}")
    assert show.operation.base_url == "http://petstore.swagger.io/v1"
    listing = tool_named(tools, "listPets")
    assert listing.parameters["properties"]["limit"] == {
        "type": "integer", "maximum": 100, "format": "int32",
        "description": "How many items to return at one time (max 100)"}
    assert "required" not in listing.parameters
    create = tool_named(tools, "createPets")
    assert create.parameters["required"] == ["body"]
    assert create.parameters["properties"]["body"] == {"$ref": "#/$defs/Pet"}
    assert create.parameters["$defs"]["Pet"]["required"] == ["id", "name"]


def test_petstore_3_1_refs_by_id_and_anchor():
    """OAPI-5: the 3.1 Petstore references a schema by its $id and an $anchor inside it."""
    tool = tool_named(from_file(FIXTURES / "swagger-petstore-3.1.yaml", LOCAL), "addPet")
    pet = tool.parameters["$defs"]["Pet"]
    assert pet["properties"]["petDetailsId"] == {"$ref": "#/$defs/PetDetails_properties_id"}
    assert tool.parameters["$defs"]["PetDetails_properties_id"] == {"type": "integer", "format": "int64"}
    assert pet["properties"]["availableInstances"]["exclusiveMaximum"] == 10
    assert "$schema" not in pet and "xml" not in pet
    pet_in = {"id": 1, "name": "rex", "photoUrls": [], "petDetailsId": 3}  # this body also requires "id"
    assert validate_arguments(tool, {"body": pet_in}) is None
    assert "is not of type 'integer'" in validate_arguments(tool, {"body": {**pet_in, "petDetailsId": "x"}})


def test_large_real_world_spec_with_deep_refs():
    """OAPI-5: OpenAI's 3.4 MB OpenAPI 3.1 document: every tool's schema is valid and small enough."""
    path = FIXTURES / "openai-openapi.json"
    assert path.stat().st_size >= 1 << 20
    tools = from_file(path)
    assert len(tools) >= 250
    assert_usable(tools)
    sizes = [len(json.dumps(t.parameters, separators=(",", ":"))) for t in tools]
    assert max(sizes) <= OpenApiConfig().max_schema_bytes
    chat = tool_named(tools, "createChatCompletion")
    request = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    assert validate_arguments(chat, {"body": request}) is None
    assert validate_arguments(chat, {"body": {"model": "gpt-4o"}}) is not None


def test_json_or_yaml_by_the_first_character():
    """OAPI-1: first non-blank character { or [ means JSON, anything else YAML."""
    document = json.loads(spec_with({"/a": {"get": {"operationId": "a", "responses": {}}}}))
    as_json = "\ufeff \n\t" + json.dumps(document)
    assert [t.name for t in from_str(as_json, LOCAL)] == ["a"]
    as_yaml = "# a comment first\nopenapi: 3.0.0\ninfo: {title: t, version: '1'}\npaths:\n  /a:\n    get:\n" \
              "      operationId: a\n      responses: {}\n"
    assert [t.name for t in from_str(as_yaml, LOCAL)] == ["a"]
    with pytest.raises(OpenApiError, match="not valid JSON"):  # JSON-looking text is parsed as JSON only
        from_str("{openapi: 3.0.0}", LOCAL)


def test_yaml_is_read_as_yaml_1_2():
    """OAPI-1: yes/no/on/off stay strings, dates stay strings, numeric keys become strings."""
    text = """openapi: 3.1.0
info: {title: t, version: 2024-01-01}
paths:
  /a:
    get:
      operationId: a
      parameters:
        - name: on
          in: query
          schema: {type: string, default: 2024-01-01, enum: [yes, no, 2024-01-01]}
      responses:
        200: {description: ok}
"""
    tool = from_str(text, LOCAL)[0]
    assert tool.parameters["properties"]["on"] == {"type": "string", "default": "2024-01-01",
                                                   "enum": ["yes", "no", "2024-01-01"]}
    json.dumps(tool.parameters)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("[1, 2]", "mapping at the top level"),
    ('{"openapi": "3.0.0", "paths": {}', "not valid JSON: Expecting ',' delimiter at line 1 column 33"),
    ("openapi: 3.0.0\npaths: [\n", "not valid YAML: .* at line 3"),
    ('{"swagger": "2.0", "paths": {}}', "Swagger 2.0 .*not supported.*convert"),
    ('{"openapi": "2.5", "paths": {}}', "version '2.5' is not supported"),
    ('{"info": {}}', "no 'openapi' field"),
    ('{"openapi": "3.0.0", "paths": []}', "'paths' must be a mapping"),
    ('{"openapi": "3.0.0", "paths": {}, "x": NaN}', "NaN is not valid JSON"),
])
def test_documents_that_cannot_be_used_are_clear_errors(text, message):
    """OAPI-1: OpenApiError naming what is wrong."""
    with pytest.raises(OpenApiError, match=message):
        from_str(text, LOCAL)


def test_file_errors(tmp_path):
    with pytest.raises(OpenApiError, match="cannot read the OpenAPI spec .*missing.yaml"):
        from_file(tmp_path / "missing.yaml")
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("openapi: 3.0.0\ninfo: {title: caf\xe9}\n".encode("latin-1"))
    with pytest.raises(OpenApiError, match="not UTF-8"):
        from_file(bad)


def test_settings_of_the_wrong_type_are_refused():
    from phi.errors import ConfigError

    with pytest.raises(ConfigError, match="OpenApiConfig"):
        from_str(spec_with({}), {"base_url": "x"})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="OperationFilter"):
        from_str(spec_with({}), LOCAL, ["a"])  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="max_response_bytes"):
        OpenApiConfig(max_response_bytes=0)
    with pytest.raises(ConfigError, match="timeout_secs"):
        OpenApiConfig(timeout_secs=float("inf"))


def test_openapi_is_not_imported_by_phi():
    import subprocess
    import sys

    code = "import sys, phi; from phi import Agent; print(any(m.startswith('phi.openapi') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
