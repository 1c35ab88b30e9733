"""conformance/drivers/phi-core/REPORT.md is what conformance/drivers/phi-core/report.py writes from a
run of the conformance suite (SPEC §10) on phi-core 0.9.0, and every difference it reports is
explained by a difference family with a verdict (issue 37).

The run needs the phi-core driver, which ``scripts/install-phi-core`` (run by ``scripts/test``) builds
into ``$PHI_CORE_CACHE`` or ``~/.cache/phi-test/phi-core``, built from this checkout's sources (the
cache's stamp is the key ``cache_key.py`` gives them); otherwise the comparison is skipped with the
reason: the install script's error (``install-error.txt``), "not built", or "built from other
sources". The report's logic, ``differences.json``, the cache key, the install script's lock and a
crashing driver are tested here without the Rust build.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from driver_reports import assert_committed_report_regenerates, load_report_script
from driver_reports import outcomes as _outcomes

from phi.conformance.drivers import fixture_payload
from phi.conformance.runner import Outcome, load_fixtures

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "conformance" / "drivers" / "phi-core"


report = load_report_script(HERE, "phi_core_report")


def why_no_driver() -> str | None:
    """None when the cache holds a driver built from this checkout, else why not (report.installed)."""
    binary, why_not = report.installed(report.cache_dir())
    return None if binary is not None else why_not


def test_the_committed_report_is_what_a_run_on_phi_core_gives(tmp_path: Path) -> None:
    why = why_no_driver()
    if why is not None:
        pytest.skip(f"phi-core's conformance driver is not available: {why}")
    # the rustc it names is the machine's (install-phi-core builds with the one it finds)
    assert_committed_report_regenerates(HERE, tmp_path, lambda text: re.sub(r"rustc \d+\.\d+\.\d+", "rustc N", text))


TEMPLATE = "# rustc {{rustc}}\n{{summary}}\n{{verdicts}}\n{{differences}}\n{{unsupported_count}}\n" \
           "{{unsupported}}\n{{results}}\n{{problems}}\n"


def _family(verdict: str, **extra: object) -> dict[str, object]:
    return {"title": "T", "phi_core": "does A", "spec": "X-1", "verdict": verdict, "why": "because", **extra}


def test_each_difference_lists_its_families_and_the_rest_is_unexplained_or_stale() -> None:
    explanations = report.Explanations(
        families={"f1": _family("deviation"), "f2": _family("spec", seed_clear=True), "unused": _family("suite")},
        fixtures={"a": ["f1", "f2"], "c": ["f1"], "gone": ["f1"]})
    fixtures = [{"id": i, "title": f"title {i}", "spec": ["X-1"]} for i in "abcd"]
    outcomes = _outcomes({"a": "fail", "b": "fail", "c": "fail", "d": "unsupported"})
    text, unexplained, stale = report.report(fixtures, outcomes, explanations, TEMPLATE, "1.96.0")
    assert unexplained == ["b"] and stale == ["gone", "family unused"]
    assert "2: `a`, `c` |" in text and "1: `a` |" in text  # f1 serves a and c, f2 only a
    assert "**phi-core deviates from its own seed**: because" in text
    assert "**SPEC decided otherwise** (against what the seed states plainly): because" in text
    assert "**Unexplained (1):**" in text and "- `b`: b: first problem" in text
    assert "**Summary: 0 passed, 3 differ, 1 unsupported (of 4 fixtures); 2 difference families; " \
           "1 differences unexplained.**" in text
    assert "| `a` | X-1 | differs | [`f1`](#f1), [`f2`](#f2) |" in text
    assert "| `c` | X-1 | differs | [`f1`](#f1) |" in text and "### `b` — title b" in text
    assert text.startswith("# rustc 1.96.0\n")


@pytest.mark.parametrize("failure", [
    "driver exited (status 3) before its 'done' line",
    "driver exited with status 101",
    "driver did not finish within 10s",
    "protocol: 'done' names fixture 'x', not 'a'",
    "line 2: not JSON (Expecting value: line 1 column 1 (char 0)): {oops",
    "output too large: more than 64 MiB on stdout; the driver was killed",
])
def test_a_driver_failure_is_never_explained_by_a_verdict_on_phi_core(failure: str) -> None:
    explanations = report.Explanations(families={"f1": _family("deviation")}, fixtures={"a": ["f1"], "c": ["f1"]})
    fixtures = [{"id": i, "title": f"title {i}", "spec": ["X-1"]} for i in "ac"]
    outcomes = [Outcome("a", "fail", [failure, "events: expected 5 events, got 1"]),
                Outcome("c", "fail", ["events: expected 2 events, got 3"])]
    text, unexplained, stale = report.report(fixtures, outcomes, explanations, TEMPLATE, "1.96.0")
    assert unexplained == ["a"] and stale == []  # a's entry is not stale: the run could not test it
    assert f"- `a`: the driver failed, which says nothing of phi-core: {failure}" in text
    assert "| `a` | X-1 | driver failed | unexplained |" in text and "1: `c` |" in text
    assert "1 differences unexplained (1 of them driver failures)" in text


def test_a_timeout_is_a_driver_failure_and_a_difference_is_not() -> None:
    assert report.driver_failure(Outcome("a", "timeout", ["events: expected 2 events, got 1"])) == \
        "events: expected 2 events, got 1"
    assert report.driver_failure(Outcome("a", "fail", ["line 9 (MessageEnd): /event/message/content/0/arguments: "
                                                        "expected an object, got [1, 2]"])) is None
    assert report.driver_failure(Outcome("a", "fail", ["x", "runner: judging this fixture's output raised "
                                                            "KeyError: 'y'"])) is not None


def test_ids_generated_at_random_are_written_the_same_way_in_every_run() -> None:
    outcome = Outcome("a", "fail", ['got "3142d46f-bc41-44d1-ba27-ff7a35025322.sub.1"', 'cut "6ae2a789-0c...'])
    text = report.problem_sections([{"id": "a", "title": "t"}], [outcome], report.shown)
    assert 'got "<uuid>.sub.1"' in text and 'cut "<uuid>...' in text


def test_an_unknown_template_marker_is_refused() -> None:
    with pytest.raises(KeyError):
        report.render("{{nothing}}", {})


def test_the_explanations_are_well_formed_and_name_real_fixtures() -> None:
    explanations = report.load_explanations(HERE / "differences.json")
    ids = {f["id"] for f in load_fixtures()}
    assert set(explanations.fixtures) <= ids, sorted(set(explanations.fixtures) - ids)
    used = {name for names in explanations.fixtures.values() for name in names}
    assert used == set(explanations.families), sorted(set(explanations.families) ^ used)


def test_a_malformed_explanation_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "differences.json"
    path.write_text(json.dumps({"families": {"f": {"title": "t"}}, "fixtures": {}}))
    with pytest.raises(ValueError, match="family f needs phi_core, spec, verdict, why"):
        report.load_explanations(path)
    path.write_text(json.dumps({"families": {"f": _family("maybe")}, "fixtures": {}}))
    with pytest.raises(ValueError, match="verdict must be one of"):
        report.load_explanations(path)
    path.write_text(json.dumps({"families": {"f": _family("spec")}, "fixtures": {"a": ["g"]}}))
    with pytest.raises(ValueError, match="unknown families g"):
        report.load_explanations(path)


def test_without_the_driver_the_reason_is_the_install_scripts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PHI_CORE_CACHE", str(tmp_path))
    assert why_no_driver() == "not built"
    (tmp_path / "install-error.txt").write_text("Debian packages not installed: cargo-web\n")
    assert why_no_driver() == "Debian packages not installed: cargo-web"


def fake_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, driver: str = "#!/bin/sh\nexit 0\n") -> Path:
    """A cache holding an executable ``driver`` and a phi-core source of one file, both in tmp_path;
    PHI_CORE_CACHE and PHI_CORE_SOURCE point at them. No stamp yet."""
    source = tmp_path / "phi-core-src"
    (source / "src").mkdir(parents=True)
    (source / "Cargo.toml").write_text('[package]\nname = "phi-core"\n')
    (source / "src" / "lib.rs").write_text("// phi-core\n")
    cache = tmp_path / "cache"
    binary = cache / report.BINARY
    binary.parent.mkdir(parents=True)
    binary.write_text(driver)
    binary.chmod(0o755)
    monkeypatch.setenv("PHI_CORE_CACHE", str(cache))
    monkeypatch.setenv("PHI_CORE_SOURCE", str(source))
    return cache


def this_checkouts_stamp(cache: Path) -> Path:
    return cache / f"built-{report.cache_key(report.source_dir(), report.rustc_path(cache))}"


def test_a_driver_built_from_other_sources_is_not_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = fake_cache(tmp_path, monkeypatch)
    (cache / "built-0123456789abcdef").touch()  # another checkout's build, or an older one of this
    assert why_no_driver() == "built from other sources: run scripts/install-phi-core"
    with pytest.raises(pytest.skip.Exception, match="built from other sources: run scripts/install-phi-core"):
        test_the_committed_report_is_what_a_run_on_phi_core_gives(tmp_path)
    this_checkouts_stamp(cache).touch()
    assert why_no_driver() is None
    # a failed rebuild removes the stamp; its error wins even over a stamp and a binary left behind
    (cache / "install-error.txt").write_text("cargo build --offline of the phi-core conformance driver failed\n")
    assert why_no_driver() == "cargo build --offline of the phi-core conformance driver failed"


def test_the_cache_key_covers_file_names_as_well_as_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_cache(tmp_path, monkeypatch)
    source = report.source_dir()
    first = report.cache_key(source)
    (source / "src" / "lib.rs").rename(source / "src" / "lib_.rs")  # same place in the order, same bytes
    renamed = report.cache_key(source)
    (source / "build.rs").touch()  # an empty file
    added = report.cache_key(source)
    assert len({first, renamed, added}) == 3
    # the command line the install script runs gives the same key as report.py's import
    done = subprocess.run([sys.executable, str(HERE / "cache_key.py"), "--source", str(source)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == added


def test_the_install_script_takes_this_checkouts_stamp_as_its_own(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """The install script's key is report.py's: given the stamp report.py computes, it has nothing to
    build (and clears an error another checkout's run left)."""
    if not os.access("/usr/bin/rustc", os.X_OK) or shutil.which("flock") is None:
        pytest.skip("the install script's up-to-date check needs /usr/bin/rustc and flock")
    cache = fake_cache(tmp_path, monkeypatch)
    this_checkouts_stamp(cache).touch()
    (cache / "install-error.txt").write_text("another checkout's error\n")
    env = {**os.environ, "PYTHON": sys.executable}
    env.pop("PHI_SKIP_PHI_CORE", None)
    done = subprocess.run(["sh", str(ROOT / "scripts" / "install-phi-core")], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert not (cache / "install-error.txt").exists()


def test_installs_into_one_cache_run_one_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """While one install holds the cache's lock, another waits (saying so) and does nothing."""
    if shutil.which("flock") is None:
        pytest.skip("flock (util-linux) is not installed")
    cache = tmp_path / "cache"
    cache.mkdir()
    env = {**os.environ, "PHI_CORE_CACHE": str(cache), "PHI_CORE_SOURCE": str(tmp_path / "no-source"),
           "PYTHON": sys.executable}
    env.pop("PHI_SKIP_PHI_CORE", None)
    with open(cache / "install.lock", "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        waiting = subprocess.Popen(["sh", str(ROOT / "scripts" / "install-phi-core")], env=env,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            assert waiting.stderr is not None
            assert "another install into" in waiting.stderr.readline()
            assert waiting.poll() is None and not (cache / "install-error.txt").exists()
        finally:
            fcntl.flock(held, fcntl.LOCK_UN)
        rest = waiting.stderr.read()
        assert waiting.wait(timeout=120) == 1
    assert "phi-core source not found" in rest
    assert "phi-core source not found" in (cache / "install-error.txt").read_text()


CRASHING_DRIVER = """#!{python}
# protocol 2: every fixture unsupported, except that on provider-error-api it writes one line and exits 3
import json, sys
print(json.dumps({{"kind": "hello", "protocol": 2, "persistent": True}}), flush=True)
for line in sys.stdin:
    if not line.strip():
        continue
    fixture_id = json.loads(line).get("id")
    if fixture_id == "provider-error-api":
        print(json.dumps({{"kind": "event", "event": {{"type": "AgentStart"}}}}), flush=True)
        sys.exit(3)
    print(json.dumps({{"kind": "unsupported", "reason": "a stand-in"}}), flush=True)
    print(json.dumps({{"kind": "done", "id": fixture_id}}), flush=True)
"""


def test_a_crashing_driver_is_reported_as_unexplained_and_report_py_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """differences.json explains provider-error-api (error-reply, a phi-core deviation); a driver
    that crashes on it must not be explained by that."""
    assert "provider-error-api" in report.load_explanations(HERE / "differences.json").fixtures
    cache = fake_cache(tmp_path, monkeypatch, CRASHING_DRIVER.format(python=sys.executable))
    this_checkouts_stamp(cache).touch()
    output = tmp_path / "REPORT.md"
    assert report.main(["--output", str(output)]) == 1
    err = capsys.readouterr().err
    assert "report.py: provider-error-api: the driver failed (driver exited (status 3) before its 'done' line)" in err
    text = output.read_text()
    assert "| `provider-error-api` | ERR-3, LOOP-17, LOOP-14, EVT-9 | driver failed | unexplained |" in text
    assert "- `provider-error-api`: the driver failed, which says nothing of phi-core: driver exited" in text


def test_the_persistent_driver_answers_a_line_that_is_not_utf8_and_goes_on(tmp_path: Path) -> None:
    why = why_no_driver()
    if why is not None:
        pytest.skip(f"phi-core's conformance driver is not available: {why}")
    binary, _ = report.installed(report.cache_dir())
    assert binary is not None
    fixture = next(f for f in load_fixtures() if f["id"] == "provider-error-api")
    line = fixture_payload(fixture).encode()
    done = subprocess.run([binary, "--persistent"], input=line + b"\n" + b'{"id": "bad-\xff"}\n' + line + b"\n",
                          capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    items = [json.loads(text) for text in done.stdout.decode().splitlines()]
    assert [i.get("id") for i in items if i["kind"] == "done"] == ["provider-error-api", None, "provider-error-api"]
    bad = items[[i for i, item in enumerate(items) if item["kind"] == "done"][0] + 1]
    assert bad["kind"] == "error" and bad["message"].startswith("not UTF-8")
