"""Usable without reading the source (issue 9 item 10): typing marker, honest names, explicit
setters, docstrings that cite SPEC sections and requirements that exist, and a map in help(phi)."""

from __future__ import annotations

import importlib
import pydoc
import re
from pathlib import Path

import pytest

import phi
from phi.agent.agent import Agent, _LOOP_SETTINGS
from phi.types import AssistantMessage, TextContent, UserMessage

ROOT = Path(__file__).resolve().parents[1]
SPEC = (ROOT / "SPEC.md").read_text(encoding="utf-8")
REQUIREMENT = re.compile(r"\b(?:DATA|EVT|LOOP|TOOL|CANCEL|PROV|ERR|CTX|AGENT|MCP|OAPI|SKILL|SUB|SESS|EVAL|CODE|CLI|EXPORT)-\d+\b")
SECTION = re.compile(r"SPEC §(\d+(?:\.\d+)?)")


def test_the_package_is_typed():
    assert (ROOT / "phi" / "py.typed").is_file()
    assert 'phi = ["py.typed"]' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")


def test_user_message_text_is_the_text_like_assistant_message_text():
    message = UserMessage([TextContent("a"), TextContent("b")])
    assert message.text == AssistantMessage([TextContent("a"), TextContent("b")]).text == "ab"
    assert UserMessage.from_text("hi").content == [TextContent("hi")]


def test_every_loop_setting_is_a_typed_keyword_of_agent():
    from phi.loop.config import LoopSettings

    assert set(LoopSettings.__annotations__) == set(_LOOP_SETTINGS)
    agent = Agent(max_tokens=99, temperature=0.5, batch_size=3)
    for name in ("max_tokens", "temperature", "with_max_tokens", "anything"):
        # no setting is reached through attribute magic: Agent.__getattr__ only explains removed names
        with pytest.raises(AttributeError):
            getattr(agent, name)
    assert (agent.config.max_tokens, agent.config.temperature, agent.config.batch_size) == (99, 0.5, 3)


def test_docstrings_cite_only_what_spec_defines():
    defined = set(re.findall(r"\*\*((?:DATA|EVT|LOOP|TOOL|CANCEL|PROV|ERR|CTX|AGENT|MCP|OAPI|SKILL|SUB|SESS|EVAL|CODE|CLI|EXPORT)-\d+)", SPEC))
    sections = set(re.findall(r"^##+ (\d+(?:\.\d+)?)\.? ", SPEC, flags=re.M))
    bad = []
    for path in sorted((ROOT / "phi").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        for ident in set(REQUIREMENT.findall(text)) - defined:
            bad.append(f"{path.relative_to(ROOT)}: {ident}")
        for section in set(SECTION.findall(text)) - sections:
            bad.append(f"{path.relative_to(ROOT)}: SPEC §{section}")
    assert not bad, "citations of things SPEC.md does not have:\n" + "\n".join(bad)


def test_help_starts_with_a_map_of_the_api():
    text = pydoc.render_doc(phi, renderer=pydoc.plaintext)
    head = text[:3000]
    for name in ("Agent(", "agent.run(", "@tool", "agent_loop(", "AgentEnd", "ModelConfig", "ContextConfig"):
        assert name in head, name
    for name in re.findall(r"(?<![.\w])[A-Z][a-z]+[A-Z][A-Za-z]*\b", phi.__doc__.split("Names are loaded")[0]):
        assert name in phi.__all__, f"the map names {name}, which phi does not export"
    for qualified in re.findall(r"\bphi(?:\.\w+)+", phi.__doc__):  # names of other packages, e.g. phi.mcp.McpToolset
        parts = qualified.split(".")
        found: object = importlib.import_module(".".join(parts[:2]))
        for part in parts[2:]:
            found = getattr(found, part)


def test_every_export_resolves():
    for name in phi.__all__:
        assert getattr(phi, name) is not None, name


def test_every_message_kind_has_text_and_a_literal_role():
    from phi.types import ExtensionMessage, ToolResultMessage

    assert ExtensionMessage("note", "kept aside").text == "kept aside"
    assert ExtensionMessage("data", {"a": 1}).text == ""  # no text a model reads
    assert ToolResultMessage("c", "t", [TextContent("x"), TextContent("y")]).text == "xy"
    roles = [cls.role for cls in (UserMessage, AssistantMessage, ToolResultMessage, ExtensionMessage)]
    assert roles == ["user", "assistant", "toolResult", "extension"]
