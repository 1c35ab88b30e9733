"""docs/cli.md's table of slash commands is the dispatcher's: every command of
:data:`phi.cli.commands.COMMANDS` has a row, and every row a command."""

from __future__ import annotations

import re

from phi.cli.commands import COMMANDS, WHILE_RUNNING
from phi.cli.options import parser

from cli.terminal_helpers import REPO


def test_the_docs_table_lists_exactly_the_commands():
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(/[a-z]+)[^`]*` \|", text, re.M)
    assert sorted(set(rows)) == sorted(COMMANDS)
    assert len(rows) == len(set(rows))
    assert set(WHILE_RUNNING) <= set(COMMANDS)


def test_the_docs_options_table_lists_every_flag():
    text = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    flags = {option for action in parser()._actions for option in action.option_strings if option.startswith("--")}
    missing = sorted(flag for flag in flags - {"--help"} if f"`{flag}" not in text)
    assert missing == []
