"""scripts/mutants.py keeps working (issue 32): every mutant of its table and of the blind sets in
phi/conformance/suite/blind/ still applies to the current code (checked without running anything),
a stale one is named with its file, count and text, and a blind set is measured and its measurement
appended to the set file. The full sweep itself is run by hand (``scripts/mutants.py``)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from phi.conformance import coverage

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "mutants.py"
FIXTURES = ROOT / "phi" / "conformance" / "suite" / "fixtures"
MEASUREMENT_KEYS = {"date", "commit", "fixtures", "planted", "applied", "killed", "kill_rate", "survivors",
                    "not_applied", "killed_by"}


@pytest.fixture(scope="module")
def mutants() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("mutants_script", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    saved = sys.modules.get(spec.name)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        if saved is None:
            sys.modules.pop(spec.name, None)
        else:
            sys.modules[spec.name] = saved


def test_every_mutant_and_every_blind_set_still_applies(mutants: ModuleType) -> None:
    problems = mutants.check_problems()
    assert problems == [], ("these mutants no longer apply; move each to where the code now implements the SPEC "
                            "statement it breaks (scripts/mutant_table.py):\n" + "\n".join(problems))


def test_check_names_every_stale_mutant_not_just_the_first(mutants: ModuleType, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    Mutant = mutants.Mutant
    good = mutants.MUTANTS[0]
    target = "self.emit(TurnEnd(self.loop_id, reply,"
    table = [
        Mutant("LOOP-90a", "loop/run.py", (("this text is nowhere\nsecond line", "x"),), "gone"),
        good,
        Mutant("LOOP-90b", "loop/run.py", (("        ", "  "),), "everywhere"),
        Mutant("LOOP-90c", "loop/run.py", ((target, target + ","),), "does not compile"),
        Mutant("LOOP-90d", "loop/no_such_module.py", (("a", "b"),), "no file"),
    ]
    blind = tmp_path / "blind"
    blind.mkdir()
    write_set(blind / "set-1.json", [blind_mutant("b/1", "loop/run.py", "not in the code either", "x")])
    (blind / "set-2.json").write_text(json.dumps({"set": "b2", "mutants": [{"id": "b2/1"}]}), encoding="utf-8")
    monkeypatch.setattr(mutants, "MUTANTS", table)
    monkeypatch.setattr(mutants, "BLIND_DIR", blind)
    assert mutants.main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "LOOP-90a: phi/loop/run.py: its target occurs 0 times (must be once): 'this text is nowhere'" in out
    assert "LOOP-90b: phi/loop/run.py: its target occurs" in out
    assert "LOOP-90d: phi/loop/no_such_module.py does not exist" in out
    assert "set-1.json: b/1: phi/loop/run.py: its target occurs 0 times" in out
    assert "set-2.json: mutants[0].edits: a non-empty list is required" in out
    assert "LOOP-90c: the mutated phi/loop/run.py does not compile" in out
    assert good.key not in out


def test_a_run_reports_a_stale_mutant_and_carries_on(mutants: ModuleType, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    Mutant = mutants.Mutant
    monkeypatch.setattr(mutants, "MUTANTS", [Mutant("LOOP-90a", "loop/run.py", (("not in the code", "x"),), "a"),
                                             Mutant("LOOP-90b", "loop/run.py", (("nor this", "x"),), "b")])
    assert mutants.main(["--only", "LOOP-90", "--no-baseline", "--fixtures", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "LOOP-90a    n/a      does not apply: LOOP-90a: phi/loop/run.py: its target occurs 0 times" in out
    assert "LOOP-90b    n/a      does not apply" in out
    figures = json.loads(out.splitlines()[-1])
    assert (figures["mutants"], figures["killed"], figures["not_applied"]) == (0, 0, ["LOOP-90a", "LOOP-90b"])


def test_a_mutant_naming_something_undefined_does_not_apply(mutants: ModuleType) -> None:
    target = "self.emit(TurnEnd(self.loop_id, reply,"
    undefined = mutants.Mutant("LOOP-91a", "loop/run.py", ((target, "no_such_name(); " + target),), "x")
    problems = mutants.check_problems([undefined], Path("/nonexistent"))
    assert problems == ["LOOP-91a: the mutated phi/loop/run.py uses undefined names: no_such_name"]


def test_a_blind_set_is_measured_and_the_measurement_appended(tmp_path: Path) -> None:
    """Three mutants against two fixtures: one a fixture kills, one none of them can see, one that
    does not apply (left out of the rate). The set's earlier measurement stays first."""
    fixtures = tmp_path / "fixtures"
    fixtures.mkdir()
    for name in ("tool-arguments-not-json.json", "basic-text-reply.json"):
        (fixtures / name).write_text((FIXTURES / name).read_text(encoding="utf-8"), encoding="utf-8")
    earlier = {"date": "2026-01-01T00:00:00Z", "commit": "0" * 40, "fixtures": 1, "planted": 3, "applied": 2,
               "killed": 0, "kill_rate": 0.0, "survivors": ["t/01", "t/02"], "not_applied": ["t/03"], "killed_by": {}}
    path = tmp_path / "set-1.json"
    write_set(path, [
        blind_mutant("t/01", "loop/tool_execution.py", 'INVALID_ARGS = "Invalid arguments for tool {name}: {reason}"',
                     'INVALID_ARGS = "Invalid arguments for {name}: {reason}"', requirement="TOOL-2"),
        blind_mutant("t/02", "phi/evaluation/parallel.py", '[b.context.loop_id or "" for b in branches]',
                     '[b.context.loop_id or "" for b in branches][::-1]', requirement="EVAL-1"),
        blind_mutant("t/03", "loop/run.py", "text the code never had", "x", requirement="LOOP-8"),
    ], measurements=[earlier])

    figures = run_script("--set", str(path), "--no-baseline", "--fixtures", str(fixtures))

    assert {k: figures[k] for k in ("planted", "applied", "killed", "kill_rate")} == \
        {"planted": 3, "applied": 2, "killed": 1, "kill_rate": 0.5}
    (measured,) = figures["sets"]
    assert (measured["survivors"], measured["not_applied"]) == (["t/02"], ["t/03"])
    assert measured["killed_by"] == {"t/01": ["tool-arguments-not-json"]}
    stored = json.loads(path.read_text(encoding="utf-8"))
    assert stored["measurements"][0] == earlier
    latest = stored["measurements"][1]
    assert set(latest) == MEASUREMENT_KEYS and latest["fixtures"] == 2 and len(latest["commit"]) == 40
    assert {k: latest[k] for k in ("planted", "applied", "killed")} == {"planted": 3, "applied": 2, "killed": 1}
    assert stored["mutants"][0]["id"] == "t/01" and stored["set"] == "test-set"

    table = coverage.render("**LOOP-1 [tested]** x", [], None, [{**stored, "_file": "set-1.json"}])
    assert "| test-set | a test | 3 | 0% (0 of 2; 2026-01-01, suite of 1) | 50% (1 of 2; " in table


def test_no_record_measures_without_writing(tmp_path: Path) -> None:
    path = tmp_path / "set-9.json"
    write_set(path, [blind_mutant("n/01", "loop/run.py", "text the code never had", "x")])
    before = path.read_text(encoding="utf-8")
    (tmp_path / "no-fixtures").mkdir()
    figures = run_script("--set", str(tmp_path / "set-*.json"), "--no-baseline", "--no-record",
                         "--fixtures", str(tmp_path / "no-fixtures"))
    assert (figures["planted"], figures["applied"], figures["kill_rate"], figures["recorded"]) == (1, 0, 0.0, False)
    assert path.read_text(encoding="utf-8") == before


# --------------------------------------------------------------------------- helpers


def blind_mutant(mutant_id: str, file: str, old: str, new: str, requirement: str = "LOOP-8") -> dict[str, Any]:
    return {"id": mutant_id, "requirement": requirement, "file": file, "edits": [{"old": old, "new": new}],
            "kind": "test", "breaks": "a test statement", "evidence": "a test"}


def write_set(path: Path, entries: list[dict[str, Any]], measurements: list[dict[str, Any]] | None = None) -> None:
    data: dict[str, Any] = {"set": "test-set", "planted_by": "a test", "mutants": entries}
    if measurements is not None:
        data["measurements"] = measurements
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")


def run_script(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, check=False)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    figures: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return figures
