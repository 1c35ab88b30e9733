#!/usr/bin/env python3
"""Run the conformance suite (SPEC §10) on the node-pi driver and write REPORT.md from that run.

    conformance/drivers/node-pi/report.py                  # rewrite REPORT.md next to this script
    conformance/drivers/node-pi/report.py --output FILE    # write it elsewhere (tests/test_node_pi_report.py)

Every fixture runs on ``node conformance/drivers/node-pi/driver.mjs`` in persistent mode. The
report gives the counts, a table of every fixture's result, and for every fixture that differs
what pi-agent-core does and what SPEC.md requires — taken from ``differences.json`` (keyed by
fixture id) — and the runner's account of the difference. The prose around them comes from
``REPORT.template.md``, whose ``{{name}}`` markers this script fills.

Needs ``node`` and ``@mariozechner/pi-agent-core`` in ``$PI_CACHE`` (default
``~/.cache/phi-conformance/node-pi``, where ``scripts/install-node-pi`` and ``install.sh`` put it).

Exit status: 0 the report is written and every difference explained; 1 it is written, but a
difference has no entry in differences.json (the report lists it as unexplained) or an entry names
a fixture that does not differ (listed on stderr); 2 the suite could not be run (no node, no
pi-agent-core, the driver did not start).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from phi.conformance.drivers import Mode  # noqa: E402
from phi.conformance.runner import DriverStartError, Outcome, load_fixtures, run_all  # noqa: E402
sys.path.insert(0, str(HERE.parent))
from report_parts import problem_sections, render, unexplained_lines, unsupported_list  # noqa: E402

DRIVER = "conformance/drivers/node-pi/driver.mjs"  # as the report shows it: relative to the repository
PACKAGE = "@mariozechner/pi-agent-core"
DEFAULT_CACHE = Path.home() / ".cache" / "phi-conformance" / "node-pi"
JOBS = 4


def pi_cache() -> Path:
    return Path(os.environ.get("PI_CACHE") or DEFAULT_CACHE)


def installed(cache: Path) -> tuple[str | None, str]:
    """(pi-agent-core's version, "") when node and the package are there, else (None, why not)."""
    if shutil.which("node") is None:
        return None, "node is not installed"
    manifest = cache / "node_modules" / PACKAGE / "package.json"
    if not manifest.is_file():
        return None, f"{PACKAGE} is not installed in {cache} (run scripts/install-node-pi, or set PI_CACHE)"
    return str(json.loads(manifest.read_text(encoding="utf-8"))["version"]), ""


def node_major() -> str:
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return version.lstrip("v").split(".")[0]


@dataclass
class Explained:
    """One row of the differences table: the fixtures that share an explanation."""

    fixtures: list[str]
    entry: dict[str, str]


def load_explanations(path: Path) -> dict[str, dict[str, str]]:
    """fixture id -> its explanation (``pi``, ``spec``, ``why``, ``topic``?) or ``{"as": id}``."""
    data: dict[str, dict[str, str]] = json.loads(path.read_text(encoding="utf-8"))["differences"]
    for fixture_id, entry in data.items():
        target = entry.get("as")
        if target is not None and "as" in data.get(target, {"as": None}):
            raise ValueError(f"{path.name}: {fixture_id} refers to {target!r}, which has no explanation of its own")
        if target is None and not {"pi", "spec", "why"} <= set(entry):
            raise ValueError(f"{path.name}: {fixture_id} needs pi, spec and why (or as)")
    return data


def group(differing: list[str], explanations: dict[str, dict[str, str]]) -> tuple[list[Explained], list[str]]:
    """The rows (in order of each row's first differing fixture, the explaining one first) and the
    differing fixtures nothing explains."""
    rows: dict[str, Explained] = {}
    unexplained = []
    for fixture_id in differing:
        entry = explanations.get(fixture_id)
        if entry is None:
            unexplained.append(fixture_id)
            continue
        key = entry.get("as", fixture_id)
        row = rows.setdefault(key, Explained([], explanations[key]))
        row.fixtures.append(fixture_id)
    for key, row in rows.items():  # the fixture the explanation was written for leads its row
        row.fixtures.sort(key=lambda f: f != key)
    return list(rows.values()), unexplained


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def differences_table(rows: list[Explained], unexplained: list[str], problems: dict[str, list[str]]) -> str:
    lines = ["| Fixtures | pi-agent-core does | SPEC.md requires | Why SPEC chose it |", "|---|---|---|---|"]
    for row in rows:
        names = ", ".join(f"`{f}`" for f in row.fixtures)
        topic = f" ({row.entry['topic']})" if row.entry.get("topic") else ""
        lines.append(f"| {names}{topic} | {cell(row.entry['pi'])} | {cell(row.entry['spec'])} | "
                     f"{cell(row.entry['why'])} |")
    lines += unexplained_lines(unexplained, problems)
    return "\n".join(lines)


def results_table(fixtures: list[dict[str, Any]], outcomes: list[Outcome]) -> str:
    specs = {f["id"]: ", ".join(f.get("spec", [])) for f in fixtures}
    shown = {"pass": "pass", "fail": "differs", "timeout": "differs (timed out)", "unsupported": "unsupported"}
    lines = ["| Fixture | Requirements | Result |", "|---|---|---|"]
    lines += [f"| `{o.fixture_id}` | {specs.get(o.fixture_id, '')} | {shown[o.status]} |" for o in outcomes]
    return "\n".join(lines)


def report(fixtures: list[dict[str, Any]], outcomes: list[Outcome], explanations: dict[str, dict[str, str]],
           template: str, pi_version: str, node: str) -> tuple[str, list[str], list[str]]:
    """(REPORT.md's text, unexplained differences, explanations of fixtures that do not differ)."""
    differing = [o for o in outcomes if o.status in ("fail", "timeout")]
    problems = {o.fixture_id: o.problems for o in differing}
    rows, unexplained = group([o.fixture_id for o in differing], explanations)
    stale = sorted(set(explanations) - set(problems))
    n = {status: sum(o.status == status for o in outcomes) for status in ("pass", "unsupported")}
    summary = (f"**Summary: {n['pass']} passed, {len(differing)} differ, {n['unsupported']} unsupported "
               f"(of {len(outcomes)} fixtures)" + (f"; {len(unexplained)} of them unexplained" if unexplained else "")
               + ".**")
    text = render(template, {
        "pi_version": pi_version, "node_major": node, "summary": summary,
        "differences": differences_table(rows, unexplained, problems),
        "unsupported_count": str(n["unsupported"]), "unsupported": unsupported_list(outcomes),
        "results": results_table(fixtures, outcomes), "problems": problem_sections(fixtures, differing)})
    return text, unexplained, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=HERE / "REPORT.md", help="where to write (default: REPORT.md)")
    args = parser.parse_args(argv)
    cache = pi_cache()
    version, why_not = installed(cache)
    if version is None:
        print(f"report.py: cannot run the suite on pi: {why_not}", file=sys.stderr)
        return 2
    os.environ["PI_CACHE"] = str(cache)  # for the driver processes
    fixtures = load_fixtures()
    command = f"node {shlex.quote(str(ROOT / DRIVER))}"
    try:
        outcomes = run_all(command, fixtures, jobs=JOBS, mode=Mode("persistent"))
    except DriverStartError as error:
        print(f"report.py: the driver could not be started: {error}", file=sys.stderr)
        return 2
    explanations = load_explanations(HERE / "differences.json")
    template = (HERE / "REPORT.template.md").read_text(encoding="utf-8")
    text, unexplained, stale = report(fixtures, outcomes, explanations, template, version, node_major())
    args.output.write_text(text, encoding="utf-8")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "timeout", "unsupported")}
    print(f"report.py: wrote {args.output}: {counts['pass']} passed, {counts['fail'] + counts['timeout']} differ, "
          f"{counts['unsupported']} unsupported (of {len(outcomes)} fixtures)")
    for fixture_id in unexplained:
        print(f"report.py: {fixture_id} differs and differences.json does not explain it", file=sys.stderr)
    for fixture_id in stale:
        print(f"report.py: differences.json explains {fixture_id}, which does not differ: remove it", file=sys.stderr)
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    sys.exit(main())
