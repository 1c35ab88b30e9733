"""The eight real skills in tests/fixtures/skills parse as the reference library skills-ref parsed
them (expected.json) and render its <available_skills> block (expected_available_skills.xml)."""

from __future__ import annotations

import json

import pytest

from phi.skills import SkillSet

from .conftest import FIXTURES
from .reference import properties, rule_of

EXPECTED = json.loads((FIXTURES / "expected.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def skills() -> SkillSet:
    return SkillSet.load([FIXTURES], strict=True)


def test_every_sample_skill_is_found(skills):
    """SKILL-4: a root of skill directories (files beside them, such as the license, are ignored)."""
    assert sorted(skill.base_dir.name for skill in skills) == sorted(EXPECTED)
    assert skills.errors == ()
    assert {skill.source for skill in skills} == {"dir:0"}


@pytest.mark.parametrize("directory", sorted(EXPECTED))
def test_each_sample_parses_as_skills_ref_parsed_it(skills, directory):
    """SKILL-3: name, description, license, compatibility, metadata (strings as written), allowed-tools."""
    expected = EXPECTED[directory]
    skill = next(s for s in skills if s.base_dir.name == directory)
    assert properties(skill) == expected["properties(skills-ref/strictyaml)"]
    assert len(skill.description) == expected["description_chars"]
    assert skill.file_path == (FIXTURES / directory / "SKILL.md").resolve()
    assert skill.base_dir == (FIXTURES / directory).resolve()
    assert skill.extra == {}


@pytest.mark.parametrize("directory", sorted(EXPECTED))
def test_validate_reports_what_skills_ref_reports_and_loads_anyway(skills, directory):
    """SKILL-7: the real skills that break the spec (name != directory, description > 1024) still load."""
    skill = next(s for s in skills if s.base_dir.name == directory)
    ours = sorted(w.rule for w in skills.validate() if w.path == skill.file_path)
    assert ours == sorted(rule_of(m) for m in EXPECTED[directory]["skills_ref_validate_errors"])


def test_validate_names_the_real_rule_breakers(skills):
    warnings = {(w.path.parent.name, w.rule): str(w) for w in skills.validate()}
    assert set(warnings) == {("composition-patterns", "name-dir-mismatch"),
                             ("react-view-transitions", "name-dir-mismatch"),
                             ("claude-api", "description-length")}
    assert "1068 characters" in warnings["claude-api", "description-length"]
    mismatch = warnings["composition-patterns", "name-dir-mismatch"]
    assert str(FIXTURES.resolve() / "composition-patterns" / "SKILL.md") in mismatch


def test_catalog_equals_the_reference_rendering(skills):
    """SKILL-6: byte for byte (the expected file is skills-ref's stdout, which ends in a newline)."""
    expected = (FIXTURES / "expected_available_skills.xml").read_text(encoding="utf-8")
    expected = expected.replace("SKILLS_DIR", str(FIXTURES.resolve()))
    assert skills.format_for_prompt() + "\n" == expected


def test_bodies_are_read_lazily_without_the_frontmatter(skills):
    for skill in skills:
        raw = skill.file_path.read_text(encoding="utf-8")
        assert skill.read_body() == raw.split("\n---\n", 1)[1].strip()
    assert skills.get("claude-api").read_body().startswith("# Building LLM-Powered Applications with Claude\n")
