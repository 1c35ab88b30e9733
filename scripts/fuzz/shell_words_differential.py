#!/usr/bin/env python3
"""The permission rules' command reader against bash, at full size (issue 34 item 4; the test suite
runs a slice: tests/coding/test_permissions.py::test_what_bash_runs_is_what_the_parser_saw).

Random lines are built from shell pieces (operators, quotes of every kind, escapes, line
continuations, comments, here-documents, reserved words, redirections; tests/coding/shell_differential.py).
For each line :func:`phi.coding.shell_words.parse_command` calls plain — no substitution, no file
written, read to the end: what a prefix rule may allow — bash runs it with stub programs that record
their argv. Every command bash ran must be one the parser listed: else a prefix rule could allow a
command it never saw.

Prints the counts; the last line is one JSON object. Exits 1 on any mismatch.

Usage: .venv/bin/python scripts/fuzz/shell_words_differential.py [--lines N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from coding.shell_differential import Bash, random_line, seen_by_parser  # noqa: E402

from phi.coding.shell_words import parse_command  # noqa: E402


def main() -> int:
    cli = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    cli.add_argument("--lines", type=int, default=20_000)
    cli.add_argument("--seed", type=int, default=34)
    args = cli.parse_args()
    bash = shutil.which("bash")
    if bash is None:
        print("no bash here", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="phi-shell-words-"))
    runner = Bash(bash, work)
    generator = random.Random(args.seed)
    counts = {"lines": 0, "plain": 0, "ran_commands": 0, "timeouts": 0, "mismatches": 0}
    try:
        for _ in range(args.lines):
            line = random_line(generator)
            counts["lines"] += 1
            parsed = parse_command(line)
            if not parsed.plain:
                continue
            counts["plain"] += 1
            try:
                ran = runner.run(line)
            except subprocess.TimeoutExpired:
                counts["timeouts"] += 1
                continue
            counts["ran_commands"] += len(ran)
            seen = [command.words for command in parsed.commands]
            if not all(any(seen_by_parser(words, parsed_words) for parsed_words in seen) for words in ran):
                counts["mismatches"] += 1
                print(f"mismatch: {line!r}: bash ran {ran}, the parser saw {seen}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{counts['lines']} lines, {counts['plain']} plain, bash ran {counts['ran_commands']} commands in them, "
          f"{counts['mismatches']} mismatches, {counts['timeouts']} timeouts")
    print(json.dumps({"seed": args.seed, **counts}))
    return 1 if counts["mismatches"] else 0


if __name__ == "__main__":
    sys.exit(main())
