#!/usr/bin/env python3
"""phi.skills against the reference library skills-ref on many random skills (the test suite runs
300 of them: tests/skills/test_skills_ref_differential.py).

Each random skill (tests/skills/reference.py: names valid and not, descriptions with quotes, angle
brackets, colons, unicode and newlines, written plain, folded, quoted, as literal or folded blocks;
optional fields, metadata with numbers and booleans, unknown keys) is written to a temporary
directory and read by both: the same properties or both refusing, the same rule breaks, the same
catalog. Needs the test extra (skills-ref, Python 3.11+).

Prints the counts; the last line is one JSON object. Exits 1 on any disagreement.

Usage: .venv/bin/python scripts/fuzz/skills_differential.py [--cases N] [--seed S]
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from skills.reference import compare_with_skills_ref, random_skill, write_skill  # noqa: E402

from phi.skills import Skill, SkillError  # noqa: E402
from phi.skills.rules import check_skill  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    outcomes: collections.Counter[str] = collections.Counter()
    rules: collections.Counter[str] = collections.Counter()
    failures = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.cases):
            directory, text = random_skill(rng)
            skill_dir = write_skill(Path(tmp) / str(i), directory, text)
            problems = compare_with_skills_ref(skill_dir)
            try:
                rules.update(w.rule for w in check_skill(Skill.from_file(skill_dir / "SKILL.md")))
                outcomes["loaded"] += 1
            except SkillError as exc:
                outcomes[type(exc).__name__] += 1
            if problems:
                failures.append((text, problems))
    seconds = time.perf_counter() - start
    for text, problems in failures[:5]:
        print(f"--- disagreement ---\n{text}\n" + "\n".join(problems))
    print(f"seed {args.seed}: {args.cases} skills, {len(failures)} disagreements, {seconds:.1f} s")
    print("outcomes:", dict(outcomes))
    print("rule breaks seen:", dict(sorted(rules.items())))
    print(json.dumps({"cases": args.cases, "seed": args.seed, "disagreements": len(failures),
                      "outcomes": dict(outcomes), "rules": dict(sorted(rules.items())), "seconds": round(seconds, 2)}))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
