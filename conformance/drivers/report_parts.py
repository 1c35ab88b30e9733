"""What the drivers' report scripts (``node-pi/report.py``, ``phi-core/report.py``) have in common:
filling ``REPORT.template.md``, the list of unsupported fixtures, the runner's account of each
difference (SPEC §10) and which of them are the driver's own failures. Each script adds what is its
implementation's own: where it is installed, how its differences are explained."""

from __future__ import annotations

import re
from typing import Any, Callable

from phi.conformance.runner import Outcome

SHOWN_PROBLEMS = 30  # lines of the runner's account per difference, as `phi-conformance run --report` keeps

#: what the runner says when the driver, not the implementation behind it, went wrong (a problem
#: line of phi/conformance/drivers.py, process.py, lines.py or runner.py): it crashed or exited before
#: its `done` line, ran out of time, wrote too much, broke protocol 2, wrote lines that are not JSON
#: objects, or the runner could not judge what it wrote
DRIVER_FAILURE = re.compile(
    r"^(?:driver exited|driver did not finish within|output too large|protocol: |runner: judging"
    r"|line \d+(?: \([^)]*\))?: (?:\S+: )?(?:not UTF-8|nested more than|not JSON|not a JSON object"
    r"|this key appears more than once|a \\u escape of half a surrogate pair))")


def render(template: str, values: dict[str, str]) -> str:
    """``template`` with each ``{{name}}`` replaced by ``values[name]``; an unknown marker raises."""
    def fill(match: re.Match[str]) -> str:
        if match.group(1) not in values:
            raise KeyError(f"REPORT.template.md: unknown marker {{{{{match.group(1)}}}}}")
        return values[match.group(1)]

    return re.sub(r"\{\{(\w+)\}\}", fill, template)


def unsupported_list(outcomes: list[Outcome]) -> str:
    """One line per reason a fixture was declared unsupported, most fixtures first."""
    by_reason: dict[str, list[str]] = {}
    for outcome in outcomes:
        if outcome.status == "unsupported":
            reason = outcome.problems[0] if outcome.problems else "no reason given"
            by_reason.setdefault(reason, []).append(outcome.fixture_id)
    return "\n".join(f"- {reason} ({len(ids)}): " + ", ".join(f"`{i}`" for i in ids)
                     for reason, ids in sorted(by_reason.items(), key=lambda item: (-len(item[1]), item[0])))


def problem_sections(fixtures: list[dict[str, Any]], differing: list[Outcome],
                     shown: Callable[[str], str] = lambda line: line) -> str:
    """A section per differing fixture with the runner's account (its first lines), each line through
    ``shown`` (e.g. ids an implementation makes at random written as a placeholder)."""
    titles = {f["id"]: f.get("title", "") for f in fixtures}
    parts = []
    for outcome in differing:
        parts += [f"### `{outcome.fixture_id}` — {titles.get(outcome.fixture_id, '')}", "", "```",
                  *[shown(p) for p in outcome.problems[:SHOWN_PROBLEMS]], "```", ""]
    return "\n".join(parts).rstrip("\n")


def unexplained_lines(unexplained: list[str], problems: dict[str, list[str]]) -> list[str]:
    """The lines after the differences table naming the differing fixtures nothing explains."""
    if not unexplained:
        return []
    return ["", f"**Unexplained ({len(unexplained)}):** these fixtures differ and `differences.json` does "
            "not say why (report.py exits 1 until it does):", "",
            *[f"- `{f}`: {problems[f][0] if problems[f] else 'no problem recorded'}" for f in unexplained]]


def driver_failure(outcome: Outcome) -> str | None:
    """The runner's line saying the driver failed on this fixture (a timeout counts), or None."""
    failed = [p for p in outcome.problems if DRIVER_FAILURE.match(p)]
    if failed:
        return failed[0]
    if outcome.status == "timeout":
        return outcome.problems[0] if outcome.problems else "the driver timed out"
    return None
