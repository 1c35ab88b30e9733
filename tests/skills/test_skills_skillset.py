"""Skill sets: discovery, precedence, broken files, the catalog and validation (SKILL-4 to SKILL-7)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from phi.skills import InvalidFrontmatter, MissingField, Skill, SkillSet, SkillWarning
from phi.skills.skillset import MAX_DEPTH


def fm(name: str, description: str = "d", extra: str = "") -> str:
    return f"name: {name}\ndescription: {description}\n{extra}".rstrip("\n")


# -- SKILL-4: discovery ----------------------------------------------------------------------------

def test_a_root_holds_skill_directories_found_at_any_depth_up_to_the_bound(make_skill, tmp_path):
    """SKILL-4: nested group directories (e.g. openai/skills' .curated/) are searched; skill
    directories are not entered; files beside skills and plain directories are ignored."""
    make_skill("a", fm("a"))
    make_skill(".curated/b", fm("b"))
    make_skill("a/scripts/inner", fm("inner"))  # inside a skill: its resources, not a skill
    make_skill("lower", fm("lower"), file_name="skill.md")
    deep = "/".join(f"g{i}" for i in range(MAX_DEPTH - 1))
    make_skill(f"{deep}/deep", fm("deep"))
    make_skill(f"{deep}/g/too-deep", fm("too-deep"))
    (tmp_path / "README.md").write_text("not a skill")
    (tmp_path / "empty").mkdir()
    skills = SkillSet.load_dir(tmp_path)
    assert sorted(skills.names) == ["a", "b", "deep", "lower"]
    assert skills.get("lower").file_path.name == "skill.md"


def test_git_and_node_modules_are_skipped(make_skill, tmp_path):
    """SKILL-4"""
    make_skill(".git/x", fm("x"))
    make_skill("node_modules/pkg/y", fm("y"))
    make_skill("ok", fm("ok"))
    assert SkillSet.load_dir(tmp_path).names == ["ok"]


def test_uppercase_skill_md_is_preferred(make_skill, tmp_path):
    """SKILL-4"""
    make_skill("s", fm("upper"))
    if (tmp_path / "s" / "skill.md").exists():
        pytest.skip("case-insensitive file system: SKILL.md and skill.md are one file")
    make_skill("s", fm("lower"), file_name="skill.md")
    assert SkillSet.load_dir(tmp_path).names == ["upper"]


def test_a_skill_directory_or_its_skill_md_may_be_given_directly(make_skill, tmp_path):
    """SKILL-4: a directory holding SKILL.md is one skill; its subdirectories are its files."""
    path = make_skill("one", fm("one"))
    make_skill("one/references/nested", fm("nested"))
    assert SkillSet.load_dir(tmp_path / "one").names == ["one"]
    assert SkillSet.load_dir(path).names == ["one"]


def test_missing_directories_are_skipped_silently(tmp_path, caplog):
    """SKILL-4"""
    with caplog.at_level(logging.WARNING, logger="phi.skills"):
        skills = SkillSet.load([tmp_path / "nope", tmp_path / "also-nope"])
    assert len(skills) == 0 and skills.errors == () and not caplog.records


def test_symlink_loops_are_walked_once(make_skill, tmp_path):
    """SKILL-4: each real directory once, so a loop ends and a linked skill is not found twice."""
    make_skill("group/s", fm("s"))
    (tmp_path / "group" / "back").symlink_to(tmp_path)
    (tmp_path / "alias").symlink_to(tmp_path / "group")
    skills = SkillSet.load_dir(tmp_path)
    assert skills.names == ["s"]


def test_the_walk_is_bounded_in_directories(tmp_path, make_skill, caplog, monkeypatch):
    """SKILL-4"""
    import phi.skills.skillset as skillset

    monkeypatch.setattr(skillset, "MAX_DIRS", 5)
    for i in range(10):
        (tmp_path / f"d{i}").mkdir()
    make_skill("z", fm("z"))
    with caplog.at_level(logging.WARNING, logger="phi.skills"):
        assert len(SkillSet.load_dir(tmp_path)) == 0
    assert "after 5 directories" in caplog.text


def test_broken_skills_are_logged_recorded_and_skipped(make_skill, tmp_path, caplog):
    """SKILL-4: the documented errors, each naming its file; the good skills load."""
    make_skill("good", fm("good"))
    no_fence = make_skill("no-fence", raw=b"name: x\ndescription: d\n")
    unclosed = make_skill("unclosed", raw=b"---\nname: x\ndescription: d\n")
    bad_yaml = make_skill("bad-yaml", "name: x\ndescription: [")
    no_name = make_skill("no-name", "description: d")
    empty = make_skill("empty-description", "name: x\ndescription: ''")
    listed = make_skill("list", "- name: x")
    with caplog.at_level(logging.WARNING, logger="phi.skills"):
        skills = SkillSet.load_dir(tmp_path)
    assert skills.names == ["good"]
    got = {(type(e), e.path) for e in skills.errors}
    assert got == {(InvalidFrontmatter, no_fence), (InvalidFrontmatter, unclosed), (InvalidFrontmatter, bad_yaml),
                   (MissingField, no_name), (MissingField, empty), (InvalidFrontmatter, listed)}
    for error in skills.errors:
        assert str(error.path) in caplog.text


def test_strict_loading_raises_the_first_error(make_skill, tmp_path):
    """SKILL-4"""
    make_skill("a-good", fm("a-good"))
    bad = make_skill("b-bad", "name: b-bad")
    with pytest.raises(MissingField) as info:
        SkillSet.load_dir(tmp_path, strict=True)
    assert info.value.path == bad and info.value.field == "description"
    with pytest.raises(MissingField):
        SkillSet.load([tmp_path], strict=True)


# -- SKILL-5: precedence ---------------------------------------------------------------------------

def test_later_directories_override_earlier_ones(make_skill, tmp_path, caplog):
    """SKILL-5"""
    user, project = tmp_path / "user", tmp_path / "project"
    make_skill("foo", fm("foo", "user foo"), root=user)
    make_skill("only-user", fm("only-user"), root=user)
    make_skill("foo", fm("foo", "project foo"), root=project)
    with caplog.at_level(logging.WARNING, logger="phi.skills"):
        skills = SkillSet.load([user, project])
    assert skills.get("foo").description == "project foo" and skills.get("foo").source == "dir:1"
    assert skills.get("only-user").source == "dir:0"
    assert "'foo'" in caplog.text and "overrides" in caplog.text
    assert SkillSet.load([project, user]).get("foo").description == "user foo"


def test_merge_lets_the_other_set_win(make_skill, tmp_path):
    """SKILL-5"""
    make_skill("foo", fm("foo", "first"), root=tmp_path / "a")
    make_skill("bar", fm("bar"), root=tmp_path / "a")
    make_skill("foo", fm("foo", "second"), root=tmp_path / "b")
    first = SkillSet.load_dir(tmp_path / "a", source="user")
    second = SkillSet.load_dir(tmp_path / "b", source="project")
    merged = first.merge(second)
    assert (merged.get("foo").description, merged.get("foo").source) == ("second", "project")
    assert merged.names == ["bar", "foo"] and len(first) == 2 and first.get("foo").description == "first"
    assert second.merge(first).get("foo").description == "first"


def test_within_one_walk_the_later_directory_wins(make_skill, tmp_path):
    """SKILL-5: two directories of one root whose skills share a name."""
    make_skill("a-dir", fm("same", "from a-dir"))
    make_skill("b-dir", fm("same", "from b-dir"))
    assert SkillSet.load_dir(tmp_path).get("same").description == "from b-dir"


def test_load_accepts_a_single_path(make_skill, tmp_path):
    """SKILL-5: a lone path is one directory, not a sequence of characters."""
    make_skill("x", fm("x"))
    assert SkillSet.load(tmp_path).names == SkillSet.load(str(tmp_path)).names == ["x"]


# -- SKILL-6: the catalog --------------------------------------------------------------------------

def test_the_catalog_escapes_and_is_well_formed_xml(make_skill, tmp_path):
    """SKILL-6"""
    make_skill("x", fm("x", "'Use <b> & \"quotes\" when: needed'"))
    text = SkillSet.load_dir(tmp_path).format_for_prompt()
    assert "Use &lt;b&gt; &amp; &quot;quotes&quot; when: needed" in text
    root = ET.fromstring(text)
    skill = root.find("skill")
    assert skill.findtext("description").strip() == 'Use <b> & "quotes" when: needed'
    assert skill.findtext("location").strip() == str((tmp_path / "x" / "SKILL.md").resolve())


def test_the_catalog_is_sorted_by_directory_name_then_name(make_skill, tmp_path):
    """SKILL-6: independent of load order and of which directory a skill came from."""
    make_skill("b", fm("b"), root=tmp_path / "one")
    make_skill("zeta", fm("alpha"), root=tmp_path / "one")
    make_skill("a", fm("a"), root=tmp_path / "two")
    skills = SkillSet.load([tmp_path / "two", tmp_path / "one"])
    assert skills.names == ["a", "b", "alpha"]
    names = [el.text.strip() for el in ET.fromstring(skills.format_for_prompt()).iter("name")]
    assert names == ["a", "b", "alpha"]
    assert SkillSet(reversed(list(skills))).names == skills.names


def test_an_empty_set_gives_no_catalog(tmp_path):
    """SKILL-6"""
    assert SkillSet().format_for_prompt() == "" and SkillSet.load([tmp_path]).format_for_prompt() == ""


# -- SKILL-7: validation ---------------------------------------------------------------------------

@pytest.mark.parametrize("directory, name, extra, rules", [
    ("pdf-processing", "pdf-processing", "", []),
    ("café-skill", "café-skill", "", []),
    ("x" * 65, "x" * 65, "", ["name-length"]),
    ("PDF-Processing", "PDF-Processing", "", ["name-case"]),
    ("-pdf", "-pdf", "", ["name-hyphen-edge"]),
    ("pdf-", "pdf-", "", ["name-hyphen-edge"]),
    ("pdf--processing", "pdf--processing", "", ["name-double-hyphen"]),
    ("pdf_processing", "pdf_processing", "", ["name-chars"]),
    ("pdf", "other", "", ["name-dir-mismatch"]),
    ("s", "s", "compatibility: ''", ["compatibility-length"]),
    ("s", "s", "compatibility: " + "c" * 501, ["compatibility-length"]),
    ("s", "s", "compatibility: " + "c" * 500, []),
    ("s", "s", "version: 1\nuser-invocable: false", ["unknown-fields"]),
])
def test_each_rule_is_a_warning_and_the_skill_loads(make_skill, tmp_path, directory, name, extra, rules):
    """SKILL-7"""
    make_skill(directory, fm(name, extra=extra))
    skills = SkillSet.load_dir(tmp_path)
    assert skills.names == [name]
    warnings = skills.validate()
    assert [w.rule for w in warnings] == rules
    for warning in warnings:
        assert isinstance(warning, SkillWarning) and warning.path == skills.get(name).file_path
        assert str(warning).startswith(f"{warning.path}: ")


def test_description_length_counts_characters(make_skill, tmp_path):
    """SKILL-7"""
    make_skill("a", fm("a", "é" * 1024))
    make_skill("b", fm("b", "é" * 1025))
    warnings = SkillSet.load_dir(tmp_path).validate()
    assert [(w.path.parent.name, w.rule) for w in warnings] == [("b", "description-length")]


def test_unknown_keys_are_named(make_skill, tmp_path):
    """SKILL-7"""
    make_skill("s", fm("s", extra="zeta: 1\nalpha: 2"))
    (warning,) = SkillSet.load_dir(tmp_path).validate()
    assert "alpha, zeta" in warning.message


# -- import cost -----------------------------------------------------------------------------------

def test_phi_does_not_import_the_skills_package():
    """Issue 12: phi.skills is loaded only when used."""
    code = "import sys, phi, phi.agent; print([m for m in sys.modules if m.startswith('phi.skills')])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                         env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    assert out.stdout.strip() == "[]", out.stderr


def test_skill_objects_are_plain_values(make_skill, tmp_path):
    path = make_skill("s", fm("s"))
    assert Skill.from_file(path) == Skill.from_file(path)
    with pytest.raises(AttributeError):
        Skill.from_file(path).name = "other"  # type: ignore[misc]
