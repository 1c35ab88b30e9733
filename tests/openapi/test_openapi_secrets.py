"""Secrets of the OpenAPI adapter never show (SPEC §12.2 OAPI-10, REQ-138): repr/str of config and
auth, logs, errors and results — even when the server echoes them back."""

from __future__ import annotations

import json
import logging
import socket

import pytest
from openapi_helpers import Reply, items_spec, tool_named

from phi.loop.tool import ToolContext
from phi.errors import ConfigError, ToolError
from phi.openapi import ApiKeyAuth, BasicAuth, BearerAuth, OpenApiConfig, from_str

TOKEN = "tok-SECRET-4242"
KEY = "key/SECRET&4242"
PASSWORD = "pw-SECRET-4242"
CUSTOM = "custom-SECRET-4242"
SECRETS = ("SECRET",)


def test_auth_repr_and_str_redact_the_secret():
    """OAPI-10: Bearer("****"), ApiKey value "****", Basic password "****"."""
    assert repr(BearerAuth(TOKEN)) == 'BearerAuth(token="****")'
    assert str(ApiKeyAuth("X-Api-Key", KEY)) == 'ApiKeyAuth(name=\'X-Api-Key\', value="****", location=\'header\')'
    assert repr(BasicAuth("ann", PASSWORD)) == 'BasicAuth(username=\'ann\', password="****")'


def test_config_repr_and_str_redact_auth_and_credential_headers():
    config = OpenApiConfig(base_url="http://x", auth=BearerAuth(TOKEN),
                           custom_headers={"X-Api-Token": CUSTOM, "X-Tenant": "acme"})
    for text in (repr(config), str(config), f"{config}", repr([config])):
        assert "SECRET" not in text
        assert 'BearerAuth(token="****")' in text and "'X-Api-Token': '****'" in text and "'X-Tenant': 'acme'" in text


def test_secrets_are_checked_without_showing_them():
    with pytest.raises(ConfigError) as raised:
        BearerAuth("tok-SECRET\n4242")
    assert "control character" in str(raised.value) and "SECRET" not in str(raised.value)
    assert BearerAuth(f"  {TOKEN}\n").token == TOKEN  # a key read from a file
    with pytest.raises(ConfigError, match="location"):
        ApiKeyAuth("k", KEY, location="cookie")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        BasicAuth("a:b", PASSWORD)


@pytest.mark.parametrize("auth", [BearerAuth(TOKEN), ApiKeyAuth("api_key", KEY, location="query"),
                                  ApiKeyAuth("X-Key", KEY), BasicAuth("ann", PASSWORD)])
def test_results_errors_and_logs_never_show_secrets(api, caplog, auth):
    """OAPI-10: the echo server sends every header and the full URL back; nothing leaks."""
    caplog.set_level(logging.DEBUG)
    config = OpenApiConfig(base_url=api.url, auth=auth, custom_headers={"X-Api-Token": CUSTOM})
    tools = from_str(items_spec(), config)
    tool = tool_named(tools, "getItem")
    result = tool.execute({"itemId": "1"}, ToolContext("c", tool.name))
    echoed = api.last
    assert any(s in json.dumps(echoed.headers) + echoed.target for s in (TOKEN, KEY, "4242"))  # it was sent
    assert "SECRET" not in result.content[0].text and "SECRET" not in json.dumps(result.details)
    assert "****" in result.content[0].text

    api.reply = lambda r: Reply(status=500, body=json.dumps({"got": r.headers, "target": r.target}).encode())
    with pytest.raises(ToolError) as raised:
        tool.execute({"itemId": "1"}, ToolContext("c", tool.name))
    assert "SECRET" not in str(raised.value) and "****" in str(raised.value)
    assert all("SECRET" not in record.getMessage() for record in caplog.records)
    assert any("→ 500" in record.getMessage() for record in caplog.records)


def test_network_errors_never_show_the_query_key(caplog):
    caplog.set_level(logging.DEBUG)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = OpenApiConfig(base_url=f"http://127.0.0.1:{port}", auth=ApiKeyAuth("api_key", KEY, location="query"))
    tool = tool_named(from_str(items_spec(), config), "getItem")
    with pytest.raises(ToolError) as raised:
        tool.execute({"itemId": "1"}, ToolContext("c", tool.name))
    assert f"/items/1?api_key=****: connection failed" in str(raised.value)
    assert "SECRET" not in str(raised.value)
    assert all("SECRET" not in record.getMessage() for record in caplog.records)


def test_a_tool_repr_shows_no_config(api):
    tool = tool_named(from_str(items_spec(), OpenApiConfig(base_url=api.url, auth=BearerAuth(TOKEN))), "getItem")
    assert "SECRET" not in repr(tool) and "getItem" in repr(tool)
