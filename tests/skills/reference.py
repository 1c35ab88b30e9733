"""phi.skills next to the reference library skills-ref: its findings in phi's terms, random skills
(valid or not) written the ways real ones are, and the comparison of one skill directory.

Used by tests/skills/test_skills_ref_differential.py (a slice) and scripts/fuzz/skills_differential.py
(the full run)."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Any

from phi.skills import Skill

# skills-ref validator message fragment -> phi.skills rule code (phi/skills/rules.py)
RULE_OF_MESSAGE = {
    "Unexpected fields in frontmatter": "unknown-fields",
    "character limit": None,  # resolved below by the field it names
    "must be lowercase": "name-case",
    "cannot start or end with a hyphen": "name-hyphen-edge",
    "consecutive hyphens": "name-double-hyphen",
    "contains invalid characters": "name-chars",
    "Directory name": "name-dir-mismatch",
}


def rule_of(message: str) -> str:
    """The phi rule code for one skills-ref validation message."""
    if "character limit" in message:
        for prefix, rule in (("Skill name", "name-length"), ("Description", "description-length"),
                             ("Compatibility", "compatibility-length")):
            if message.startswith(prefix):
                return rule
    for fragment, rule in RULE_OF_MESSAGE.items():
        if rule is not None and fragment in message:
            return rule
    raise AssertionError(f"no phi rule for the skills-ref message {message!r}")


def properties(skill: Skill) -> dict[str, Any]:
    """``skill`` in the shape of skills-ref's ``SkillProperties.to_dict()`` (allowed-tools re-joined)."""
    out: dict[str, Any] = {"name": skill.name, "description": skill.description}
    if skill.license is not None:
        out["license"] = skill.license
    if skill.compatibility is not None:
        out["compatibility"] = skill.compatibility
    if skill.allowed_tools:
        out["allowed-tools"] = " ".join(skill.allowed_tools)
    if skill.metadata:
        out["metadata"] = skill.metadata
    return out


# -- random skills for the differential comparison with skills-ref ----------------------------------

_WORD_CHARS = "abcdefghijklmnopqrstuvwxyzABCXYZ0123456789éüßçÅ中文🙂—"
_PUNCT = ".,;()'\"<>&/!?-_*`[]{}%@#:"
_PLAIN_START = re.compile(r"^[A-Za-z0-9\u00c0-\uffff(]")
_NAME_PARTS = ["pdf", "data", "x", "café", "ﬁle", "Ａb", "ÅNGSTRÖM", "a_b", "", "1", "ß"]


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_WORD_CHARS) for _ in range(rng.randint(1, 8)))


def random_text(rng: random.Random, max_words: int = 20) -> str:
    """Prose with punctuation, quotes, angle brackets, ': ' and ' #' now and then."""
    words = []
    for _ in range(rng.randint(1, max_words)):
        word = _word(rng)
        if rng.random() < 0.3:
            word += rng.choice(_PUNCT)
        if rng.random() < 0.1:
            word = rng.choice(_PUNCT) + word
        words.append(word)
    return " ".join(words)


def random_name(rng: random.Random) -> str:
    kind = rng.random()
    if kind < 0.5:
        return "-".join(rng.choice(["pdf", "data", "review", "x1", "café"]) for _ in range(rng.randint(1, 3)))
    if kind < 0.6:
        return "a" * rng.randint(60, 70)
    parts = [rng.choice(_NAME_PARTS) for _ in range(rng.randint(1, 3))]
    return rng.choice(["-", "--", "_"]).join(parts).strip() or "n"


def _plain_ok(value: str) -> bool:
    return (bool(_PLAIN_START.match(value)) and value == value.strip() and "\n" not in value
            and ": " not in value and " #" not in value and not value.endswith(":")
            and value.lower() not in ("null", "~", "true", "false", "yes", "no", "on", "off"))


def render_scalar(rng: random.Random, value: str, indent: str = "  ") -> str:
    """``value`` as the text after ``key:``, in a style chosen at random among those that hold it."""
    styles = ["double"]
    if "\n" not in value:
        styles.append("single")
        if _plain_ok(value):
            styles += ["plain", "plain"]
            if " " in value:
                styles.append("folded-plain")
    lines = value.split("\n")
    if value and all(line and line == line.strip() for line in lines):
        styles.append("literal")
        if "\n" not in value:
            styles.append("folded")
    style = rng.choice(styles)
    if style == "double":
        return " " + json.dumps(value, ensure_ascii=False)
    if style == "single":
        return " '" + value.replace("'", "''") + "'"
    if style == "plain":
        return " " + value
    if style == "folded-plain":
        words = value.split(" ")
        cut = rng.randint(1, len(words) - 1)
        return f"\n{indent}{' '.join(words[:cut])}\n{indent}{' '.join(words[cut:])}" if all(words) else " " + value
    if style == "literal":
        return " |-\n" + "\n".join(indent + line for line in lines)
    return " >-\n" + indent + value


def random_skill(rng: random.Random) -> tuple[str, str]:
    """(directory name, SKILL.md text) of a random skill, valid or not in the specification's eyes."""
    name = random_name(rng)
    directory = name if rng.random() < 0.7 else random_name(rng)
    if directory in (".", "..") or "/" in directory:
        directory = "dir"
    description = random_text(rng, 200 if rng.random() < 0.1 else 20)
    if rng.random() < 0.2:
        description += "\n" + random_text(rng)
    if rng.random() < 0.03:
        description = rng.choice(["''", '"  "'])  # empty: both refuse
    fields = [("name", name), ("description", description)]
    if rng.random() < 0.4:
        licenses = ["MIT", "Apache-2.0", "Complete terms in LICENSE.txt", random_text(rng, 5)]
        fields.append(("license", rng.choice(licenses)))
    if rng.random() < 0.3:
        compatibility = "c" * rng.choice([10, 500, 501]) if rng.random() < 0.3 else random_text(rng, 8)
        fields.append(("compatibility", compatibility))
    if rng.random() < 0.3:
        tools = ["Bash(git:*) Bash(jq:*) Read", "Read, Write", "Bash(git add:*) Read"]
        fields.append(("allowed-tools", rng.choice(tools)))
    if rng.random() < 0.2:
        fields.append(("user-invocable", rng.choice(["false", "'yes'"])))
    lines = ["---"]
    for key, value in fields:
        if value in ("''", '"  "'):
            lines.append(f"{key}: {value}")
            continue
        lines.append(f"{key}:{render_scalar(rng, value)}")
    if rng.random() < 0.03:
        lines.append(rng.choice(['broken: "unterminated', "broken: [a, b", "  bad-indent: x", "- item"]))
    if rng.random() < 0.4:
        lines.append("metadata:")
        for i in range(rng.randint(1, 3)):
            token = rng.choice(["1.0", "1.10", "true", "007", "0x1F", "2024-01-01", "vercel", None])
            value = token if token is not None else random_text(rng, 4)
            rendered = f" {token}" if token is not None else render_scalar(rng, value, "    ")
            lines.append(f"  key-{i}:{rendered}")
    # skills-ref cuts the frontmatter at the first "---" anywhere (see test_skills_ref_differential.py)
    frontmatter = "\n".join(lines[1:])
    while "---" in frontmatter:
        frontmatter = frontmatter.replace("---", "--")
    return directory, f"---\n{frontmatter}\n---\n\n# Body --- with dashes\n\n{random_text(rng)}\n"


def write_skill(root: Path, directory: str, text: str) -> Path:
    skill_dir = root / directory
    skill_dir.mkdir(parents=True, exist_ok=True)
    (skill_dir / "SKILL.md").write_text(text, encoding="utf-8")
    return skill_dir


def compare_with_skills_ref(skill_dir: Path) -> list[str]:
    """How phi and skills-ref disagree on one skill directory (empty: they agree)."""
    from skills_ref.errors import SkillError as RefError
    from skills_ref.parser import read_properties
    from skills_ref.prompt import to_prompt
    from skills_ref.validator import validate

    from phi.skills import SkillError, SkillSet
    from phi.skills.rules import check_skill
    from phi.skills.skill import split_tool_list

    try:
        theirs = read_properties(skill_dir).to_dict()
    except RefError as exc:
        theirs = exc
    try:
        ours = Skill.from_file(skill_dir / "SKILL.md")
    except SkillError as exc:
        return [] if isinstance(theirs, Exception) else [f"phi refused ({exc}); skills-ref read {theirs}"]
    if isinstance(theirs, Exception):
        return [f"skills-ref refused ({theirs}); phi read {properties(ours)}"]
    problems = []
    mine = properties(ours)
    if "allowed-tools" in theirs:
        theirs["allowed-tools"] = " ".join(split_tool_list(theirs["allowed-tools"]))
    if mine != theirs:
        problems.append(f"properties differ: phi {mine} skills-ref {theirs}")
    their_rules = sorted(rule_of(m) for m in validate(skill_dir))
    our_rules = sorted(w.rule for w in check_skill(ours))
    if their_rules != our_rules:
        problems.append(f"rules differ: phi {our_rules} skills-ref {their_rules}")
    if SkillSet([ours]).format_for_prompt() != to_prompt([skill_dir]):
        problems.append("catalogs differ")
    return problems
