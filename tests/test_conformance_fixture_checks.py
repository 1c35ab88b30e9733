"""The conformance runner trusts no fixture it is handed (issue 32, part 2; SPEC §10): a fixture that
is not JSON, not valid against the shipped schema, repeats an id, names a requirement SPEC.md does not
define or an event type that does not exist is refused — named with its file, JSON path and reason —
and the other fixtures still run; the run exits 2. ``-j`` below 1 is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from phi.conformance import suite_files

ROOT = Path(__file__).resolve().parents[1]
GOOD = "tool-single-call"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "phi.conformance", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def good() -> dict:
    return json.loads((suite_files() / "fixtures" / f"{GOOD}.json").read_text(encoding="utf-8"))


def suite_with(tmp_path: Path, name: str, content: str) -> Path:
    fixtures = tmp_path / "suite" / "fixtures"
    fixtures.mkdir(parents=True)
    shutil.copy(str(suite_files() / "fixtures" / f"{GOOD}.json"), fixtures / f"{GOOD}.json")
    (fixtures / name).write_text(content, encoding="utf-8")
    return fixtures


def changed(**fields) -> str:
    fixture = {**good(), "id": "broken", **fields}
    return json.dumps({k: v for k, v in fixture.items() if v is not None})


CASES = [
    ("entry", changed(entry="agent_loop_x"), "$.entry"),
    ("misspelt key", changed(expekt={}), "$"),
    ("no id", changed(id=None), "$"),
    ("unknown requirement", changed(spec=["LOOP-999"]), "$.spec[0]"),
    ("unknown event type", changed(actions=[{"when": {"event": "AgentStarted"}, "do": "abort"}]),
     "$.actions[0].when.event"),
    ("not JSON", '{"id": "broken", "title": ', "$"),
    ("id not the file name", changed(id="broken-too"), "$.id"),
    ("repeated key", changed()[:-1] + ', "expect": {}}', "$.expect"),
    ("NaN", changed(timeout_ms=float("nan")), "$"),
]


@pytest.mark.parametrize(("case", "content", "where"), CASES, ids=[c[0] for c in CASES])
def test_a_malformed_fixture_is_refused_by_file_and_path_and_the_others_still_run(case, content, where, tmp_path):
    fixtures = suite_with(tmp_path, "broken.json", content)
    done = run("run", "--fixtures", str(fixtures))
    assert done.returncode == 2, done.stdout + done.stderr
    line = next(line for line in done.stderr.splitlines() if line.startswith("INVALID"))
    assert f"{fixtures / 'broken.json'}: {where}" in line, line
    assert "1 passed, 0 failed" in done.stdout  # the good fixture ran


def test_a_repeated_id_is_refused_naming_both_files(tmp_path):
    # an id is its file's name (README §1.1), so only files in two folders can share one
    fixtures = suite_with(tmp_path, "more", "")
    (fixtures / "more").unlink()
    (fixtures / "more").mkdir()
    (fixtures / "more" / f"{GOOD}.json").write_text(json.dumps(good()), encoding="utf-8")
    done = run("run", "--fixtures", str(fixtures))
    assert done.returncode == 2
    assert f"{fixtures / f'{GOOD}.json'}: $.id: id '{GOOD}' is also the id of {fixtures / 'more' / f'{GOOD}.json'}" \
        in done.stderr


@pytest.mark.parametrize("jobs", ["0", "-3", "many"])
def test_jobs_below_one_are_refused(jobs):
    done = run("run", "-j", jobs, "--only", GOOD)
    assert done.returncode == 2 and "--jobs/-j" in done.stderr


def test_every_shipped_fixture_is_sound():
    from phi.conformance.validation import load_checked

    fixtures, problems = load_checked(suite_files() / "fixtures")
    assert problems == [] and len(fixtures) >= 171
