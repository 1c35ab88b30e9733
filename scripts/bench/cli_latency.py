#!/usr/bin/env python3
"""The ``phi`` command as a person feels it (issues 15, 26): ``phi --help`` and, in a pseudo-terminal
with the offline model, how long from starting the process to the first prompt, from Enter to the
first streamed character, and from Ctrl+C during a streaming reply to the prompt being back. The
same machine's bare Python is measured in the same run (``python -c pass``; a pty prompt from
``input()`` with readline), so that the figures over bare Python mean something on a busy machine.

The prompt is also timed with ``-c`` (a stored session to continue) and with a trusted
``.mcp.json`` naming one stdio server (issue 35 item 5: both now load behind the prompt), and Enter →
first streamed character of the reply (its thinking, which the offline model sends first) both for
an Enter pressed the moment the prompt appears (it waits for what loads
behind the prompt) and for one pressed a second later, as after typing a short question — outside a
git repository and inside one (where each input's system prompt asks git for the status).

Prints one line per figure (median and worst of N rounds); the last line is one JSON object with all
figures. Benchmarks report, they never judge.

Usage: python3 scripts/bench/cli_latency.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from cli.terminal_helpers import ANSI, PtyPhi  # noqa: E402


#: the offline model's reply begins with its thinking (dimmed, ``thinking: ...``), then its text
FIRST_OF_REPLY = ("thinking:", "Looking")


def first_time(phi: PtyPhi, since: float, start: int, *needles: str) -> float:
    """When (monotonic) the output from byte ``start`` on first contained one of ``needles``."""
    for stamp, size in list(phi.stamps):
        if stamp >= since:
            text = ANSI.sub("", phi.raw[start:size].decode("utf-8", "replace")).replace("\r", "")
            if any(needle in text for needle in needles):
                return stamp
    raise AssertionError(f"none of {needles!r} appeared")


def one_round(workdir: Path) -> dict[str, float]:
    started = time.monotonic()
    phi = PtyPhi(["--offline", "--sessions-dir", str(workdir / "sessions")], workdir, {})
    try:
        phi.prompt()
        ready = first_time(phi, started, 0, "› ")
        start, sent = len(phi.raw), time.monotonic()
        phi.send_line("what is here?")
        phi.expect("Looking around")
        streamed = first_time(phi, sent, start, *FIRST_OF_REPLY)
        phi.expect(r"I am phi's")
        start, interrupted = len(phi.raw), time.monotonic()
        phi.ctrl_c()
        phi.expect(r"aborted — the conversation is kept.*› $")
        back = first_time(phi, interrupted, start, "› ")
        return {"start_to_prompt_ms": (ready - started) * 1000, "enter_to_first_text_ms": (streamed - sent) * 1000,
                "ctrl_c_to_prompt_ms": (back - interrupted) * 1000}
    finally:
        phi.close()


def prompt_ms(workdir: Path, home: Path, *args: str) -> float:
    """Process start to the first prompt, with ``args``."""
    started = time.monotonic()
    phi = PtyPhi(["--offline", *args], workdir, {"PHI_HOME": str(home)})
    try:
        phi.prompt()
        return (first_time(phi, started, 0, "› ") - started) * 1000
    finally:
        phi.close()


def typed_enter_ms(workdir: Path, home: Path, typing_s: float = 1.0) -> float:
    """Enter → first streamed character when Enter comes ``typing_s`` after the prompt (a typed question)."""
    phi = PtyPhi(["--offline"], workdir, {"PHI_HOME": str(home)})
    try:
        phi.prompt()
        time.sleep(typing_s)  # a person typing "what is here?"
        start, sent = len(phi.raw), time.monotonic()
        phi.send_line("what is here?")
        phi.expect("Looking around")
        return (first_time(phi, sent, start, *FIRST_OF_REPLY) - sent) * 1000
    finally:
        phi.close()


def prepare_home(workdir: Path) -> tuple[Path, Path]:
    """A PHI_HOME with one stored session started in ``workdir``, and a project directory whose
    trusted ``.mcp.json`` names one stdio server (the test suite's), and a git repository with a
    commit (inside one, every input's system prompt asks git, sandboxed, for the branch and status)."""
    import json
    import subprocess

    home = workdir / "home"
    env = {**__import__("os").environ, "PYTHONPATH": str(ROOT), "PHI_HOME": str(home)}
    subprocess.run([sys.executable, "-m", "phi.cli", "--offline", "-p", "what is here?"], cwd=workdir, env=env,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    project = workdir / "with-mcp"
    project.mkdir(exist_ok=True)
    server = ROOT / "tests" / "mcp" / "fake_server.py"
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"fake": {"command": sys.executable,
                                                                          "args": [str(server), "serve"]}}}))
    subprocess.run([sys.executable, "-m", "phi.cli", "trust", str(project)], env=env, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, check=True)
    repository = workdir / "repository"
    repository.mkdir(exist_ok=True)
    (repository / "notes.txt").write_text("a file to list\n")
    committer = {**env, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
                 "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for command in (["git", "init", "-q"], ["git", "add", "."], ["git", "commit", "-qm", "first"]):
        subprocess.run(command, cwd=repository, env=committer, check=True, stdout=subprocess.DEVNULL)
    return home, project, repository


def bare_prompt_ms(workdir: Path) -> float:
    """Bare Python to a readline prompt in a pty: the floor under start_to_prompt."""
    import os
    import pty
    import subprocess

    master, slave = pty.openpty()
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-c", "import readline; input('› ')"], stdin=slave, stdout=slave,
                            stderr=slave, cwd=workdir, close_fds=True)
    os.close(slave)
    seen = b""
    try:
        while "› ".encode() not in seen:
            seen += os.read(master, 1024)
        return (time.monotonic() - started) * 1000
    finally:
        os.write(master, b"\r")
        proc.wait(10)
        os.close(master)


def command_ms(argv: list[str]) -> float:
    import subprocess

    started = time.monotonic()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True,
                   env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    return (time.monotonic() - started) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rounds = []
    with tempfile.TemporaryDirectory() as scratch:
        home, project, repository = prepare_home(Path(scratch))
        for _ in range(args.rounds):
            figures_of_round = one_round(Path(scratch))
            figures_of_round["bare_python_prompt_ms"] = bare_prompt_ms(Path(scratch))
            figures_of_round["typed_enter_to_first_text_ms"] = typed_enter_ms(Path(scratch), home)
            figures_of_round["in_git_enter_to_first_text_ms"] = typed_enter_ms(repository, home, 0.0)
            figures_of_round["in_git_typed_enter_to_first_text_ms"] = typed_enter_ms(repository, home)
            figures_of_round["continue_prompt_over_bare_ms"] = (prompt_ms(Path(scratch), home, "-c")
                                                                - figures_of_round["bare_python_prompt_ms"])
            figures_of_round["mcp_prompt_over_bare_ms"] = (prompt_ms(project, home)
                                                           - figures_of_round["bare_python_prompt_ms"])
            figures_of_round["help_ms"] = command_ms([sys.executable, "-m", "phi.cli", "--help"])
            figures_of_round["bare_python_ms"] = command_ms([sys.executable, "-c", "pass"])
            figures_of_round["prompt_over_bare_ms"] = (figures_of_round["start_to_prompt_ms"]
                                                       - figures_of_round["bare_python_prompt_ms"])
            figures_of_round["help_over_bare_ms"] = figures_of_round["help_ms"] - figures_of_round["bare_python_ms"]
            rounds.append(figures_of_round)
    figures: dict[str, float] = {"rounds": args.rounds}
    for name in rounds[0]:
        values = [r[name] for r in rounds]
        figures[f"{name}_median"] = round(statistics.median(values), 1)
        figures[f"{name}_max"] = round(max(values), 1)
        print(f"{name}: median {figures[f'{name}_median']} ms, max {figures[f'{name}_max']} ms")
    print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
