"""A SkillSet as an Agent tool source (phi/agent/sources.py, phi/skills/skillset.py; SPEC AGENT-5, §12.3):
the catalog in every run's system prompt, the read_skill tool, merging, and nothing when there are none."""

from __future__ import annotations

from pathlib import Path

from phi import Agent, ScriptedProvider
from phi.skills import SkillSet
from phi.skills.skillset import SKILLS_INSTRUCTION

SKILLS = Path(__file__).resolve().parent.parent / "fixtures" / "skills"


def call(tool: str, call_id: str, **args) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": tool, "arguments": args}]}


def test_a_skill_set_puts_the_catalog_in_each_run_and_the_model_can_read_a_skill():
    provider = ScriptedProvider([call("read_skill", "r1", name="canvas-design"), "done", "again"])
    agent = Agent(provider=provider, system_prompt="You help.", tool_sources=[SkillSet.load(SKILLS)])
    agent.run("make a poster")
    request = provider.calls[0]
    catalog = SkillSet.load([SKILLS]).format_for_prompt()
    assert request.system_prompt == f"You help.\n\n{SKILLS_INSTRUCTION}\n{catalog}"
    assert [t.name for t in request.tools] == ["read_skill"]
    body = agent.messages[2].content[0].text
    assert body.startswith('<skill_content name="canvas-design">')
    agent.system_prompt = "Changed."
    agent.run("more")
    assert provider.calls[-1].system_prompt.startswith("Changed.\n\n")  # the catalog follows the prompt


def test_later_skills_merge_over_earlier_ones_and_read_tool_false_offers_no_tool(tmp_path):
    extra = tmp_path / "mine"
    (extra / "canvas-design").mkdir(parents=True)
    (extra / "canvas-design" / "SKILL.md").write_text(
        "---\nname: canvas-design\ndescription: My own canvas skill.\n---\nBody.\n", encoding="utf-8")
    provider = ScriptedProvider(["ok"])
    skills = SkillSet.load([SKILLS], read_tool=False).merge(SkillSet.load([extra]))
    agent = Agent(provider=provider, tool_sources=[skills])
    agent.run("hi")
    request = provider.calls[0]
    assert "My own canvas skill." in request.system_prompt and SKILLS_INSTRUCTION not in request.system_prompt
    assert request.tools == []
    assert len(skills) == len(SkillSet.load([SKILLS]))


def test_no_skills_adds_nothing(tmp_path):
    provider = ScriptedProvider(["ok"])
    Agent(provider=provider, system_prompt="Plain.", tool_sources=[SkillSet.load(tmp_path)]).run("hi")
    assert provider.calls[0].system_prompt == "Plain." and provider.calls[0].tools == []
