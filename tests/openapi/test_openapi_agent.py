"""An agent run end to end with OpenAPI tools (SPEC §12.2): a scripted model calls the tools, the
loop validates the arguments, the local server receives the requests, the results (and an error
result for a non-2xx) come back to the model."""

from __future__ import annotations

from openapi_helpers import Reply, echo, items_spec

from phi import Agent
from phi.openapi import BearerAuth, OpenApiConfig, OperationFilter, from_file, from_str, from_url
from phi.providers.mock import ScriptedProvider, ScriptedResponse
from phi.types import ToolResultMessage


def test_agent_calls_openapi_tools_against_the_local_server(api):
    def reply(request):
        if request.path.endswith("/missing"):
            return Reply(status=404, body=b'{"error": "not found"}')
        return echo(request)

    api.reply = reply
    config = OpenApiConfig(base_url=api.url, auth=BearerAuth("tok-SECRET-1"), name_prefix="items")
    tools = from_str(items_spec(), config, OperationFilter.by_tag(["items"]))
    seen = []

    def second_turn(config):
        seen.extend(m for m in config.messages if isinstance(m, ToolResultMessage))
        return ScriptedResponse.text("Found it.")

    first = ScriptedResponse.tool_call("items__getItem", {"itemId": "a/b", "tags": ["x", "y"]}, "call_1")
    first.blocks += ScriptedResponse.tool_call("items__getItem", {"itemId": "missing"}, "call_2").blocks
    first.blocks += ScriptedResponse.tool_call("items__createItem", {"body": {"size": 1}}, "call_3").blocks
    agent = Agent(provider=ScriptedProvider([first, second_turn]), tools=tools)
    result = agent.run("find item a/b")

    assert result.text == "Found it."
    assert sorted(r.target for r in api.requests) == ["/items/a%2Fb?tags=x&tags=y", "/items/missing"]  # in parallel
    assert {r.header("Authorization") for r in api.requests} == {"Bearer tok-SECRET-1"}
    ok, missing, invalid = seen
    assert not ok.is_error and ok.text.startswith(f"GET {api.url}/items/a%2Fb?tags=x&tags=y → 200\n\n")
    assert ok.details["status"] == 200
    assert missing.is_error and missing.text == f'GET {api.url}/items/missing → 404\n\n{{"error": "not found"}}'
    assert invalid.is_error and invalid.text.startswith("Invalid arguments for tool items__createItem:")
    assert "'name' is a required property" in invalid.text
    assert all("SECRET" not in m.text for m in seen)  # the echo of the Authorization header is scrubbed


def test_the_tools_of_a_spec_file_string_and_url_are_the_same_and_really_call_through_an_agent(api, tmp_path):
    """from_str / from_file / from_url as an Agent's tools (SPEC AGENT-5): the same tools, and they really call."""
    spec = items_spec()
    path = tmp_path / "items.yaml"
    path.write_text(spec, encoding="utf-8")
    api.reply = lambda request: Reply(body=spec.encode()) if request.path == "/spec.yaml" else echo(request)
    config = OpenApiConfig(base_url=api.url)
    by_tag = OperationFilter.by_tag(["items"])
    names = [t.name for t in from_str(spec, config, by_tag)]
    for tools in (from_str(spec, config, by_tag), from_file(path, config, by_tag),
                  from_url(f"{api.url}/spec.yaml", config, by_tag)):
        agent = Agent(provider=ScriptedProvider([]), tools=tools)
        assert [t.name for t in agent.tools] == names
    call = ScriptedResponse.tool_call("getItem", {"itemId": "z"}, "c1")
    agent.config.provider = ScriptedProvider([call, "ok"])
    agent.run("get z")
    assert agent.messages[2].text.startswith(f"GET {api.url}/items/z → 200")
