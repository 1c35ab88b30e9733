"""conformance/drivers/phi-core/REPORT.md is what conformance/drivers/phi-core/report.py writes from a
run of the conformance suite (SPEC §10) on phi-core 0.9.0, and every difference it reports is
explained by a difference family with a verdict (issue 37).

The run needs the phi-core driver, which ``scripts/install-phi-core`` (run by ``scripts/test``) builds
into ``$PHI_CORE_CACHE`` or ``~/.cache/phi-test/phi-core``; without it the comparison is skipped with
the reason the install script wrote to ``install-error.txt`` (or "not built"). The report's logic and
``differences.json`` are tested here without the driver.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driver_reports import assert_committed_report_regenerates, load_report_script
from driver_reports import outcomes as _outcomes

from phi.conformance.runner import Outcome, load_fixtures

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "conformance" / "drivers" / "phi-core"


report = load_report_script(HERE, "phi_core_report")


def why_no_driver() -> str | None:
    """None when the driver is built, else why not: the install script's own reason when it wrote
    one, else "not built"."""
    cache = report.cache_dir()
    binary, _ = report.installed(cache)
    if binary is not None:
        return None
    error = cache / "install-error.txt"
    return error.read_text(encoding="utf-8").strip() if error.is_file() else "not built"


def test_the_committed_report_is_what_a_run_on_phi_core_gives(tmp_path: Path) -> None:
    why = why_no_driver()
    if why is not None:
        pytest.skip(f"phi-core's conformance driver is not available: {why}")
    assert_committed_report_regenerates(HERE, tmp_path)


TEMPLATE = "# rustc {{rustc}}\n{{summary}}\n{{verdicts}}\n{{differences}}\n{{unsupported_count}}\n" \
           "{{unsupported}}\n{{results}}\n{{problems}}\n"


def _family(verdict: str, **extra: object) -> dict[str, object]:
    return {"title": "T", "phi_core": "does A", "spec": "X-1", "verdict": verdict, "why": "because", **extra}


def test_each_difference_lists_its_families_and_the_rest_is_unexplained_or_stale() -> None:
    explanations = report.Explanations(
        families={"f1": _family("deviation"), "f2": _family("spec", seed_clear=True), "unused": _family("suite")},
        fixtures={"a": ["f1", "f2"], "c": ["f1"], "gone": ["f1"]})
    fixtures = [{"id": i, "title": f"title {i}", "spec": ["X-1"]} for i in "abcd"]
    outcomes = _outcomes({"a": "fail", "b": "fail", "c": "timeout", "d": "unsupported"})
    text, unexplained, stale = report.report(fixtures, outcomes, explanations, TEMPLATE, "1.96.0")
    assert unexplained == ["b"] and stale == ["gone", "family unused"]
    assert "2: `a`, `c` |" in text and "1: `a` |" in text  # f1 serves a and c, f2 only a
    assert "**phi-core deviates from its own seed**: because" in text
    assert "**SPEC decided otherwise** (against what the seed states plainly): because" in text
    assert "**Unexplained (1):**" in text and "- `b`: b: first problem" in text
    assert "**Summary: 0 passed, 3 differ, 1 unsupported (of 4 fixtures); 2 difference families; " \
           "1 differences unexplained.**" in text
    assert "| `a` | X-1 | differs | [`f1`](#f1), [`f2`](#f2) |" in text
    assert "| `c` | X-1 | differs (timed out) | [`f1`](#f1) |" in text and "### `b` — title b" in text
    assert text.startswith("# rustc 1.96.0\n")


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
