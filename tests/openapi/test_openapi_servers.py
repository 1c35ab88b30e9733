"""Server URL resolution and from_url (SPEC §12.2 OAPI-6): servers[0] with variables, relative
servers against the spec's URL, operation and path-item servers, base_url, errors."""

from __future__ import annotations

import json

import pytest
from openapi_helpers import FIXTURES, Reply, echo, spec_with, tool_named

from phi.loop.tool import ToolContext
from phi.openapi import BearerAuth, OpenApiConfig, OpenApiError, from_file, from_str, from_url

PING = {"/ping": {"get": {"operationId": "ping", "responses": {"200": {"description": "ok"}}}}}


def base_of(tool) -> str:
    return tool.operation.base_url


def test_server_variables_use_defaults_and_can_be_overridden():
    """OAPI-6: {variables} of servers[0] take their default unless server_variables gives one."""
    servers = [{"url": "https://{region}.api.example.com:{port}/{version}/",
                "variables": {"region": {"default": "eu", "enum": ["eu", "us"]}, "port": {"default": "8443"},
                              "version": {"default": "v2"}}},
               {"url": "https://second.example.com"}]
    spec = spec_with(PING, servers=servers)
    assert base_of(from_str(spec)[0]) == "https://eu.api.example.com:8443/v2"
    config = OpenApiConfig(server_variables={"region": "us", "version": "v3"})
    assert base_of(from_str(spec, config)[0]) == "https://us.api.example.com:8443/v3"


def test_server_variable_without_default_is_an_error():
    spec = spec_with(PING, servers=[{"url": "https://{tenant}.example.com", "variables": {"tenant": {}}}])
    with pytest.raises(OpenApiError, match="server variable 'tenant'.*server_variables"):
        from_str(spec)
    assert base_of(from_str(spec, OpenApiConfig(server_variables={"tenant": "acme"}))[0]) == "https://acme.example.com"


def test_base_url_overrides_servers_and_loses_its_trailing_slash():
    """OAPI-6: base_url wins; trailing slashes are stripped."""
    spec = spec_with(PING, servers=[{"url": "https://spec.example.com/v1/"}])
    assert base_of(from_str(spec)[0]) == "https://spec.example.com/v1"
    assert base_of(from_str(spec, OpenApiConfig(base_url="http://127.0.0.1:9/x//"))[0]) == "http://127.0.0.1:9/x"


def test_operation_and_path_item_servers_come_first():
    paths = {"/a": {"servers": [{"url": "https://item.example.com"}],
                    "get": {"operationId": "a", "responses": {}},
                    "put": {"operationId": "b", "servers": [{"url": "https://op.example.com"}], "responses": {}}},
             "/c": {"get": {"operationId": "c", "responses": {}}}}
    tools = from_str(spec_with(paths, servers=[{"url": "https://root.example.com"}]))
    assert [base_of(t) for t in tools] == ["https://item.example.com", "https://op.example.com",
                                          "https://root.example.com"]


def test_relative_server_is_resolved_against_spec_url():
    """OAPI-6: a relative server URL is resolved against the URL the document came from."""
    spec = spec_with(PING, servers=[{"url": "/api/v31"}])
    tools = from_str(spec, spec_url="https://petstore.example.com/docs/openapi.json")
    assert base_of(tools[0]) == "https://petstore.example.com/api/v31"
    relative = spec_with(PING, servers=[{"url": "v2"}])
    tools = from_str(relative, spec_url="https://h.example.com/docs/spec.yaml")
    assert base_of(tools[0]) == "https://h.example.com/docs/v2"


def test_no_servers_means_the_root_of_the_spec_url():
    tools = from_str(spec_with(PING), spec_url="https://h.example.com/docs/spec.yaml")
    assert base_of(tools[0]) == "https://h.example.com"


@pytest.mark.parametrize("servers, message", [
    (None, "no server URL"),
    ([{"url": "/relative"}], "relative"),
    ([{"url": "ftp://files.example.com"}], "not http"),
    ([{"description": "no url"}], "no 'url'"),
])
def test_unusable_servers_are_clear_errors(servers, message):
    extra = {} if servers is None else {"servers": servers}
    with pytest.raises(OpenApiError, match=message):
        from_str(spec_with(PING, **extra))


def test_relative_servers_of_a_file_need_base_url():
    with pytest.raises(OpenApiError, match="relative"):
        from_file(FIXTURES / "swagger-petstore-3.1.yaml")
    tools = from_file(FIXTURES / "swagger-petstore-3.1.yaml", OpenApiConfig(base_url="http://127.0.0.1:1"))
    assert base_of(tools[0]) == "http://127.0.0.1:1"


def test_from_url_fetches_the_spec_and_calls_the_relative_server(api):
    """OAPI-6: the real Swagger Petstore 3.1 document (servers: /api/v31) served over HTTP;
    OAPI-10: it is fetched without credentials."""
    spec = (FIXTURES / "swagger-petstore-3.1.yaml").read_bytes()

    def reply(request):
        if request.path == "/docs/openapi.yaml":
            return Reply(body=spec, content_type="application/yaml")
        if request.path == "/moved":
            return Reply(status=301, headers={"Location": "/docs/openapi.yaml"})
        return echo(request)

    api.reply = reply
    tools = from_url(api.url + "/moved", OpenApiConfig(auth=BearerAuth("tok-SECRET-1")))
    tool = tool_named(tools, "getPetById")
    assert base_of(tool) == api.url + "/api/v31"
    assert [r.header("Authorization") for r in api.requests] == [None, None]
    result = tool.execute({"petId": 10}, ToolContext("c", tool.name))
    assert api.last.header("Authorization") == "Bearer tok-SECRET-1"
    assert api.last.target == "/api/v31/pet/10"
    assert result.content[0].text.startswith(f"GET {api.url}/api/v31/pet/10 → 200")


@pytest.mark.parametrize("status, body, message", [
    (404, b"not here", "HTTP 404"),
    (200, b"\xff\xfe", "not UTF-8"),
    (200, b"<html>hello</html>", "mapping at the top level"),
])
def test_from_url_failures_are_clear_errors(api, status, body, message):
    api.reply = lambda r: Reply(status=status, body=body, content_type="text/plain")
    with pytest.raises(OpenApiError, match=message):
        from_url(api.url + "/spec.json")


def test_from_url_timeout_and_bad_url(api):
    api.reply = lambda r: Reply(delay=5, body=b"{}")
    with pytest.raises(OpenApiError, match="within 0.3s"):
        from_url(api.url + "/slow.json", OpenApiConfig(timeout_secs=0.3))
    with pytest.raises(OpenApiError, match="http"):
        from_url("file:///etc/passwd")


def test_from_url_uses_json_or_yaml_by_content(api):
    document = json.loads(spec_with(PING, servers=[{"url": "/v1"}]))
    api.reply = lambda r: Reply(body=json.dumps(document).encode())
    assert base_of(from_url(api.url + "/a/spec")[0]) == api.url + "/v1"
