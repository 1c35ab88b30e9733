"""The read_skill tool on real temporary directories (SKILL-8)."""

from __future__ import annotations

import os

import jsonschema
import pytest

from phi.loop.tool import AgentTool, ToolContext
from phi.errors import ToolError
from phi.skills import SkillSet, read_skill_tool

BODY = "# PDF processing\n\nRun `scripts/extract.py`. See [the guide](references/guide.md)."


def ctx() -> ToolContext:
    return ToolContext("call_1", "read_skill")


@pytest.fixture
def setup(make_skill, tmp_path):
    """skills/pdf (with files), skills/other, and a secret file outside both."""
    root = tmp_path / "skills"
    make_skill("pdf", "name: pdf\ndescription: PDFs", BODY + "\n", root=root)
    pdf = root / "pdf"
    (pdf / "scripts").mkdir()
    (pdf / "scripts" / "extract.py").write_text("print('extract')\n")
    (pdf / "references").mkdir()
    (pdf / "references" / "guide.md").write_text("# Guide\n\nüñí\n")
    (pdf / ".git").mkdir()
    (pdf / ".git" / "HEAD").write_text("ref")
    make_skill("other", "name: other\ndescription: Other", root=root)
    (tmp_path / "secret.txt").write_text("TOP SECRET")
    skills = SkillSet.load_dir(root)
    return skills, read_skill_tool(skills), pdf.resolve(), tmp_path


def text_of(result) -> str:
    return result.content[0].text


def test_the_tool_is_an_agent_tool_with_a_valid_schema(setup):
    """SKILL-8: the names are an enum, as the client guide advises."""
    skills, tool, _, _ = setup
    assert isinstance(tool, AgentTool) and tool.name == "read_skill"
    jsonschema.Draft202012Validator.check_schema(tool.parameters)
    assert tool.parameters["properties"]["name"]["enum"] == ["other", "pdf"]
    assert tool.parameters["required"] == ["name"]


def test_the_body_comes_wrapped_with_the_directory_and_its_files(setup):
    """SKILL-8"""
    _, tool, pdf, _ = setup
    result = tool.execute({"name": "pdf"}, ctx())
    assert text_of(result) == (
        f'<skill_content name="pdf">\n{BODY}\n\nSkill directory: {pdf}\n'
        "Relative paths in this skill are relative to the skill directory. "
        'Read a file of the skill with read_skill(name="pdf", path="<relative path>").\n'
        "<skill_resources>\n<file>references/guide.md</file>\n<file>scripts/extract.py</file>\n</skill_resources>\n"
        "</skill_content>")
    assert result.details == {"skill": "pdf", "directory": str(pdf),
                              "resources": ["references/guide.md", "scripts/extract.py"]}


def test_the_resource_list_is_bounded(make_skill, tmp_path):
    """SKILL-8"""
    make_skill("many", "name: many\ndescription: d")
    for i in range(12):
        (tmp_path / "many" / f"f{i:02}.txt").write_text("x")
    tool = read_skill_tool(SkillSet.load_dir(tmp_path), max_resources=5)
    text = text_of(tool.execute({"name": "many"}, ctx()))
    assert text.count("<file>") == 5 and "<file>f04.txt</file>" in text
    assert "(Only the first 5 files are listed.)" in text


def test_a_resource_is_read_relative_to_the_skill_directory(setup):
    """SKILL-8: relative, with '..' that stays inside, or absolute inside the skill directory."""
    _, tool, pdf, _ = setup
    for path in ("references/guide.md", "scripts/../references/guide.md", str(pdf / "references" / "guide.md")):
        result = tool.execute({"name": "pdf", "path": path}, ctx())
        assert text_of(result) == "# Guide\n\nüñí\n", path
    assert result.details["bytes"] == len("# Guide\n\nüñí\n".encode()) and not result.details["truncated"]


@pytest.mark.parametrize("path", ["../other/SKILL.md", "../../secret.txt", "scripts/../../other/SKILL.md"])
def test_dot_dot_out_of_the_skill_directory_is_refused(setup, path):
    """SKILL-8"""
    _, tool, pdf, _ = setup
    with pytest.raises(ToolError, match=f"refused: '..' leads outside the skill directory {pdf}"):
        tool.execute({"name": "pdf", "path": path}, ctx())


def test_absolute_paths_elsewhere_are_refused(setup):
    """SKILL-8"""
    _, tool, pdf, tmp = setup
    for path in (str(tmp / "secret.txt"), "/etc/passwd", f"{pdf}/../other/SKILL.md"):
        with pytest.raises(ToolError, match="is outside the directory of skill 'pdf'"):
            tool.execute({"name": "pdf", "path": path}, ctx())


def test_symlinks_leading_out_are_refused_and_those_inside_followed(setup):
    """SKILL-8"""
    _, tool, pdf, tmp = setup
    (pdf / "leak.txt").symlink_to(tmp / "secret.txt")
    (pdf / "leakdir").symlink_to(tmp)
    (pdf / "relative-leak").symlink_to("../../secret.txt")
    (pdf / "alias.md").symlink_to("references/guide.md")
    (pdf / "abs-alias.md").symlink_to(pdf / "references" / "guide.md")
    for path in ("leak.txt", "leakdir/secret.txt", "relative-leak"):
        with pytest.raises(ToolError, match="refused:.*leads outside the skill directory") as info:
            tool.execute({"name": "pdf", "path": path}, ctx())
        assert "TOP SECRET" not in str(info.value)
    assert text_of(tool.execute({"name": "pdf", "path": "alias.md"}, ctx())).startswith("# Guide")
    assert text_of(tool.execute({"name": "pdf", "path": "abs-alias.md"}, ctx())).startswith("# Guide")


def test_binary_files_are_refused(setup):
    """SKILL-8"""
    _, tool, pdf, _ = setup
    (pdf / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(100))
    with pytest.raises(ToolError, match=r"logo.png in skill 'pdf' is a binary file \(116 bytes\)"):
        tool.execute({"name": "pdf", "path": "logo.png"}, ctx())


def test_long_text_is_cut_on_a_character_boundary_with_a_note(make_skill, tmp_path):
    """SKILL-8: 'é' is two bytes; a limit in its middle cuts before it."""
    make_skill("s", "name: s\ndescription: d", "x" * 9 + "é" * 10)
    (tmp_path / "s" / "big.txt").write_text("a" * 9 + "é" * 10)
    tool = read_skill_tool(SkillSet.load_dir(tmp_path), max_bytes=10)
    result = tool.execute({"name": "s", "path": "big.txt"}, ctx())
    assert text_of(result) == f"aaaaaaaaa\n[truncated: the first 9 of 29 bytes are shown; the file is big.txt]"
    assert result.details["truncated"]
    body = text_of(tool.execute({"name": "s"}, ctx()))
    assert body.startswith('<skill_content name="s">\nxxxxxxxxx\n[truncated: the first 9 of ')


@pytest.mark.parametrize("make, message", [
    (lambda d: (d / "sub").mkdir(), "sub in skill 'pdf' is a directory, not a file"),
    (lambda d: os.mkfifo(d / "sub"), "sub in skill 'pdf' is a FIFO, not a regular file"),
    (lambda d: None, "does not exist. Call read_skill with only the name"),
])
def test_directories_special_files_and_missing_files_are_errors(setup, make, message):
    """SKILL-8: a FIFO is refused at once instead of blocking the tool."""
    _, tool, pdf, _ = setup
    make(pdf)
    with pytest.raises(ToolError, match=message):
        tool.execute({"name": "pdf", "path": "sub"}, ctx())


def test_unknown_skills_list_the_available_ones(setup):
    """SKILL-8"""
    _, tool, _, _ = setup
    with pytest.raises(ToolError, match=r"Unknown skill 'pfd'. Available skills: other, pdf."):
        tool.execute({"name": "pfd"}, ctx())
    with pytest.raises(ToolError, match="`name` must be"):
        tool.execute({}, ctx())
    with pytest.raises(ToolError, match="`path` must be a string"):
        tool.execute({"name": "pdf", "path": 3}, ctx())
    with pytest.raises(ToolError, match="Invalid path .*NUL"):
        tool.execute({"name": "pdf", "path": "a\x00b"}, ctx())


def test_the_list_of_available_names_is_bounded(make_skill, tmp_path):
    """SKILL-8"""
    for i in range(105):
        make_skill(f"s{i:03}", f"name: s{i:03}\ndescription: d")
    tool = read_skill_tool(SkillSet.load_dir(tmp_path))
    with pytest.raises(ToolError, match=r"Available skills: s000, .*, s099 and 5 more \(see <available_skills>\)\.$"):
        tool.execute({"name": "nope"}, ctx())


def test_a_skill_broken_after_loading_is_a_tool_error(setup):
    """SKILL-8: the body is read at activation; a file changed meanwhile gives a clear error."""
    _, tool, pdf, _ = setup
    (pdf / "SKILL.md").write_text("no frontmatter any more")
    with pytest.raises(ToolError, match="Cannot load skill 'pdf':.*must start with a line '---'"):
        tool.execute({"name": "pdf"}, ctx())


def test_an_agent_run_loads_a_skill_through_the_tool(setup):
    """SKILL-8 end to end: the catalog in the system prompt, the model calls read_skill, the loop
    validates the arguments against the schema and returns the body to the model."""
    from phi.agent import Agent
    from phi.providers.mock import ScriptedProvider, ScriptedResponse
    from phi.types import ToolResultMessage

    skills, tool, _, _ = setup
    provider = ScriptedProvider([
        ScriptedResponse.tool_call("read_skill", {"name": "pdf"}, "c1"),
        ScriptedResponse.tool_call("read_skill", {"name": "nope"}, "c2"),
        "done",
    ])
    agent = Agent(provider=provider, system_prompt="You help.\n\n" + skills.format_for_prompt(), tools=[tool])
    agent.run("Extract the text of a.pdf")
    results = [m for m in agent.messages if isinstance(m, ToolResultMessage)]
    assert not results[0].is_error and "Run `scripts/extract.py`" in results[0].content[0].text
    assert results[1].is_error
    assert "<available_skills>" in provider.calls[0].system_prompt
