"""SPEC §12.3 — Agent Skills: ``SKILL.md`` directories, their catalog and the ``read_skill`` tool.

Imported only when used (``import phi`` does not load it)::

    import phi
    from phi.skills import SkillSet, read_skill_tool

    skills = SkillSet.load([Path.home() / ".agents/skills", ".agents/skills"])  # later dirs win
    # An Agent tool source: the <available_skills> catalog ends each run's system prompt, and the
    # read_skill tool lets the model load a skill on demand.
    agent = phi.Agent(model="claude-sonnet-4-5", tool_sources=[skills])

    # The same by hand:
    system_prompt += "\\n\\n" + skills.format_for_prompt()
    tools.append(read_skill_tool(skills))

Modules: :mod:`.frontmatter` (fences and YAML, SKILL-1/2), :mod:`.skill` (one skill, SKILL-3),
:mod:`.skillset` (discovery, precedence, catalog, SKILL-4 to SKILL-6), :mod:`.rules` (the
specification's rules as warnings, SKILL-7), :mod:`.read_tool` (SKILL-8). Guide: ``docs/skills.md``.
"""

from __future__ import annotations

from .errors import InvalidFrontmatter, MissingField, SkillError
from .read_tool import ReadSkillTool, read_skill_tool
from .rules import SkillWarning
from .skill import Skill
from .skillset import SkillSet

__all__ = [
    "Skill", "SkillSet", "SkillError", "InvalidFrontmatter", "MissingField", "SkillWarning",
    "ReadSkillTool", "read_skill_tool",
]
