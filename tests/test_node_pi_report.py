"""conformance/drivers/node-pi/REPORT.md is what conformance/drivers/node-pi/report.py writes from a
run of the conformance suite (SPEC §10) on pi-agent-core, and every difference it reports is
explained (issue 32).

The run needs node and ``@mariozechner/pi-agent-core``, which ``scripts/install-node-pi`` (run by
``scripts/test``) installs into ``$PI_CACHE`` or ``~/.cache/phi-conformance/node-pi``; without them
that test is skipped, saying why. The report's logic is tested here without node.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from driver_reports import assert_committed_report_regenerates, load_report_script
from driver_reports import outcomes as _outcomes

from phi.conformance.runner import Outcome, load_fixtures

ROOT = Path(__file__).resolve().parents[1]
HERE = ROOT / "conformance" / "drivers" / "node-pi"


report = load_report_script(HERE, "node_pi_report")


def why_no_pi() -> str | None:
    """None when the report can be generated here, else the reason."""
    cache = report.pi_cache()
    version, why_not = report.installed(cache)
    if version is not None:
        return None
    error = cache / "install-error.txt"
    return f"{why_not}: {error.read_text(encoding='utf-8').strip()}" if error.is_file() else why_not


def test_the_committed_report_is_what_a_run_on_pi_gives(tmp_path: Path) -> None:
    why = why_no_pi()
    if why is not None:
        pytest.skip(f"cannot run the suite on pi-agent-core: {why}")
    assert_committed_report_regenerates(HERE, tmp_path)


TEMPLATE = "# {{pi_version}} on Node {{node_major}}\n{{summary}}\n{{differences}}\n{{unsupported_count}}\n" \
           "{{unsupported}}\n{{results}}\n{{problems}}\n"
EXPLANATIONS = {"a": {"pi": "does A", "spec": "X-1", "why": "because"}, "c": {"as": "a"},
                "gone": {"pi": "p", "spec": "s", "why": "w"}}


def test_differences_sharing_an_explanation_are_one_row_and_the_others_are_unexplained() -> None:
    fixtures = [{"id": i, "title": f"title {i}", "spec": ["X-1"]} for i in "abcd"]
    outcomes = _outcomes({"a": "fail", "b": "fail", "c": "timeout", "d": "unsupported"})
    text, unexplained, stale = report.report(fixtures, outcomes, EXPLANATIONS, TEMPLATE, "9.9", "20")
    assert unexplained == ["b"] and stale == ["gone"]
    assert "| `a`, `c` | does A | X-1 | because |" in text
    assert "**Unexplained (1):**" in text and "- `b`: b: first problem" in text
    assert "**Summary: 0 passed, 3 differ, 1 unsupported (of 4 fixtures); 1 of them unexplained.**" in text
    assert "- d: first problem (1): `d`" in text
    assert "| `c` | X-1 | differs (timed out) |" in text and "### `b` — title b" in text
    assert text.startswith("# 9.9 on Node 20\n")


def test_a_run_whose_differences_are_all_explained_reports_none_unexplained() -> None:
    fixtures = [{"id": i} for i in "ac"]
    text, unexplained, stale = report.report(fixtures, _outcomes({"c": "fail", "a": "pass"}),
                                             {"c": {"pi": "p", "spec": "s", "why": "w"}}, TEMPLATE, "1", "20")
    assert (unexplained, stale) == ([], [])
    assert "Unexplained" not in text and "| `c` | p | s | w |" in text


def test_an_unknown_template_marker_is_refused() -> None:
    with pytest.raises(KeyError):
        report.render("{{nothing}}", {})


def test_the_explanations_file_is_well_formed_and_names_real_fixtures() -> None:
    explanations = report.load_explanations(HERE / "differences.json")
    ids = {f["id"] for f in load_fixtures()}
    assert set(explanations) <= ids, sorted(set(explanations) - ids)
    raw = json.loads((HERE / "differences.json").read_text(encoding="utf-8"))["differences"]
    assert raw == explanations


def test_an_explanation_that_refers_to_another_reference_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "differences.json"
    path.write_text(json.dumps({"differences": {"a": {"as": "b"}, "b": {"as": "c"}, "c": {"pi": "", "spec": "",
                                                                                          "why": ""}}}))
    with pytest.raises(ValueError, match="refers to 'b'"):
        report.load_explanations(path)
    path.write_text(json.dumps({"differences": {"a": {"pi": "only"}}}))
    with pytest.raises(ValueError, match="needs pi, spec and why"):
        report.load_explanations(path)
