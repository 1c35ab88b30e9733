"""OpenAPI tools calling a real HTTP server on 127.0.0.1 (SPEC §12.2 OAPI-7, OAPI-8, OAPI-9):
method, RFC 3986 encoding, query, headers, body, auth, custom headers, results, truncation,
errors, timeouts and cancellation."""

from __future__ import annotations

import base64
import json
import socket
import threading
import time

import pytest
from openapi_helpers import Reply, items_spec, tool_named, wait_for

from phi.loop.tool import ToolContext
from phi.concurrency.cancel import CancellationToken
from phi.errors import ToolCancelled, ToolError
from phi.openapi import ApiKeyAuth, BasicAuth, BearerAuth, OpenApiConfig, from_str


def tools_for(api, **config):
    return from_str(items_spec(), OpenApiConfig(base_url=api.url + "/api/", **config))


def call(tool, args, cancel=None):
    ctx = ToolContext("call_1", tool.name, cancel=cancel or CancellationToken())
    return tool.execute(args, ctx)


def test_result_text_is_method_url_status_and_body(api):
    """OAPI-8: "{METHOD} {URL} → {STATUS}\\n\\n{BODY}"."""
    api.reply = lambda r: Reply(body=b'{"id": "7"}')
    result = call(tool_named(tools_for(api), "getItem"), {"itemId": "7"})
    assert result.content[0].text == f'GET {api.url}/api/items/7 → 200\n\n{{"id": "7"}}'
    assert result.details == {"method": "GET", "url": f"{api.url}/api/items/7", "status": 200,
                              "content_type": "application/json", "truncated": False}
    assert api.last.method == "GET" and api.last.target == "/api/items/7"


def test_path_parameters_are_percent_encoded_per_rfc3986(api):
    """OAPI-7: reserved characters, spaces and non-ASCII text cannot change the URL's structure."""
    value = "a/b?c#d%e&f g=h;i,j+k~l-m_n.o é"
    call(tool_named(tools_for(api), "getItem"), {"itemId": value})
    assert api.last.target == "/api/items/a%2Fb%3Fc%23d%25e%26f%20g%3Dh%3Bi%2Cj%2Bk~l-m_n.o%20%C3%A9"
    assert api.last.method == "GET"


def test_integer_path_parameter_and_missing_path_parameter(api):
    tool = tool_named(tools_for(api), "getStatus")
    api.reply = lambda r: Reply(status=200, body=b"ok", content_type="text/plain")
    call(tool, {"code": 201})
    assert api.last.target == "/api/status/201"
    with pytest.raises(ToolError, match="missing required path parameter 'code'"):
        call(tool, {})


def test_query_parameters_arrays_repeat_and_values_are_encoded(api):
    """OAPI-7: form style, explode: arrays as repeated keys; booleans as true/false."""
    call(tool_named(tools_for(api), "getItem"),
         {"itemId": "1", "q": "x&y=z #1", "tags": ["a", "b c"], "exact": True, "limit": 5})
    assert api.last.raw_query == "q=x%26y%3Dz%20%231&tags=a&tags=b%20c&exact=true&limit=5"
    assert api.last.query == [("q", "x&y=z #1"), ("tags", "a"), ("tags", "b c"), ("exact", "true"), ("limit", "5")]


def test_absent_and_null_query_parameters_are_not_sent(api):
    call(tool_named(tools_for(api), "getItem"), {"itemId": "1", "q": None})
    assert api.last.target == "/api/items/1"


def test_header_parameters_are_sent(api):
    call(tool_named(tools_for(api), "getItem"), {"itemId": "1", "X-Trace": "abc-123"})
    assert api.last.header("X-Trace") == "abc-123"


def test_header_parameter_with_a_line_break_is_refused_before_sending(api):
    with pytest.raises(ToolError, match="line breaks"):
        call(tool_named(tools_for(api), "getItem"), {"itemId": "1", "X-Trace": "a\r\nInjected: yes"})
    assert api.requests == []


def test_json_body_is_sent_with_its_media_type(api):
    api.reply = lambda r: Reply(status=201, body=b"{}")
    result = call(tool_named(tools_for(api), "createItem"), {"body": {"name": "café", "size": 2}})
    assert api.last.method == "POST" and api.last.target == "/api/items"
    assert api.last.header("Content-Type") == "application/json"
    assert api.last.json() == {"name": "café", "size": 2}
    assert result.content[0].text.startswith(f"POST {api.url}/api/items → 201")


def test_delete_without_body_sends_no_content_type(api):
    api.reply = lambda r: Reply(status=204, body=b"", content_type="text/plain")
    result = call(tool_named(tools_for(api), "deleteItem"), {"itemId": "9"})
    assert api.last.method == "DELETE" and api.last.body == b""
    assert api.last.header("Content-Type") is None
    assert result.content[0].text == f"DELETE {api.url}/api/items/9 → 204\n\n"


@pytest.mark.parametrize("auth, header, expected", [
    (BearerAuth("tok-123456"), "Authorization", "Bearer tok-123456"),
    (ApiKeyAuth("X-Api-Key", "key-123456"), "X-Api-Key", "key-123456"),
    (BasicAuth("ann", "pw:é-123"), "Authorization", "Basic " + base64.b64encode("ann:pw:é-123".encode()).decode()),
])
def test_each_auth_kind_in_headers(api, auth, header, expected):
    """OAPI-7: bearer, API key header and basic credentials reach the server."""
    call(tool_named(tools_for(api, auth=auth), "getItem"), {"itemId": "1"})
    assert api.last.header(header) == expected


def test_api_key_in_query_is_sent_and_shown_redacted(api):
    """OAPI-7, OAPI-10: the key goes in the query; the URL in the result shows ****."""
    tool = tool_named(tools_for(api, auth=ApiKeyAuth("api_key", "k3y/secret&1", location="query")), "getItem")
    result = call(tool, {"itemId": "1", "q": "x"})
    assert api.last.query == [("q", "x"), ("api_key", "k3y/secret&1")]
    text = result.content[0].text
    assert text.startswith(f"GET {api.url}/api/items/1?q=x&api_key=**** → 200")
    assert "k3y" not in text and "k3y" not in json.dumps(result.details)
    assert result.details["url"] == f"{api.url}/api/items/1?q=x&api_key=****"


def test_custom_headers_are_sent_and_win_over_auth(api):
    """OAPI-7: header parameters, then auth, then custom headers (later ones win)."""
    tools = tools_for(api, auth=BearerAuth("tok-123456"), custom_headers={"X-Tenant": "t1", "X-Trace": "fixed"})
    call(tool_named(tools, "getItem"), {"itemId": "1", "X-Trace": "from-model"})
    assert api.last.header("X-Tenant") == "t1"
    assert api.last.header("X-Trace") == "fixed"
    assert api.last.header("Authorization") == "Bearer tok-123456"


def test_non_2xx_is_an_error_result_with_the_same_text(api):
    """OAPI-8: a status outside 2xx raises ToolError whose text is the result text."""
    api.reply = lambda r: Reply(status=404, body=b'{"error": "no such item"}')
    with pytest.raises(ToolError) as raised:
        call(tool_named(tools_for(api), "getItem"), {"itemId": "404"})
    assert str(raised.value) == f'GET {api.url}/api/items/404 → 404\n\n{{"error": "no such item"}}'


def test_redirects_are_not_followed(api):
    """OAPI-8: a 3xx is an error result naming the Location; nothing is sent there."""
    api.reply = lambda r: Reply(status=302, body=b"", headers={"Location": "http://elsewhere.invalid/x"})
    with pytest.raises(ToolError) as raised:
        call(tool_named(tools_for(api, auth=BearerAuth("tok-123456")), "getItem"), {"itemId": "1"})
    assert "→ 302" in str(raised.value) and "http://elsewhere.invalid/x (not followed)" in str(raised.value)
    assert len(api.requests) == 1


def test_long_body_is_cut_on_a_utf8_boundary_and_says_so(api):
    """OAPI-8: at most max_response_bytes, never half a character, with a note."""
    body = ("ab" + "é" * 10).encode()  # é is two bytes: byte 9 is the middle of one
    api.reply = lambda r: Reply(body=body, content_type="text/plain; charset=utf-8")
    result = call(tool_named(tools_for(api, max_response_bytes=9), "getItem"), {"itemId": "1"})
    text = result.content[0].text
    assert text.split("\n\n")[1] == "abééé"
    assert f"[response truncated: showing the first 8 of {len(body)} bytes" in text
    assert result.details["truncated"] is True


def test_huge_body_is_not_read_past_the_cap(api):
    """OAPI-8: a 64 MiB body with a 1 KiB cap returns at once; the connection is closed."""
    body = b"x" * (64 << 20)
    api.reply = lambda r: Reply(body=body, content_type="text/plain", chunks=64, chunk_delay=0.05)
    started = time.monotonic()
    result = call(tool_named(tools_for(api, max_response_bytes=1024), "getItem"), {"itemId": "1"})
    assert time.monotonic() - started < 2.0  # all 64 chunks would take over 3 s
    assert result.content[0].text.split("\n\n")[1] == "x" * 1024


def test_body_that_is_not_text_is_described(api):
    api.reply = lambda r: Reply(body=b"\x89PNG\r\n\x1a\n" + bytes(100), content_type="image/png")
    result = call(tool_named(tools_for(api), "getItem"), {"itemId": "1"})
    assert result.content[0].text.endswith("\n\n[image/png body of 108 bytes not shown]")


def test_declared_charset_is_used(api):
    api.reply = lambda r: Reply(body="café".encode("latin-1"), content_type="text/plain; charset=ISO-8859-1")
    result = call(tool_named(tools_for(api), "getItem"), {"itemId": "1"})
    assert result.content[0].text.endswith("\n\ncafé")


def test_timeout_is_a_clear_error(api):
    """OAPI-9: a server slower than timeout_secs gives a ToolError that says so, in time."""
    api.reply = lambda r: Reply(delay=5.0, body=b"late")
    started = time.monotonic()
    with pytest.raises(ToolError) as raised:
        call(tool_named(tools_for(api, timeout_secs=0.3), "getItem"), {"itemId": "1"})
    assert time.monotonic() - started < 2.0
    assert f"GET {api.url}/api/items/1: no" in str(raised.value)
    assert "within 0.3s (OpenApiConfig.timeout_secs)" in str(raised.value)


def test_timeout_bounds_a_body_that_trickles(api):
    """OAPI-9: timeout_secs bounds the whole call, not only each read."""
    api.reply = lambda r: Reply(body=b"x" * 100, content_type="text/plain", chunks=100, chunk_delay=0.1)
    started = time.monotonic()
    with pytest.raises(ToolError, match="no complete response within 0.5s"):
        call(tool_named(tools_for(api, timeout_secs=0.5), "getItem"), {"itemId": "1"})
    assert time.monotonic() - started < 2.0


def test_connection_refused_is_a_clear_error():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    tools = from_str(items_spec(), OpenApiConfig(base_url=f"http://127.0.0.1:{port}", timeout_secs=2))
    with pytest.raises(ToolError, match=f"GET http://127.0.0.1:{port}/items/1: connection failed"):
        call(tool_named(tools, "getItem"), {"itemId": "1"})


@pytest.mark.parametrize("phase", ["headers", "body"])
def test_cancellation_returns_at_once(api, phase):
    """OAPI-9: cancelling the call's token shuts the connection down; ToolCancelled, no hang."""
    if phase == "headers":
        api.reply = lambda r: Reply(delay=10.0, body=b"late")
    else:
        api.reply = lambda r: Reply(body=b"x" * 1000, content_type="text/plain", chunks=100, chunk_delay=0.1)
    token = CancellationToken()
    tool = tool_named(tools_for(api, timeout_secs=20), "getItem")
    threading.Thread(target=lambda: (wait_for(lambda: len(api.requests) == 1), time.sleep(0.2), token.cancel()),
                     daemon=True).start()
    started = time.monotonic()
    with pytest.raises(ToolCancelled):
        call(tool, {"itemId": "1"}, cancel=token)
    assert time.monotonic() - started < 2.0


def test_already_cancelled_call_sends_nothing(api):
    token = CancellationToken()
    token.cancel()
    with pytest.raises(ToolCancelled):
        call(tool_named(tools_for(api), "getItem"), {"itemId": "1"}, cancel=token)
    assert api.requests == []


def test_arguments_that_are_not_an_object_are_refused(api):
    with pytest.raises(ToolError, match="must be a JSON object"):
        call(tool_named(tools_for(api), "getItem"), ["1"])
    with pytest.raises(ToolError, match="missing required path parameter 'code'"):
        call(tool_named(tools_for(api), "getStatus"), None)  # None is taken as {}
    assert api.requests == []


def test_tools_of_one_document_reuse_connections(api):
    tools = tools_for(api)
    for n in range(3):
        call(tool_named(tools, "getItem"), {"itemId": str(n)})
        call(tool_named(tools, "createItem"), {"body": {"name": str(n)}})
    assert len(api.requests) == 6
    assert len({r.client_port for r in api.requests}) == 1
