"""A Markdown report of one suite run against a driver (SPEC §10), e.g. a port's REPORT.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .runner import Outcome


def write_report(path: Path, driver: str, fixtures: list[dict[str, Any]], outcomes: list[Outcome]) -> None:
    titles = {f["id"]: f.get("title", "") for f in fixtures}
    specs = {f["id"]: ", ".join(f.get("spec", [])) for f in fixtures}
    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "timeout", "unsupported")}
    lines = [
        "# Conformance run",
        "",
        f"Driver: `{driver}`",
        "",
        f"{counts['pass']} passed, {counts['fail']} failed, {counts['timeout']} timed out, "
        f"{counts['unsupported']} unsupported "
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
    unsupported = [o for o in outcomes if o.status == "unsupported"]
    if unsupported:
        lines += ["", "## Unsupported", ""]
        lines += [f"- `{o.fixture_id}`: {o.problems[0] if o.problems else ''}" for o in unsupported]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
