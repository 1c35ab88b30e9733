#!/usr/bin/env python3
"""The ``phi`` command as a person feels it (issues 15, 26): ``phi --help`` and, in a pseudo-terminal
with the offline model, how long from starting the process to the first prompt, from Enter to the
first streamed character, and from Ctrl+C during a streaming reply to the prompt being back. The
same machine's bare Python is measured in the same run (``python -c pass``; a pty prompt from
``input()`` with readline), so that the figures over bare Python mean something on a busy machine.

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


def first_time(phi: PtyPhi, since: float, start: int, needle: str) -> float:
    """When (monotonic) the output from byte ``start`` on first contained ``needle``."""
    for stamp, size in list(phi.stamps):
        if stamp >= since:
            text = ANSI.sub("", phi.raw[start:size].decode("utf-8", "replace")).replace("\r", "")
            if needle in text:
                return stamp
    raise AssertionError(f"{needle!r} never appeared")


def one_round(workdir: Path) -> dict[str, float]:
    started = time.monotonic()
    phi = PtyPhi(["--offline", "--sessions-dir", str(workdir / "sessions")], workdir, {})
    try:
        phi.prompt()
        ready = first_time(phi, started, 0, "› ")
        start, sent = len(phi.raw), time.monotonic()
        phi.send_line("what is here?")
        phi.expect("Looking around")
        streamed = first_time(phi, sent, start, "Looking")
        phi.expect(r"I am phi's")
        start, interrupted = len(phi.raw), time.monotonic()
        phi.ctrl_c()
        phi.expect(r"aborted — the conversation is kept.*› $")
        back = first_time(phi, interrupted, start, "› ")
        return {"start_to_prompt_ms": (ready - started) * 1000, "enter_to_first_text_ms": (streamed - sent) * 1000,
                "ctrl_c_to_prompt_ms": (back - interrupted) * 1000}
    finally:
        phi.close()


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
        for _ in range(args.rounds):
            figures_of_round = one_round(Path(scratch))
            figures_of_round["bare_python_prompt_ms"] = bare_prompt_ms(Path(scratch))
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
