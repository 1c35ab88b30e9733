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
which ``python -m phi.conformance coverage --write`` adds a column to COVERAGE.md. A mutant whose
target text no longer occurs exactly once "does not apply": it is reported, counted apart and left
out of the kill rate, and the run goes on.

Blind sets (``--set``): mutants planted by someone who did not write the fixtures, stored as
``phi/conformance/suite/blind/set-N.json`` (see the README.md there). Each is judged by the suite
exactly as a table mutant is, and the measurement is appended to the set file's ``measurements``
(never overwriting one: the first entry is the blind score).

    .venv/bin/python scripts/mutants.py                  # every mutant, writes suite/mutants.json
    .venv/bin/python scripts/mutants.py --only LOOP-8    # the mutants of one requirement (or one key)
    .venv/bin/python scripts/mutants.py --check          # only check that every mutant still applies
    .venv/bin/python scripts/mutants.py --set 'phi/conformance/suite/blind/*.json'   # measure blind sets

A survivor is either a gap in the suite (write the fixture that kills it) or a behaviour the
protocol cannot observe; ``OPEN`` in :mod:`mutant_table` explains each of the latter.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import datetime
import glob
import json
import keyword
import os
import re
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from mutant_table import MUTANTS, OPEN, SECTIONS, Mutant  # noqa: E402

from phi.conformance.runner import REFERENCE_DRIVER, Outcome, load_fixtures, run_one  # noqa: E402

SUITE = ROOT / "phi" / "conformance" / "suite"
TABLE_FILE = SUITE / "mutants.json"
BLIND_DIR = SUITE / "blind"
FIXTURE_TIMEOUT_MS = 15_000


@dataclass
class Verdict:
    mutant: Mutant
    killed: bool
    killed_by: list[str] = field(default_factory=list)
    seconds: float = 0.0
    problem: str = ""  # why the mutant does not apply ("" when it was planted and judged)

    @property
    def applied(self) -> bool:
        return not self.problem


# --------------------------------------------------------------------------- planting


class DoesNotApply(Exception):
    """A mutant that cannot be planted in the current code: a target that does not occur exactly
    once, a file that is not there, or a change that makes nothing, does not compile or uses names
    that are not defined (any fixture would "kill" such a mutant: it tests nothing). The message
    has one line per problem."""


def first_line(text: str) -> str:
    """The first line of an edit's target that is not blank (what a reader searches the code for)."""
    return next((line.rstrip() for line in text.splitlines() if line.strip()), text)


class Sources:
    """phi's files as they are, each read and parsed once (``--check`` plants hundreds of mutants)."""

    def __init__(self, package: Path = ROOT / "phi") -> None:
        self.package = package
        self._texts: dict[str, str | None] = {}
        self._loaded: dict[str, set[str]] = {}
        self._words: dict[str, set[str]] = {}

    def text(self, file: str) -> str | None:
        if file not in self._texts:
            path = self.package / file
            self._texts[file] = path.read_text(encoding="utf-8") if path.is_file() else None
        return self._texts[file]

    def words(self, file: str) -> set[str]:
        if file not in self._words:
            self._words[file] = set(_WORD.findall(self.text(file) or "")) | _KNOWN
        return self._words[file]

    def loaded_names(self, file: str) -> set[str]:
        if file not in self._loaded:
            text = self.text(file)
            self._loaded[file] = _loaded_names(ast.parse(text)) if text is not None and file.endswith(".py") else set()
        return self._loaded[file]


def mutated_source(mutant: Mutant, sources: Sources) -> str:
    """The text of ``mutant.file`` with every edit applied (each later edit is checked against the
    text the earlier ones made); DoesNotApply names every reason it cannot be planted."""
    text = sources.text(mutant.file)
    where = f"phi/{mutant.file}"
    if text is None:
        raise DoesNotApply(f"{mutant.key}: {where} does not exist")
    original, misses = text, []
    for old, new in mutant.edits:
        count = text.count(old) if old else 0
        if count != 1:
            misses.append(f"{mutant.key}: {where}: its target occurs {count} times (must be once): {first_line(old)!r}")
            continue
        text = text.replace(old, new)
    if misses:
        raise DoesNotApply("\n".join(misses))
    if text == original:
        raise DoesNotApply(f"{mutant.key}: {where}: the edits change nothing")
    if mutant.file.endswith(".py"):
        try:  # a mutant that does not compile would be "killed" by any fixture: not a test of the suite
            compile(text, where, "exec", dont_inherit=True)
        except SyntaxError as error:
            raise DoesNotApply(f"{mutant.key}: the mutated {where} does not compile: {error}") from None
        # nor would one that reads a name nothing defines; parsed only when an edit brings a word the
        # file did not have (most reuse the file's names), so --check stays fast
        if any(_WORD.findall(new) and not set(_WORD.findall(new)) <= sources.words(mutant.file)
               for _, new in mutant.edits):
            undefined = undefined_names(sources.loaded_names(mutant.file), ast.parse(text, where))
            if undefined:
                raise DoesNotApply(f"{mutant.key}: the mutated {where} uses undefined names: {', '.join(undefined)}")
    return text


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KNOWN = set(keyword.kwlist) | set(dir(builtins))


def _loaded_names(tree: ast.AST) -> set[str]:
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}


def _bound_names(tree: ast.AST) -> set[str]:
    """Every name the module binds in any scope (an over-approximation: enough to tell a name the
    mutant introduced without defining or importing it)."""
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            bound.update(node.names)
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound.add(node.rest)
    return bound


def undefined_names(before: set[str], tree: ast.AST) -> list[str]:
    """Names the mutated module reads that the original did not, and that nothing defines."""
    new = _loaded_names(tree) - before
    if not new:
        return []
    bound = _bound_names(tree)
    return sorted(name for name in new if name not in bound and not hasattr(builtins, name))


def plant(mutant: Mutant, package: Path) -> None:
    """Apply every edit of ``mutant`` to the copy of phi in ``package`` (DoesNotApply if it cannot)."""
    text = mutated_source(mutant, Sources(package))
    (package / mutant.file).write_text(text, encoding="utf-8")


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
    """Plant ``mutant`` in a copy of phi and judge the copy; a mutant that does not apply is
    reported as such (``Verdict.problem``), not judged."""
    started = time.monotonic()
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in mutant.key)  # blind ids hold a "/"
    with tempfile.TemporaryDirectory(prefix=f"phi-{safe}-") as tmp:
        try:
            mutated_copy(mutant, Path(tmp))
        except DoesNotApply as stale:
            return Verdict(mutant, False, problem=str(stale))
        if mutant.judge == "session-tests":
            killers = judge_by_session_tests(tmp)
        else:
            killers = judge_by_suite(mutant, tmp, fixtures, jobs, full)
    return Verdict(mutant, bool(killers), killers, time.monotonic() - started)


# --------------------------------------------------------------------------- reporting


def status_of(verdict: Verdict) -> str:
    if not verdict.applied:
        return "n/a     "
    if verdict.killed:
        return "killed  "
    return "open    " if verdict.mutant.key in OPEN else "SURVIVED"


def show(verdict: Verdict) -> None:
    """The line of one mutant, printed as soon as it is judged."""
    if not verdict.applied:
        print(f"{verdict.mutant.key:<11} {status_of(verdict)} does not apply: "
              + verdict.problem.replace("\n", "; "), flush=True)
        return
    shown = ", ".join(verdict.killed_by[:3])
    print(f"{verdict.mutant.key:<11} {status_of(verdict)} {verdict.mutant.what}  [{verdict.seconds:.0f}s] {shown}",
          flush=True)


def section_rows(verdicts: list[Verdict]) -> Iterator[tuple[str, int, int]]:
    for section, title in SECTIONS.items():
        mine = [v for v in verdicts if v.mutant.section == section and v.applied]
        if mine:
            yield f"§{section} {title}", len(mine), sum(v.killed for v in mine)


def report_not_applied(verdicts: list[Verdict]) -> list[str]:
    stale = [v for v in verdicts if not v.applied]
    if stale:
        print(f"\ndo not apply ({len(stale)}, not counted; update them to the current code):")
        for verdict in stale:
            for line in verdict.problem.splitlines():
                print(f"  {line}")
    return [v.mutant.key for v in stale]


def report(verdicts: list[Verdict], fixtures: int) -> dict[str, Any]:
    print("\nper SPEC section        planted  killed")
    for name, planted, killed in section_rows(verdicts):
        print(f"  {name:<22} {planted:>6} {killed:>7}")
    applied = [v for v in verdicts if v.applied]
    planted, killed = len(applied), sum(v.killed for v in applied)
    rate = killed / planted if planted else 0.0
    survivors = [v.mutant.key for v in applied if not v.killed]
    print(f"  {'total':<22} {planted:>6} {killed:>7}   ({rate:.1%} killed)")
    if survivors:
        print("\nsurvivors:")
        for key in survivors:
            print(f"  {key}: {OPEN.get(key, 'NOT EXPLAINED: a gap in the suite (add a fixture that kills it)')}")
    not_applied = report_not_applied(verdicts)
    return {"mutants": planted, "killed": killed, "kill_rate": round(rate, 4), "survivors": survivors,
            "unexplained": [k for k in survivors if k not in OPEN], "not_applied": not_applied, "fixtures": fixtures}


def write_table(verdicts: list[Verdict], totals: dict[str, Any]) -> None:
    """suite/mutants.json: what COVERAGE.md's mutant column is rendered from (no import of scripts/).
    A mutant that did not apply is listed with ``"applied": false`` (and no reason it may survive)."""
    entries = []
    for v in verdicts:
        entry = {"id": v.mutant.key, "requirement": v.mutant.requirement, "section": v.mutant.section,
                 "breaks": v.mutant.what, "judge": v.mutant.judge, "killed": v.killed, "killed_by": v.killed_by}
        if not v.applied:
            entry["applied"] = False
        elif v.mutant.key in OPEN and not v.killed:
            entry["survives_because"] = OPEN[v.mutant.key]
        entries.append(entry)
    data = {"generated_by": "scripts/mutants.py", "totals": totals, "mutants": entries}
    TABLE_FILE.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {TABLE_FILE.relative_to(ROOT)}")


# --------------------------------------------------------------------------- blind sets


class SetError(Exception):
    """A blind set file that is not in the shape README.md in suite/blind/ describes."""


@dataclass
class BlindSet:
    path: Path
    name: str
    mutants: list[Mutant]


def set_problems(data: Any) -> list[str]:
    """What is wrong with the shape of a blind set's JSON ([] when nothing is)."""
    if not isinstance(data, dict):
        return ["not a JSON object"]
    problems = []
    if not isinstance(data.get("set"), str) or not data["set"]:
        problems.append('"set": a name is required')
    if "measurements" in data and not isinstance(data["measurements"], list):
        problems.append('"measurements" must be a list (it is appended to, never replaced)')
    mutants = data.get("mutants")
    if not isinstance(mutants, list) or not mutants:
        return problems + ['"mutants": a non-empty list is required']
    seen: set[str] = set()
    for index, entry in enumerate(mutants):
        where = f"mutants[{index}]"
        if not isinstance(entry, dict):
            problems.append(f"{where}: not an object")
            continue
        for key in ("id", "requirement", "file"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                problems.append(f"{where}.{key}: a non-empty string is required")
        if entry.get("id") in seen:
            problems.append(f"{where}.id: {entry['id']!r} is used twice")
        seen.add(str(entry.get("id")))
        edits = entry.get("edits")
        if not isinstance(edits, list) or not edits:
            problems.append(f"{where}.edits: a non-empty list is required")
            continue
        for number, edit in enumerate(edits):
            if not (isinstance(edit, dict) and isinstance(edit.get("old"), str) and edit["old"]
                    and isinstance(edit.get("new"), str)):
                problems.append(f"{where}.edits[{number}]: an object with a non-empty \"old\" and a \"new\" string "
                                "is required")
    return problems


def load_set(path: Path) -> BlindSet:
    """A blind set file as mutants judged like the table's suite mutants (SetError if malformed)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise SetError(f"{path}: {error}") from None
    problems = set_problems(data)
    if problems:
        raise SetError("\n".join(f"{path}: {problem}" for problem in problems))
    mutants = []
    for entry in data["mutants"]:
        file = entry["file"].removeprefix("phi/")  # a path relative to phi/, like the table's
        edits = tuple((edit["old"], edit["new"]) for edit in entry["edits"])
        what = entry.get("breaks") or entry.get("kind") or entry["requirement"]
        mutants.append(Mutant(entry["id"], file, edits, str(what), "suite", cites=entry["requirement"]))
    return BlindSet(path, data["set"], mutants)


def set_paths(patterns: list[str]) -> list[Path]:
    """Files named by ``--set``: paths, globs, or directories (their ``*.json``), each once."""
    found: list[Path] = []
    for pattern in patterns:
        if Path(pattern).is_dir():
            matches = sorted(str(p) for p in Path(pattern).glob("*.json"))
        else:
            matches = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        if not matches:
            raise SystemExit(f"--set {pattern}: no such file")
        for match in matches:
            path = Path(match).resolve()
            if path not in found:
                found.append(path)
    return found


def git_head() -> str:
    proc = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return proc.stdout.strip() if proc.returncode == 0 else "unknown"


def measurement(verdicts: list[Verdict], fixtures: int) -> dict[str, Any]:
    """One measurement of a set: the kill rate counts only the mutants that applied."""
    applied = [v for v in verdicts if v.applied]
    killed = [v for v in applied if v.killed]
    return {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": git_head(), "fixtures": fixtures, "planted": len(verdicts), "applied": len(applied),
            "killed": len(killed), "kill_rate": round(len(killed) / len(applied), 4) if applied else 0.0,
            "survivors": [v.mutant.key for v in applied if not v.killed],
            "not_applied": [v.mutant.key for v in verdicts if not v.applied],
            "killed_by": {v.mutant.key: v.killed_by for v in killed}}


def record(path: Path, entry: dict[str, Any]) -> int:
    """Append ``entry`` to the set file's ``measurements`` (read again now: nothing else is changed,
    and no earlier measurement is ever replaced); how many the file then holds."""
    data = json.loads(path.read_text(encoding="utf-8"))
    measurements = data.setdefault("measurements", [])
    if not isinstance(measurements, list):
        raise SystemExit(f"{path}: \"measurements\" is not a list; not recorded")
    measurements.append(entry)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(temp, path)
    return len(measurements)


def shown_path(path: Path) -> str:
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(path)


def run_sets(paths: list[Path], only: str | None, fixtures: list[dict[str, Any]], jobs: int, full: bool,
             record_it: bool) -> dict[str, Any]:
    try:
        sets = [load_set(path) for path in paths]
    except SetError as error:
        raise SystemExit(str(error)) from None
    if only is not None:
        record_it = False  # a part of a set is not a measurement of it
        print(f"--only {only}: measuring part of the set(s), nothing recorded")
    results = []
    for blind in sets:
        mutants = [m for m in blind.mutants if only is None or only in (m.key, m.requirement)]
        print(f"\n== {blind.name} ({shown_path(blind.path)}): {len(mutants)} mutants", flush=True)
        verdicts = []
        for mutant in mutants:
            verdicts.append(judge(mutant, fixtures, jobs, full))
            show(verdicts[-1])
        entry = measurement(verdicts, len(fixtures))
        print(f"\n{blind.name}: {entry['killed']} of {entry['applied']} applied mutants killed "
              f"({entry['kill_rate']:.1%}); {len(entry['not_applied'])} of {entry['planted']} do not apply")
        if entry["survivors"]:
            print("survivors:")
            for verdict in verdicts:
                if verdict.applied and not verdict.killed:
                    print(f"  {verdict.mutant.key} ({verdict.mutant.requirement}): {verdict.mutant.what}")
        report_not_applied(verdicts)
        if record_it:
            count = record(blind.path, entry)
            print(f"recorded in {shown_path(blind.path)}: measurement {count} of the set")
        results.append({"set": blind.name, "file": shown_path(blind.path), **entry})
    planted = sum(r["planted"] for r in results)
    applied = sum(r["applied"] for r in results)
    killed = sum(r["killed"] for r in results)
    return {"sets": results, "planted": planted, "applied": applied, "killed": killed,
            "kill_rate": round(killed / applied, 4) if applied else 0.0, "recorded": record_it}


# --------------------------------------------------------------------------- checking


def check_problems(mutants: list[Mutant] | None = None, blind_dir: Path | None = None) -> list[str]:
    """Every reason a mutant of the table (default :data:`MUTANTS`), or of a blind set in
    ``blind_dir`` (default suite/blind/), cannot be planted in the current code (one line each; []
    when all apply). Nothing is run: this takes a second or two."""
    sources = Sources()
    problems: list[str] = []
    table = MUTANTS if mutants is None else mutants
    blind_dir = BLIND_DIR if blind_dir is None else blind_dir
    keys = [m.key for m in table]
    problems += [f"duplicate mutant key: {key}" for key in sorted({k for k in keys if keys.count(k) > 1})]
    for mutant in table:
        try:
            mutated_source(mutant, sources)
        except DoesNotApply as error:
            problems += str(error).splitlines()
    for path in sorted(blind_dir.glob("*.json")) if blind_dir.is_dir() else []:
        try:
            blind = load_set(path)
        except SetError as error:
            problems += str(error).splitlines()
            continue
        for mutant in blind.mutants:
            try:
                mutated_source(mutant, sources)
            except DoesNotApply as error:
                problems += [f"{shown_path(path)}: {line}" for line in str(error).splitlines()]
    return problems


def check_all() -> int:
    problems = check_problems()
    sets = sorted(BLIND_DIR.glob("*.json")) if BLIND_DIR.is_dir() else []
    if problems:
        print(f"{len(problems)} problem(s): these mutants cannot be planted in the current code "
              "(update each to where the code now implements the SPEC statement it breaks):")
        for problem in problems:
            print(f"  {problem}")
        return 1
    print(f"all {len(MUTANTS)} mutants and {len(sets)} blind set(s) apply and compile")
    return 0


# --------------------------------------------------------------------------- main


def selected(only: str | None) -> list[Mutant]:
    if only is None:
        return list(MUTANTS)
    return [m for m in MUTANTS if only in (m.key, m.requirement) or m.key.startswith(only + "-")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--only", help="one mutant key (LOOP-8a), a requirement (LOOP-8) or a prefix (LOOP); "
                                       "with --set: a blind mutant id or requirement (nothing is recorded)")
    parser.add_argument("--jobs", type=int, default=2, help="drivers run at once (default 2)")
    parser.add_argument("--full", action="store_true", help="run every fixture against every mutant")
    parser.add_argument("--check", action="store_true",
                        help="only check that every mutant (table and suite/blind/*.json) applies; exit 1 naming "
                             "those that do not")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unmutated run")
    parser.add_argument("--set", action="append", metavar="PATH",
                        help="measure a blind set (a file, a glob or a directory; repeatable) instead of the table")
    parser.add_argument("--no-record", action="store_true", help="with --set: measure without writing to the file")
    parser.add_argument("--fixtures", type=Path, default=SUITE / "fixtures", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.check:
        return check_all()
    if args.jobs < 1:
        raise SystemExit("--jobs must be 1 or more")
    paths = set_paths(args.set) if args.set else []
    mutants = [] if paths else selected(args.only)
    if not paths and not mutants:
        raise SystemExit(f"no mutant matches {args.only!r}")
    fixtures = load_fixtures(args.fixtures)
    if not args.no_baseline:
        with InDirectory(None):
            baseline, _ = first_failures(fixtures, args.jobs, stop_early=False)
        if baseline:
            raise SystemExit(f"the unmutated suite fails ({', '.join(baseline)}): fix that first")
    if paths:
        print(json.dumps(run_sets(paths, args.only, fixtures, args.jobs, args.full, not args.no_record)))
        return 0
    verdicts = []
    for mutant in mutants:
        verdicts.append(judge(mutant, fixtures, args.jobs, args.full))
        show(verdicts[-1])
    totals = report(verdicts, len(fixtures))
    if args.only is None:
        write_table(verdicts, totals)
    print(json.dumps(totals))
    return 0


if __name__ == "__main__":
    sys.exit(main())
