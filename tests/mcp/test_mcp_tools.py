"""MCP tools as phi tools: content mapping, names, schemas, the toolset (SPEC §12.1, MCP-6, MCP-7,
MCP-8, MCP-16, MCP-17)."""

from __future__ import annotations

import base64
import json
import threading

import pytest

from phi.loop.tool import AgentTool, ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError, ToolCancelled, ToolError
from phi.mcp import McpClient, McpConnectionClosed, McpToolAdapter, McpToolCallResult, McpToolInfo, McpToolset
from phi.mcp import tool_name, tool_parameters
from phi.loop.arguments import validate_arguments
from phi.types import ImageContent, TextContent

from .conftest import fake_cmd, wait_until

pytestmark = pytest.mark.timeout(60)
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


@pytest.fixture
def client():
    with McpClient.connect_stdio(*fake_cmd("serve"), timeout=10) as connected:
        yield connected


def test_every_content_kind_is_mapped(client):
    """MCP-6: text, image, audio, text/blob/image/JSON resources, a link, an unknown block,
    structuredContent and _meta, through the adapter."""
    adapter = {tool.name: tool for tool in McpToolAdapter.from_client(client)}["content"]
    result = adapter.execute({}, ToolContext("c1", "content"))
    blocks = result.content
    assert blocks[0] == TextContent("plain")
    assert blocks[1] == ImageContent(PNG, "image/png")
    assert blocks[2] == TextContent("[audio: audio/wav, 6 bytes]")
    assert blocks[3] == TextContent("inline text")
    assert blocks[4] == TextContent("[resource file:///b.bin: application/octet-stream, 3 bytes]")
    assert blocks[5] == ImageContent(PNG, "image/png")
    assert blocks[6] == TextContent('{"a": 1}')
    assert blocks[7] == TextContent("[resource link: e.md <file:///e.md> (text/markdown): a file]")
    assert blocks[8] == TextContent("[MCP content of type 'hologram' that phi cannot show]")
    assert [b["type"] for b in result.details["content"]] == ["audio", "resource", "resource_link", "hologram"]
    assert result.details["content"][1]["resource"]["blob"] == "AAEC"
    assert result.details["structuredContent"] == {"answer": 42}
    assert result.details["_meta"] == {"trace": "t1"}


def test_structured_content_alone_is_rendered_as_json():
    """MCP-6: no content blocks → the structured content as JSON text."""
    result = McpToolCallResult.from_json({"content": [], "structuredContent": {"temperature": 21}}).to_tool_result()
    assert result.content == [TextContent('{"temperature": 21}')]
    assert result.details == {"structuredContent": {"temperature": 21}}
    empty = McpToolCallResult.from_json({}).to_tool_result()
    assert empty.content == [TextContent("")] and empty.details is None


def test_malformed_results_are_protocol_errors():
    from phi.mcp import McpProtocolError

    with pytest.raises(McpProtocolError, match="not an object"):
        McpToolCallResult.from_json(["content"])
    with pytest.raises(McpProtocolError, match="content that is not a list"):
        McpToolCallResult.from_json({"content": "text"})
    assert McpToolCallResult.from_json({"content": [42]}).to_tool_result().content[0].text.startswith("[malformed")


def test_is_error_raises_tool_error_with_the_server_text(client):
    """MCP-7: isError → ToolError whose message is the server's text."""
    adapter = McpToolAdapter.for_tool(client, McpToolInfo("error"))
    with pytest.raises(ToolError) as caught:
        adapter.execute({}, ToolContext("c1", "error"))
    assert str(caught.value) == "the tool failed: disk full"
    blank = McpToolCallResult.from_json({"content": [], "isError": True})
    assert blank.is_error and blank.text == ""


def test_cancelled_call_raises_tool_cancelled(client):
    """MCP-7: the loop's cancellation token ends the call with ToolCancelled at once."""
    token = CancellationToken()
    adapter = McpToolAdapter.for_tool(client, McpToolInfo("hang"))
    threading.Timer(0.2, token.cancel).start()
    with pytest.raises(ToolCancelled, match="was asked to stop hang"):
        adapter.execute({}, ToolContext("c1", "hang", token))


def test_progress_becomes_progress_messages(client):
    """MCP-2: the server's progress reports reach ctx.progress."""
    seen: list[str] = []
    adapter = McpToolAdapter.for_tool(client, McpToolInfo("progress"))
    adapter.execute({}, ToolContext("c1", "progress", on_progress=seen.append))
    assert seen == ["step 1", "step 2"]


@pytest.mark.parametrize(("name", "prefix", "expected"), [
    ("get-sum", None, "get-sum"),
    ("get-sum", "everything", "everything__get-sum"),
    ("files.read/all", None, "files_read_all"),
    ("x" * 80, "p", "p__" + "x" * 61),
    ("émoji ✓", "s", "s___moji__"),
])
def test_tool_names(name, prefix, expected):
    """MCP-16: {prefix}__{name}; characters model APIs refuse become _, at most 64 characters."""
    assert tool_name(name, prefix) == expected


def test_bad_prefix_is_refused():
    with pytest.raises(ConfigError, match="prefix"):
        tool_name("x", "my prefix")


def test_a_second_tool_with_the_same_name_is_left_out(client, caplog):
    """MCP-16: two MCP names that end up the same give one tool (the first) and a warning."""
    from phi.mcp.tools import adapters_for

    adapters = adapters_for(client, [McpToolInfo("a.b", "first"), McpToolInfo("a/b", "second")], None)
    assert [(a.name, a.description) for a in adapters] == [("a_b", "first")]
    assert "already taken" in caplog.text


@pytest.mark.parametrize(("schema", "expected"), [
    (None, {"type": "object"}),
    ("a string", {"type": "object"}),
    ({"properties": {"x": {"type": "integer"}}}, {"type": "object", "properties": {"x": {"type": "integer"}}}),
    ({"type": "string"}, {"type": "object"}),
    ({"type": "object", "properties": {"x": {"type": "nonsense"}}}, {"type": "object"}),
    ({"$schema": "https://example.com/my-dialect", "type": "object"}, {"type": "object"}),
])
def test_schemas_are_made_usable(schema, expected):
    """MCP-17: missing, odd or invalid schemas become an open object schema; an unknown $schema is dropped."""
    assert tool_parameters(schema) == expected


def test_draft_07_schema_keeps_its_dialect():
    """MCP-17: draft-07 picks the draft-07 validator (its tuple-form `items` works)."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}},
              "required": ["pair"], "additionalProperties": False}
    tool = McpToolAdapter(None, McpToolInfo("t"), "t", "", tool_parameters(schema))  # type: ignore[arg-type]
    assert tool.parameters is not schema and tool.parameters == schema
    assert validate_arguments(tool, {"pair": ["a", 1]}) is None
    assert "is not of type 'integer'" in validate_arguments(tool, {"pair": ["a", "b"]})
    assert "Additional properties" in validate_arguments(tool, {"pair": ["a", 1], "x": 1})


def test_adapter_is_an_agent_tool(client):
    adapter = McpToolAdapter.from_client(client, prefix="fake")[0]
    assert isinstance(adapter, AgentTool)
    assert (adapter.name, adapter.description, adapter.label) == ("fake__echo", "Echo text.", "echo")
    assert McpToolAdapter.for_tool(client, McpToolInfo("content")).description.startswith("The content tool of MCP server")
    assert "client" not in repr(adapter)


def test_toolset_relists_only_after_list_changed(client):
    """MCP-8: tools() lists once, then again only when the server announced a change."""
    calls: list[int] = []
    original = client.list_tools

    def counting_list_tools(**kw):
        calls.append(1)
        return original(**kw)

    client.list_tools = counting_list_tools  # type: ignore[method-assign]
    wait_until(lambda: client.tools_version == 1, 10, "the fake's list_changed")
    toolset = McpToolset(client, prefix="f")
    first = toolset.tools()
    assert toolset.tools() == first and len(calls) == 1
    client._session.tools_version += 1  # as notifications/tools/list_changed does
    assert [t.name for t in toolset.tools()] == [t.name for t in first] and len(calls) == 2


def test_toolset_keeps_the_last_list_when_the_server_is_gone():
    """MCP-8: once listed, a failure to list again keeps the tools (their calls then fail as tool errors)."""
    client = McpClient.connect_stdio(*fake_cmd("serve"), timeout=10)
    toolset = McpToolset(client)
    names = [t.name for t in toolset.tools()]
    client._session.tools_version += 1
    with pytest.raises(McpConnectionClosed):
        client.call_tool("die")
    assert [t.name for t in toolset.tools()] == names
    with pytest.raises(ToolError, match="exited with code 5"):
        toolset.tools()[0].execute({"text": "x"}, ToolContext("c1", "echo"))
    toolset.close()
    assert client.closed


def test_toolset_raises_when_the_first_listing_fails():
    client = McpClient.connect_stdio(*fake_cmd("serve"), timeout=10)
    client.close()
    with pytest.raises(McpConnectionClosed, match="was closed"):
        McpToolset(client).tools()


def test_details_survive_json():
    """The details of a mapped result are plain JSON (they may be saved with the session)."""
    result = McpToolCallResult.from_json({"content": [{"type": "audio", "data": base64.b64encode(b"abc").decode(),
                                                       "mimeType": "audio/mpeg"}]}).to_tool_result()
    assert json.loads(json.dumps(result.details)) == result.details
    assert result.content[0].text == "[audio: audio/mpeg, 3 bytes]"
