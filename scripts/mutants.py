#!/usr/bin/env python3
"""Plant a violation of every behavioural sentence of SPEC §3-8 and §13; see what catches it.

Each mutant in :mod:`mutant_table` is a small textual change to phi's code that breaks one statement
of SPEC.md, named by the requirement it breaks (``LOOP-8a``, ``LOOP-8b``, ...). For each, the script
copies the ``phi`` package to a temporary directory, applies the change and judges the copy:

- loop mutants (§3-8, §13.1, §13.3) by the conformance suite, run with the reference driver and
  that copy first on ``PYTHONPATH``; fixtures that cite the requirement run first, and the first
  fixture that fails (confirmed by running it again alone) kills the mutant;
- session mutants (§13.2, ``SESS-*``) by ``pytest tests/session``, which is where SPEC says those
  rules are tested.

It prints a line per mutant, a table per SPEC section (planted / killed), the survivors with the
reason each is not a gap, and — last — one line of JSON with the totals. A full run also writes
``phi/conformance/suite/mutants.json`` (requirement → mutants → the fixture that killed each), from
which ``python -m phi.conformance coverage --write`` adds a column to COVERAGE.md.

    .venv/bin/python scripts/mutants.py                  # every mutant, writes suite/mutants.json
    .venv/bin/python scripts/mutants.py --only LOOP-8    # the mutants of one requirement (or one key)
    .venv/bin/python scripts/mutants.py --check          # only check that every mutant still applies

A survivor is either a gap in the suite (write the fixture that kills it) or a behaviour the
protocol cannot observe; ``OPEN`` in :mod:`mutant_table` explains each of the latter.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mutant_table import MUTANTS, OPEN, SECTIONS, Mutant  # noqa: E402

from phi.conformance.runner import REFERENCE_DRIVER, Outcome, load_fixtures, run_one  # noqa: E402

SUITE = ROOT / "phi" / "conformance" / "suite"
TABLE_FILE = SUITE / "mutants.json"
FIXTURE_TIMEOUT_MS = 15_000


@dataclass
class Verdict:
    mutant: Mutant
    killed: bool
    killed_by: list[str] = field(default_factory=list)
    seconds: float = 0.0


# --------------------------------------------------------------------------- planting


def plant(mutant: Mutant, package: Path) -> None:
    """Apply every edit of ``mutant`` to the copy of phi in ``package``."""
    path = package / mutant.file
    text = path.read_text(encoding="utf-8")
    for old, new in mutant.edits:
        count = text.count(old)
        if count != 1:
            raise SystemExit(f"{mutant.key}: its target occurs {count} times in phi/{mutant.file}; "
                             f"update the mutant to the current code:\n{old}")
        text = text.replace(old, new)
    path.write_text(text, encoding="utf-8")


def mutated_copy(mutant: Mutant, into: Path) -> Path:
    package = into / "phi"
    shutil.copytree(ROOT / "phi", package, ignore=shutil.ignore_patterns("__pycache__"))
    plant(mutant, package)
    return package


# --------------------------------------------------------------------------- judging


class InDirectory:
    """Run drivers with ``parent`` first on PYTHONPATH and as the working directory, so that
    ``python -m phi.conformance.driver`` imports the mutated copy."""

    def __init__(self, parent: str | None) -> None:
        self.parent = parent
        self.saved: tuple[str | None, str] = (None, "")

    def __enter__(self) -> None:
        self.saved = (os.environ.get("PYTHONPATH"), os.getcwd())
        if self.parent is not None:
            old = self.saved[0]
            os.environ["PYTHONPATH"] = self.parent + (os.pathsep + old if old else "")
            os.chdir(self.parent)

    def __exit__(self, *exc: object) -> None:
        old_path, old_cwd = self.saved
        os.chdir(old_cwd)
        if old_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_path


def failed(outcome: Outcome) -> bool:
    return outcome.status in ("fail", "timeout")


def first_failures(fixtures: list[dict[str, Any]], jobs: int, stop_early: bool) -> tuple[list[str], int]:
    """Run ``fixtures`` in order, ``jobs`` at a time: the ids of those that fail, and how many ran.
    With ``stop_early``, no new fixture starts once one has failed."""
    found: list[str] = []
    queue = iter(fixtures)
    started = 0
    running: dict[Future[Outcome], str] = {}
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        def refill() -> None:
            nonlocal started
            while len(running) < jobs and not (stop_early and found):
                fixture = next(queue, None)
                if fixture is None:
                    return
                running[pool.submit(run_one, REFERENCE_DRIVER, fixture, FIXTURE_TIMEOUT_MS)] = fixture["id"]
                started += 1

        refill()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                fixture_id = running.pop(future)
                if failed(future.result()):
                    found.append(fixture_id)
            refill()
    return found, started


def ordered_for(mutant: Mutant, fixtures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The fixtures that cite the mutant's requirement first (they should be the ones to kill it)."""
    cites = [f for f in fixtures if mutant.requirement in f.get("spec", [])]
    return cites + [f for f in fixtures if mutant.requirement not in f.get("spec", [])]


def judge_by_suite(mutant: Mutant, tmp: str, fixtures: list[dict[str, Any]], jobs: int,
                   full: bool) -> list[str]:
    """The fixtures that kill the mutant. A fixture counts only if it fails again when run alone (a
    slow machine cannot kill a mutant); when none of the first failures is confirmed, the fixtures
    not run yet are tried too."""
    remaining = ordered_for(mutant, fixtures)
    by_id = {f["id"]: f for f in fixtures}
    with InDirectory(tmp):
        while remaining:
            suspects, ran = first_failures(remaining, jobs, stop_early=not full)
            confirmed = [fid for fid in suspects[:8]
                         if failed(run_one(REFERENCE_DRIVER, by_id[fid], FIXTURE_TIMEOUT_MS))]
            if confirmed:
                return confirmed
            remaining = remaining[ran:]
    return []


def judge_by_session_tests(tmp: str) -> list[str]:
    """SESS rules are unit-tested (SPEC §13.2): the mutant is killed when ``tests/session`` fails."""
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:randomly", "-p", "no:cacheprovider",
               "--timeout", "60", str(ROOT / "tests" / "session")]
    env = dict(os.environ, PYTHONPATH=tmp)
    proc = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True, timeout=900, check=False)
    if proc.returncode == 0:
        return []
    failing = [line.split(" ")[1] for line in proc.stdout.splitlines() if line.startswith("FAILED ")]
    return [name.split("/tests/", 1)[-1] for name in failing] or [f"tests/session (exit {proc.returncode})"]


def judge(mutant: Mutant, fixtures: list[dict[str, Any]], jobs: int, full: bool) -> Verdict:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"phi-{mutant.key}-") as tmp:
        mutated_copy(mutant, Path(tmp))
        if mutant.judge == "session-tests":
            killers = judge_by_session_tests(tmp)
        else:
            killers = judge_by_suite(mutant, tmp, fixtures, jobs, full)
    return Verdict(mutant, bool(killers), killers, time.monotonic() - started)


# --------------------------------------------------------------------------- reporting


def section_rows(verdicts: list[Verdict]) -> Iterator[tuple[str, int, int]]:
    for section, title in SECTIONS.items():
        mine = [v for v in verdicts if v.mutant.section == section]
        if mine:
            yield f"§{section} {title}", len(mine), sum(v.killed for v in mine)


def report(verdicts: list[Verdict], fixtures: int) -> dict[str, Any]:
    print("\nper SPEC section        planted  killed")
    for name, planted, killed in section_rows(verdicts):
        print(f"  {name:<22} {planted:>6} {killed:>7}")
    planted, killed = len(verdicts), sum(v.killed for v in verdicts)
    rate = killed / planted if planted else 0.0
    survivors = [v.mutant.key for v in verdicts if not v.killed]
    print(f"  {'total':<22} {planted:>6} {killed:>7}   ({rate:.1%} killed)")
    if survivors:
        print("\nsurvivors:")
        for key in survivors:
            print(f"  {key}: {OPEN.get(key, 'NOT EXPLAINED: a gap in the suite (add a fixture that kills it)')}")
    return {"mutants": planted, "killed": killed, "kill_rate": round(rate, 4), "survivors": survivors,
            "unexplained": [k for k in survivors if k not in OPEN], "fixtures": fixtures}


def write_table(verdicts: list[Verdict], totals: dict[str, Any]) -> None:
    """suite/mutants.json: what COVERAGE.md's mutant column is rendered from (no import of scripts/)."""
    entries = [{"id": v.mutant.key, "requirement": v.mutant.requirement, "section": v.mutant.section,
                "breaks": v.mutant.what, "judge": v.mutant.judge, "killed": v.killed,
                "killed_by": v.killed_by, **({"survives_because": OPEN[v.mutant.key]} if v.mutant.key in OPEN
                                             and not v.killed else {})}
               for v in verdicts]
    data = {"generated_by": "scripts/mutants.py", "totals": totals, "mutants": entries}
    TABLE_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {TABLE_FILE.relative_to(ROOT)}")


# --------------------------------------------------------------------------- main


def selected(only: str | None) -> list[Mutant]:
    if only is None:
        return list(MUTANTS)
    return [m for m in MUTANTS if only in (m.key, m.requirement) or m.key.startswith(only + "-")]


def undefined_names(path: Path) -> str:
    """What ruff reports as undefined names (F821) in ``path`` ("" when ruff is not installed)."""
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        return ""
    proc = subprocess.run([ruff, "check", "--select", "F821", "--no-cache", "--output-format", "concise", str(path)],
                          capture_output=True, text=True, check=False)
    return "" if proc.returncode == 0 else proc.stdout.strip()


def check_all() -> int:
    with tempfile.TemporaryDirectory(prefix="phi-mutants-check-") as tmp:
        for mutant in MUTANTS:
            package = Path(tmp) / mutant.key
            package.mkdir()
            target = package / mutant.file
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(ROOT / "phi" / mutant.file, target)
            plant(mutant, package)
            try:  # a mutant that does not compile would be "killed" by any fixture: not a test of the suite
                compile(target.read_text(encoding="utf-8"), str(target), "exec")
            except SyntaxError as error:
                raise SystemExit(f"{mutant.key}: the mutated phi/{mutant.file} does not compile: {error}") from None
            undefined = undefined_names(target)
            if undefined:
                raise SystemExit(f"{mutant.key}: the mutated phi/{mutant.file} uses undefined names: {undefined}")
    keys = [m.key for m in MUTANTS]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise SystemExit(f"duplicate mutant keys: {duplicates}")
    print(f"all {len(MUTANTS)} mutants apply and compile")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", help="one mutant key (LOOP-8a), a requirement (LOOP-8) or a prefix (LOOP)")
    parser.add_argument("--jobs", type=int, default=2, help="drivers run at once (default 2)")
    parser.add_argument("--full", action="store_true", help="run every fixture against every mutant")
    parser.add_argument("--check", action="store_true", help="only check that every mutant applies")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    args = parser.parse_args()
    if args.check:
        return check_all()
    fixtures = load_fixtures(SUITE / "fixtures")
    mutants = selected(args.only)
    if not mutants:
        raise SystemExit(f"no mutant matches {args.only!r}")
    if not args.no_baseline:
        with InDirectory(None):
            baseline, _ = first_failures(fixtures, args.jobs, stop_early=False)
        if baseline:
            raise SystemExit(f"the unmutated suite fails ({', '.join(baseline)}): fix that first")
    verdicts = []
    for mutant in mutants:
        verdict = judge(mutant, fixtures, args.jobs, args.full)
        verdicts.append(verdict)
        status = "killed  " if verdict.killed else ("open    " if mutant.key in OPEN else "SURVIVED")
        shown = ", ".join(verdict.killed_by[:3])
        print(f"{mutant.key:<11} {status} {mutant.what}  [{verdict.seconds:.0f}s] {shown}", flush=True)
    totals = report(verdicts, len(fixtures))
    if args.only is None:
        write_table(verdicts, totals)
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
