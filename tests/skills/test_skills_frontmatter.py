"""SKILL.md frontmatter as real skills write it, and the errors for broken files (SKILL-1 to SKILL-3)."""

from __future__ import annotations

import datetime

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from phi.skills import InvalidFrontmatter, MissingField, Skill, SkillError
from phi.skills.frontmatter import MAX_FRONTMATTER_BYTES, parse_frontmatter, quote_colon_values, split_frontmatter


def load(make_skill, frontmatter: str, body: str = "Body.\n", directory: str = "s") -> Skill:
    return Skill.from_file(make_skill(directory, frontmatter, body))


# -- SKILL-1: fences --------------------------------------------------------------------------------

def test_a_byte_order_mark_and_crlf_line_ends_are_accepted(make_skill):
    """SKILL-1"""
    raw = "\ufeff---\r\nname: s\r\ndescription: |\r\n  one\r\n  two\r\n---\r\n\r\nBody line\r\nnext\r\n"
    skill = Skill.from_file(make_skill("s", raw=raw.encode("utf-8")))
    assert (skill.name, skill.description) == ("s", "one\ntwo")
    assert skill.read_body() == "Body line\nnext"


def test_three_dashes_inside_a_value_do_not_close_the_frontmatter(make_skill):
    """SKILL-1: skills-ref's split("---") would cut the description at the first ---."""
    skill = load(make_skill, "name: s\ndescription: before --- after\nlicense: MIT", "# Title\n\n---\n\nmore")
    assert skill.description == "before --- after"
    assert skill.license == "MIT"
    assert skill.read_body() == "# Title\n\n---\n\nmore"


def test_fences_may_carry_trailing_blanks_and_the_body_may_be_missing(make_skill):
    """SKILL-1"""
    skill = Skill.from_file(make_skill("s", raw=b"---  \nname: s\ndescription: d\n--- \t"))
    assert skill.description == "d"
    assert skill.read_body() == ""


@pytest.mark.parametrize("raw, message", [
    (b"name: s\ndescription: d\n", "must start with a line '---'"),
    (b"\n---\nname: s\ndescription: d\n---\n", "must start with a line '---'"),
    (b"---yaml\nname: s\ndescription: d\n---\n", "must start with a line '---'"),
    (b"", "must start with a line '---'"),
    (b"---\nname: s\ndescription: d\n", "not closed"),
    (b"---\nname: s\ndescription: d\n----\n", "not closed"),
    (b"---", "not closed"),
])
def test_missing_fences_raise_invalid_frontmatter_with_the_path(make_skill, raw, message):
    """SKILL-1"""
    path = make_skill("s", raw=raw)
    with pytest.raises(InvalidFrontmatter, match=message) as info:
        Skill.from_file(path)
    assert str(path) in str(info.value) and info.value.path == path


def test_an_unclosed_frontmatter_longer_than_the_bound_is_reported_as_such(make_skill):
    """SKILL-1: only the first MAX_FRONTMATTER_BYTES are read to find the closing fence."""
    raw = b"---\nname: s\ndescription: d\n" + b"# filler line\n" * (MAX_FRONTMATTER_BYTES // 14 + 10) + b"---\n"
    with pytest.raises(InvalidFrontmatter, match=f"within the first {MAX_FRONTMATTER_BYTES} bytes"):
        Skill.from_file(make_skill("s", raw=raw))


def test_split_returns_the_body_offset():
    text, offset = split_frontmatter(b"---\na: 1\n---\nbody", "x")
    assert (text, offset) == ("a: 1\n", 13)


# -- SKILL-2: YAML ------------------------------------------------------------------------------------

@pytest.mark.parametrize("frontmatter, message", [
    ("name: s\ndescription: [unclosed", "invalid YAML"),
    ("name: s\n  description: d\n bad: indentation", "invalid YAML"),
    ("- name: s\n- description: d", "must be a YAML mapping"),
    ("just a sentence", "must be a YAML mapping"),
    ("", "must be a YAML mapping"),
    ("name: s\n---x\ndescription: d", "invalid YAML"),
])
def test_bad_yaml_raises_invalid_frontmatter_with_the_path(make_skill, frontmatter, message):
    """SKILL-2"""
    path = make_skill("s", frontmatter)
    with pytest.raises(InvalidFrontmatter, match=message) as info:
        Skill.from_file(path)
    assert str(info.value).startswith(f"{path}: ")


def test_unquoted_values_with_a_colon_are_quoted_and_parsed_again(make_skill):
    """SKILL-2: the client guide's fallback; `description: Use when: ...` is invalid YAML."""
    frontmatter = ('name: s\ndescription: Use this skill when: the user asks about "PDFs"\n'
                   "metadata:\n  note: a: b\nnotes: |\n  keep: this: as written\n")
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(frontmatter)
    skill = load(make_skill, frontmatter)
    assert skill.description == 'Use this skill when: the user asks about "PDFs"'
    assert skill.metadata == {"note": "a: b"}
    assert skill.extra == {"notes": "keep: this: as written\n"}


def test_the_fallback_reports_the_original_error_when_quoting_does_not_help(make_skill):
    """SKILL-2"""
    with pytest.raises(InvalidFrontmatter) as info:
        load(make_skill, "name: s\ndescription: a: b\nlicense: [oops")
    assert str(info.value).endswith("invalid YAML in the frontmatter: "
                                    "mapping values are not allowed in this context (line 3, column 15)")


def test_quote_colon_values_leaves_block_scalars_and_valid_lines_alone():
    text = "a: plain\nb: |\n  x: y: z\n\n  w: v: u\nc: 'q: r'\nd: e: f\n- g: h: i\nm:\n  k: v\n  l: x: y"
    assert quote_colon_values(text) == (
        "a: plain\nb: |\n  x: y: z\n\n  w: v: u\nc: 'q: r'\nd: \"e: f\"\n- g: \"h: i\"\nm:\n  k: v\n  l: \"x: y\"")


def test_multi_line_plain_values_with_a_colon_are_quoted_whole(make_skill):
    """SKILL-2: the vercel style (value on the lines after the key) with a colon in it, and a value
    that goes on after the key's line."""
    skill = load(make_skill, "name: s\ndescription:\n  React patterns. Use when: refactoring\n  components.\n"
                             "license: MIT: see\n  LICENSE.txt\nmetadata:\n  author: vercel")
    assert skill.description == "React patterns. Use when: refactoring components."
    assert skill.license == "MIT: see LICENSE.txt"
    assert skill.metadata == {"author": "vercel"}


@pytest.mark.timeout(60)
def test_alias_expansion_does_not_blow_up():
    """SKILL-2: a 'billion laughs' frontmatter is read in linear time (aliases share one value)."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}, *a{i-1}]" for i in range(1, 12)]
    entries = parse_frontmatter("\n".join(lines), "x")
    assert len(entries) == 12


def test_self_referring_yaml_loads_and_deep_nesting_is_refused_cleanly(make_skill):
    """SKILL-2: no endless recursion either way."""
    skill = load(make_skill, "name: s\ndescription: d\nmetadata: &a\n  self: *a\nloop: &b [*b]")
    assert skill.metadata == {"self": "{'self': {...}}"}
    assert skill.extra["loop"][0] is skill.extra["loop"]
    with pytest.raises(InvalidFrontmatter, match="nests deeper"):
        parse_frontmatter("a: " + "[" * 200 + "]" * 200, "x")


def test_non_utf8_frontmatter_is_refused(make_skill):
    """SKILL-2"""
    with pytest.raises(InvalidFrontmatter, match="not UTF-8"):
        Skill.from_file(make_skill("s", raw=b"---\nname: s\ndescription: caf\xe9\n---\n"))


# -- SKILL-3: fields -----------------------------------------------------------------------------------

def test_multi_line_forms_each_give_one_string(make_skill):
    """SKILL-3: literal |, folded >, multi-line plain scalar, quoted values."""
    assert load(make_skill, "name: s\ndescription: |-\n  one\n  two").description == "one\ntwo"
    assert load(make_skill, "name: s\ndescription: >\n  one\n  two\n").description == "one two"
    assert load(make_skill, "name: s\ndescription:\n  one\n  two\n    three").description == "one two three"
    assert load(make_skill, "name: s\ndescription: \"Say \\\"hi\\\"\\tnow\"").description == 'Say "hi"\tnow'
    assert load(make_skill, "name: s\ndescription: 'it''s'").description == "it's"
    assert load(make_skill, "name: s\ndescription: plain \"quotes\" and 'apostrophes'").description == \
        "plain \"quotes\" and 'apostrophes'"
    assert load(make_skill, "name: '  s  '\ndescription: '  padded  '").name == "s"


def test_spec_fields_keep_scalars_as_written(make_skill):
    """SKILL-3: no YAML typing of the spec's fields (skills-ref reads them with strictyaml)."""
    skill = load(make_skill, "name: s\ndescription: yes\nlicense: 2024-01-01\ncompatibility: 1.10\n"
                             "metadata:\n  version: 1.10\n  flag: true\n  count: 007\n  empty:\n  tilde: ~\n"
                             "  nested: {a: 1}")
    assert (skill.description, skill.license, skill.compatibility) == ("yes", "2024-01-01", "1.10")
    assert skill.metadata == {"version": "1.10", "flag": "true", "count": "007", "empty": "", "tilde": "~",
                              "nested": "{'a': '1'}"}


def test_unknown_keys_are_kept_with_their_yaml_types(make_skill):
    """SKILL-3"""
    skill = load(make_skill, "name: s\ndescription: d\ndisable-model-invocation: true\nversion: 1.0\n"
                             "when: 2024-01-01\nhooks:\n  pre: [a, b]\ncustom: !mytag value\nempty:")
    assert skill.extra == {"disable-model-invocation": True, "version": 1.0, "when": datetime.date(2024, 1, 1),
                           "hooks": {"pre": ["a", "b"]}, "custom": "value", "empty": None}


@pytest.mark.parametrize("value, tools", [
    ("Bash(git:*) Bash(jq:*) Read", ["Bash(git:*)", "Bash(jq:*)", "Read"]),
    ("Bash(git add:*), Bash(git status:*),Read", ["Bash(git add:*)", "Bash(git status:*)", "Read"]),
    ("\n  - Read\n  - 'Bash(git commit:*)'\n  - ' Write '", ["Read", "Bash(git commit:*)", "Write"]),
    ("''", []),
    ("", []),
])
def test_allowed_tools_as_string_or_list(make_skill, value, tools):
    """SKILL-3"""
    assert load(make_skill, f"name: s\ndescription: d\nallowed-tools: {value}").allowed_tools == tools


@pytest.mark.parametrize("frontmatter, field", [
    ("description: d", "name"),
    ("name: s", "description"),
    ("name: s\ndescription:", "description"),
    ("name: s\ndescription: ''", "description"),
    ("name: s\ndescription: '   '", "description"),
    ("name: ~\ndescription: d", "name"),
    ("name: s\ndescription: null", "description"),
])
def test_missing_or_empty_required_fields_raise_missing_field(make_skill, frontmatter, field):
    """SKILL-3"""
    path = make_skill("s", frontmatter)
    with pytest.raises(MissingField) as info:
        Skill.from_file(path)
    assert info.value.field == field and info.value.path == path
    assert str(info.value).startswith(f"{path}: ") and repr(field) in str(info.value)


@pytest.mark.parametrize("frontmatter, message", [
    ("name: [a, b]\ndescription: d", "'name' must be a string, not a list"),
    ("name: s\ndescription: {a: b}", "'description' must be a string, not a mapping"),
    ("name: s\ndescription: d\nlicense: [MIT]", "'license' must be a string"),
    ("name: s\ndescription: d\nmetadata: text", "'metadata' must be a mapping"),
    ("name: s\ndescription: d\nallowed-tools: {a: b}", "'allowed-tools' must be a string or a list"),
])
def test_fields_of_the_wrong_shape_raise_invalid_frontmatter(make_skill, frontmatter, message):
    """SKILL-3"""
    with pytest.raises(InvalidFrontmatter, match=message):
        load(make_skill, frontmatter)


def test_unreadable_files_are_skill_errors(tmp_path):
    """SKILL-3: a missing file or a FIFO is a SkillError naming it, never a hang."""
    import os

    with pytest.raises(SkillError, match="cannot read SKILL.md"):
        Skill.from_file(tmp_path / "nope" / "SKILL.md")
    (tmp_path / "f").mkdir()
    os.mkfifo(tmp_path / "f" / "SKILL.md")
    with pytest.raises(SkillError, match="not a regular file"):
        Skill.from_file(tmp_path / "f" / "SKILL.md")


def test_paths_are_absolute_and_resolved(make_skill, tmp_path, monkeypatch):
    """SKILL-3"""
    make_skill("real", "name: real\ndescription: d")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.chdir(tmp_path)
    skill = Skill.from_file("link/SKILL.md", source="here")
    assert skill.base_dir == (tmp_path / "real").resolve() and skill.file_path == skill.base_dir / "SKILL.md"
    assert skill.source == "here"


# -- a property: any strings survive a YAML round trip ---------------------------------------------

_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00\ufeff"), min_size=1,
                max_size=80).filter(lambda s: s.strip() and s.isprintable())


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=_text, description=_text, license_=_text, meta=st.dictionaries(_text, _text, max_size=3),
       style=st.sampled_from([None, '"', "'", "|"]))
def test_frontmatter_written_by_yaml_safe_dump_reads_back(make_skill, name, description, license_, meta, style):
    """SKILL-1/2/3: whatever yaml.safe_dump writes (any quoting style), the loader reads back."""
    data = {"name": name, "description": description, "license": license_, "metadata": meta}
    frontmatter = yaml.safe_dump(data, allow_unicode=True, default_style=style, sort_keys=False)
    skill = Skill.from_file(make_skill("s", frontmatter, "body ---\n---\nafter"))
    assert (skill.name, skill.description) == (name.strip(), description.strip())
    assert skill.license == license_ and skill.metadata == meta
    assert skill.read_body() == "body ---\n---\nafter"
