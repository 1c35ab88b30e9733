"""Reports of one suite run against a driver (SPEC §10): Markdown (a port's REPORT.md), JUnit XML
(for CI systems) and JSON (for scripts). :func:`write_report` picks the format by file extension:
``.xml`` JUnit, ``.json`` JSON, anything else Markdown.

The JUnit XML keeps to the schema CI tools share (Jenkins' ``junit-10.xsd``): ``testsuites`` >
``testsuite`` > ``testcase``; a fixture that differs has a ``failure``, one whose driver ran out of
time an ``error`` (type ``timeout``), an unsupported one ``skipped``.
"""

from __future__ import annotations

import json
import socket
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .runner import STATUSES, Outcome


@dataclass
class RunInfo:
    """What a report says about the run besides the outcomes."""

    driver: str
    seconds: float = 0.0
    mode: str = ""  # how the driver ran: "persistent" or "per-fixture"
    started: float = field(default_factory=time.time)
    coverage_gaps: list[str] = field(default_factory=list[str])


def counts(outcomes: list[Outcome]) -> dict[str, int]:
    return {status: sum(o.status == status for o in outcomes) for status in STATUSES}


def write_report(path: Path, driver: str | RunInfo, fixtures: list[dict[str, Any]], outcomes: list[Outcome]) -> None:
    """Write the report ``path``'s extension asks for."""
    info = driver if isinstance(driver, RunInfo) else RunInfo(driver)
    suffix = path.suffix.lower()
    if suffix == ".xml":
        text = junit_xml(info, fixtures, outcomes)
    elif suffix == ".json":
        text = json.dumps(json_report(info, fixtures, outcomes), indent=2, ensure_ascii=False) + "\n"
    else:
        text = markdown(info, fixtures, outcomes)
    path.write_text(text, encoding="utf-8")


def markdown(info: RunInfo, fixtures: list[dict[str, Any]], outcomes: list[Outcome]) -> str:
    titles = {f["id"]: f.get("title", "") for f in fixtures}
    specs = {f["id"]: ", ".join(f.get("spec", [])) for f in fixtures}
    n = counts(outcomes)
    lines = [
        "# Conformance run",
        "",
        f"Driver: `{info.driver}`",
        "",
        f"{n['pass']} passed, {n['fail']} failed, {n['timeout']} timed out, {n['unsupported']} unsupported "
        f"(of {len(outcomes)} fixtures).",
        "",
        "| Fixture | Requirements | Result |",
        "|---|---|---|",
    ]
    for outcome in outcomes:
        lines.append(f"| `{outcome.fixture_id}` | {specs.get(outcome.fixture_id, '')} | {outcome.status} |")
    failed = [o for o in outcomes if o.status in ("fail", "timeout")]
    if failed:
        lines += ["", "## Differences", ""]
        for outcome in failed:
            lines += [f"### `{outcome.fixture_id}` — {titles.get(outcome.fixture_id, '')}", "", "```"]
            lines += [p for p in outcome.problems[:30]]
            lines += ["```", ""]
    warned = [o for o in outcomes if o.warnings]
    if warned:
        lines += ["", "## Malformed output lines (--lenient-events)", ""]
        for outcome in warned:
            lines += [f"### `{outcome.fixture_id}`", "", "```", *outcome.warnings[:30], "```", ""]
    unsupported = [o for o in outcomes if o.status == "unsupported"]
    if unsupported:
        lines += ["", "## Unsupported", ""]
        lines += [f"- `{o.fixture_id}`: {o.problems[0] if o.problems else ''}" for o in unsupported]
    return "\n".join(lines) + "\n"


def json_report(info: RunInfo, fixtures: list[dict[str, Any]], outcomes: list[Outcome]) -> dict[str, Any]:
    by_id = {f["id"]: f for f in fixtures}
    return {
        "driver": info.driver,
        "mode": info.mode,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(info.started)),
        "seconds": round(info.seconds, 3),
        "counts": counts(outcomes),
        "coverage_gaps": info.coverage_gaps,
        "fixtures": [{"id": o.fixture_id, "title": by_id.get(o.fixture_id, {}).get("title", ""),
                      "spec": by_id.get(o.fixture_id, {}).get("spec", []), "status": o.status,
                      "seconds": round(o.seconds, 3), "problems": o.problems, "warnings": o.warnings,
                      "stderr_tail": o.stderr.strip().splitlines()[-20:] if o.status in ("fail", "timeout") else []}
                     for o in outcomes],
    }


def junit_xml(info: RunInfo, fixtures: list[dict[str, Any]], outcomes: list[Outcome]) -> str:
    n = counts(outcomes)
    total = {"tests": str(len(outcomes)), "failures": str(n["fail"]), "errors": str(n["timeout"]),
             "time": f"{info.seconds:.3f}"}
    root = ET.Element("testsuites", {"name": "phi-conformance", **total})
    suite = ET.SubElement(root, "testsuite", {
        "name": "phi-conformance", **total, "skipped": str(n["unsupported"]), "id": "0", "package": "phi.conformance",
        "hostname": socket.gethostname() or "localhost",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(info.started))})
    properties = ET.SubElement(suite, "properties")
    for name, value in (("driver", info.driver), ("mode", info.mode)):
        ET.SubElement(properties, "property", {"name": name, "value": value})
    specs = {f["id"]: [str(r) for r in f.get("spec", [])] for f in fixtures}
    for outcome in outcomes:
        _testcase(suite, outcome, specs.get(outcome.fixture_id, []))
    ET.SubElement(suite, "system-out").text = ""
    ET.SubElement(suite, "system-err").text = "\n".join(f"no fixture for tested requirement {gap}"
                                                        for gap in info.coverage_gaps)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _testcase(suite: ET.Element, outcome: Outcome, spec: list[str]) -> None:
    family = spec[0].split("-")[0] if spec else "other"
    case = ET.SubElement(suite, "testcase", {"name": outcome.fixture_id, "classname": f"conformance.{family}",
                                             "time": f"{outcome.seconds:.3f}"})
    first = _clean(outcome.problems[0]) if outcome.problems else ""
    body = _clean("\n".join(outcome.problems))
    if outcome.status == "fail":
        ET.SubElement(case, "failure", {"type": "mismatch", "message": first[:300]}).text = body
    elif outcome.status == "timeout":
        ET.SubElement(case, "error", {"type": "timeout", "message": first[:300]}).text = body
    elif outcome.status == "unsupported":
        ET.SubElement(case, "skipped", {"message": f"unsupported: {first}"[:300]})
    if outcome.status in ("fail", "timeout") and outcome.stderr.strip():
        ET.SubElement(case, "system-err").text = _clean("\n".join(outcome.stderr.strip().splitlines()[-40:]))


def _clean(text: str) -> str:
    """XML 1.0 cannot hold most control characters; a driver may write them."""
    return "".join(c if c in "\t\n\r" or ord(c) >= 0x20 else f"\\x{ord(c):02x}" for c in text)


__all__ = ["RunInfo", "counts", "json_report", "junit_xml", "markdown", "write_report"]
