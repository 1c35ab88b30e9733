"""phi.skills against the reference library skills-ref itself (the `skills-ref` package on PyPI,
Apache-2.0, a test extra; it needs Python 3.11+): the real sample skills and random ones must parse
to the same properties, break the same rules and render the same catalog (SKILL-3, SKILL-6, SKILL-7).
The documented differences (phi is more lenient or closer to YAML) have their own tests below.
The full-size run: scripts/fuzz/skills_differential.py."""

from __future__ import annotations

import random

import pytest

from phi.skills import MissingField, Skill, SkillSet

from .conftest import FIXTURES
from .reference import compare_with_skills_ref, random_skill, write_skill

skills_ref = pytest.importorskip("skills_ref", reason="skills-ref (test extra) needs Python 3.11 or newer")
from skills_ref.errors import ParseError  # noqa: E402
from skills_ref.parser import read_properties  # noqa: E402
from skills_ref.prompt import to_prompt  # noqa: E402


@pytest.mark.parametrize("directory", sorted(p.name for p in FIXTURES.iterdir() if p.is_dir()))
def test_the_sample_skills_agree(directory):
    """SKILL-3, SKILL-7"""
    assert compare_with_skills_ref(FIXTURES / directory) == []


def test_the_sample_catalog_agrees():
    """SKILL-6: skills-ref given the sorted skill directories."""
    dirs = sorted(p for p in FIXTURES.iterdir() if p.is_dir())
    assert SkillSet.load([FIXTURES]).format_for_prompt() == to_prompt(dirs)


def test_random_skills_agree(tmp_path):
    """SKILL-3, SKILL-6, SKILL-7: 300 random skills (the script runs thousands)."""
    rng = random.Random(20260812)
    failures = []
    for i in range(300):
        directory, text = random_skill(rng)
        skill_dir = write_skill(tmp_path / str(i), directory, text)
        for problem in compare_with_skills_ref(skill_dir):
            failures.append(f"{skill_dir}:\n{text}\n-> {problem}")
    assert not failures, "\n\n".join(failures[:5])


# -- where phi differs on purpose ------------------------------------------------------------------

def test_phi_reads_what_skills_ref_refuses(make_skill, tmp_path):
    """SKILL-1/2: a BOM, a colon in a plain value, a flow mapping."""
    cases = {
        "bom": b"\xef\xbb\xbf---\nname: bom\ndescription: d\n---\n",
        "colon": b"---\nname: colon\ndescription: Use when: asked\n---\n",
        "flow": b"---\nname: flow\ndescription: d\nmetadata: {author: me}\n---\n",
    }
    for directory, raw in cases.items():
        path = make_skill(directory, raw=raw)
        with pytest.raises(ParseError):
            read_properties(path.parent)
        assert Skill.from_file(path).name == directory


def test_phi_does_not_cut_a_value_at_three_dashes(make_skill):
    """SKILL-1: skills-ref splits the file at the first '---' anywhere."""
    path = make_skill("s", "name: s\ndescription: before --- after")
    assert read_properties(path.parent).description == "before"
    assert Skill.from_file(path).description == "before --- after"


def test_a_yaml_null_is_no_value_for_phi(make_skill):
    """SKILL-3: strictyaml reads `name: null` as the text 'null'; phi as a missing name, and an
    empty or null optional field as absent (None) rather than ''."""
    path = make_skill("s", "name: null\ndescription: d")
    assert read_properties(path.parent).name == "null"
    with pytest.raises(MissingField):
        Skill.from_file(path)
    path = make_skill("t", "name: t\ndescription: d\nlicense:\ncompatibility: ~")
    ref = read_properties(path.parent)
    assert (ref.license, ref.compatibility) == ("", "~")
    skill = Skill.from_file(path)
    assert (skill.license, skill.compatibility) == (None, None)


def test_an_empty_catalog_is_empty_text_for_phi():
    """SKILL-6: the client guide says to leave an empty catalog out of the prompt."""
    assert to_prompt([]) == "<available_skills>\n</available_skills>"
    assert SkillSet().format_for_prompt() == ""
