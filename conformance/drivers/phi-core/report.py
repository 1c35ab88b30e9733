#!/usr/bin/env python3
"""Run the conformance suite (SPEC §10) on phi-core's driver and write REPORT.md from that run.

    conformance/drivers/phi-core/report.py                  # rewrite REPORT.md next to this script
    conformance/drivers/phi-core/report.py --output FILE    # write it elsewhere (tests/test_phi_core_report.py)

Every fixture runs on the phi-core driver binary (built by ``scripts/install-phi-core`` into
``$PHI_CORE_CACHE`` or ``~/.cache/phi-test/phi-core``) in persistent mode. The report gives the
counts, a table of every fixture's result, and the differences: ``differences.json`` names, for each
fixture that differs, the difference families that account for it, and describes each family — what
phi-core does, what SPEC.md requires, and a verdict (phi-core deviates from its own seed documents,
or SPEC decided otherwise, or the suite was wrong and has been fixed) with the seed REQ /
architecture section or the SPEC clause and DESIGN.md's resolution it rests on. The prose around
them comes from ``REPORT.template.md``, whose ``{{name}}`` markers this script fills.

The driver is used only when ``scripts/install-phi-core`` built it from this checkout: its stamp
``built-<key>`` in the cache must be the key ``cache_key.py`` gives for the current sources (the
install script names its stamp with the same function), and no ``install-error.txt`` may be there.

Exit status: 0 the report is written and every difference explained; 1 it is written, but a
differing fixture has no entry in differences.json, or its driver failed (crashed, broke the
protocol, timed out: that says nothing of phi-core, so no verdict explains it) — both listed as
unexplained — or an entry names a fixture that does not differ or a family nothing uses (listed on
stderr); 2 the suite could not be run (the driver is not built from these sources, or did not start).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
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
from report_parts import driver_failure, problem_sections, render, unexplained_lines, unsupported_list  # noqa: E402
sys.path.insert(0, str(HERE))
from cache_key import DEFAULT_RUSTC, cache_key, source_dir  # noqa: E402

DEFAULT_CACHE = Path.home() / ".cache" / "phi-test" / "phi-core"
BINARY = Path("target") / "debug" / "phi-core-driver"  # inside the cache (CARGO_TARGET_DIR)
JOBS = 4
VERDICTS = {
    "deviation": "phi-core deviates from its own seed",
    "spec": "SPEC decided otherwise",
    "suite": "suite defect (fixed)",
}
# what a run does not decide: ids phi-core generates (a sub-agent's session id) are UUIDs, which the
# runner's account may show cut short
UUID = re.compile(r"(?<![0-9A-Za-z])[0-9a-f]{8}(?:-[0-9a-f]{0,12}){1,4}")
STALE_BUILD = "built from other sources: run scripts/install-phi-core"


def cache_dir() -> Path:
    return Path(os.environ.get("PHI_CORE_CACHE") or DEFAULT_CACHE)


def installed(cache: Path) -> tuple[str | None, str]:
    """(the driver's path, "") when the cache holds a driver built from this checkout's sources,
    else (None, why not): the install script's error, "not built", a missing phi-core source, or
    :data:`STALE_BUILD` when the cache's stamp is not this checkout's key."""
    error = cache / "install-error.txt"
    if error.is_file():
        return None, error.read_text(encoding="utf-8").strip() or "scripts/install-phi-core failed"
    binary = cache / BINARY
    if not binary.is_file():
        return None, "not built"
    source = source_dir()
    if not source.is_dir():
        return None, f"phi-core source not found at {source} (PHI_CORE_SOURCE), so the build cannot be checked"
    if not (cache / f"built-{cache_key(source, rustc_path(cache))}").is_file():
        return None, STALE_BUILD
    return str(binary), ""


def rustc_path(cache: Path) -> str:
    """The compiler the install script used: RUSTC in the cache's env.sh."""
    env = cache / "env.sh"
    if env.is_file():
        found = re.search(r"RUSTC='([^']+)'", env.read_text(encoding="utf-8"))
        if found:
            return found.group(1)
    return DEFAULT_RUSTC


def rustc_version(cache: Path) -> str:
    """rustc's version from the cache's env.sh (the toolchain phi-core and the driver were built with)."""
    rustc = rustc_path(cache)
    try:
        out = subprocess.run([rustc, "--version"], capture_output=True, text=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return out[1] if len(out) > 1 else "unknown"


@dataclass
class Explanations:
    families: dict[str, dict[str, Any]]
    fixtures: dict[str, list[str]]


def load_explanations(path: Path) -> Explanations:
    """differences.json: ``families`` (id -> title, phi_core, spec, verdict, why, seed_clear?) and
    ``fixtures`` (fixture id -> the families that account for its difference)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    families: dict[str, dict[str, Any]] = data["families"]
    fixtures: dict[str, list[str]] = data["fixtures"]
    for name, family in families.items():
        missing = {"title", "phi_core", "spec", "verdict", "why"} - set(family)
        if missing:
            raise ValueError(f"{path.name}: family {name} needs {', '.join(sorted(missing))}")
        if family["verdict"] not in VERDICTS:
            raise ValueError(f"{path.name}: family {name}: verdict must be one of {', '.join(VERDICTS)}")
    for fixture_id, names in fixtures.items():
        if not names:
            raise ValueError(f"{path.name}: {fixture_id} names no family")
        unknown = [n for n in names if n not in families]
        if unknown:
            raise ValueError(f"{path.name}: {fixture_id} names unknown families {', '.join(unknown)}")
    return Explanations(families, fixtures)


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def verdict_text(family: dict[str, Any]) -> str:
    text = f"**{VERDICTS[family['verdict']]}**"
    if family.get("seed_clear"):
        text += " (against what the seed states plainly)"
    return f"{text}: {family['why']}"


def differences_table(explanations: Explanations, differing: list[str], problems: dict[str, list[str]],
                      failed: dict[str, str]) -> str:
    """One row per family that some differing fixture needs, in order of first use; a fixture with
    no entry, or whose driver failed (``failed``: its failure), is listed as unexplained."""
    uses: dict[str, list[str]] = {}
    unexplained = []
    for fixture_id in differing:
        names = explanations.fixtures.get(fixture_id)
        if names is None or fixture_id in failed:
            unexplained.append(fixture_id)
            continue
        for name in names:
            uses.setdefault(name, []).append(fixture_id)
    lines = ["| Difference | phi-core does | SPEC.md requires | Verdict | Fixtures |", "|---|---|---|---|---|"]
    for name, fixture_ids in uses.items():
        family = explanations.families[name]
        fixtures = ", ".join(f"`{f}`" for f in fixture_ids)
        lines.append(f"| <a id=\"{name}\"></a>**{cell(family['title'])}** (`{name}`) | {cell(family['phi_core'])} | "
                     f"{cell(family['spec'])} | {cell(verdict_text(family))} | {len(fixture_ids)}: {fixtures} |")
    shown_problems = {f: ([f"the driver failed, which says nothing of phi-core: {failed[f]}"] if f in failed
                          else problems[f]) for f in unexplained}
    lines += unexplained_lines(unexplained, shown_problems)
    return "\n".join(lines)


def verdict_summary(explanations: Explanations, differing: list[str]) -> str:
    """The families the ``differing`` fixtures use, by verdict."""
    used = {n for f in differing for n in explanations.fixtures.get(f, [])}
    lines = []
    for verdict, label in VERDICTS.items():
        names = [n for n in explanations.families if n in used and explanations.families[n]["verdict"] == verdict]
        if names:
            lines.append(f"- {label} ({len(names)}): " + ", ".join(f"[`{n}`](#{n})" for n in names))
    clear = [n for n in explanations.families if n in used and explanations.families[n].get("seed_clear")]
    if clear:
        lines.append("- of the SPEC decisions, against what the seed states plainly (" + str(len(clear)) + "): "
                     + ", ".join(f"[`{n}`](#{n})" for n in clear))
    return "\n".join(lines)


def results_table(fixtures: list[dict[str, Any]], outcomes: list[Outcome], explanations: Explanations,
                  failed: dict[str, str]) -> str:
    specs = {f["id"]: ", ".join(f.get("spec", [])) for f in fixtures}
    shown = {"pass": "pass", "fail": "differs", "timeout": "differs (timed out)", "unsupported": "unsupported"}
    lines = ["| Fixture | Requirements | Result | Differences |", "|---|---|---|---|"]
    for o in outcomes:
        names = explanations.fixtures.get(o.fixture_id, []) if o.status in ("fail", "timeout") else []
        why = ", ".join(f"[`{n}`](#{n})" for n in names)
        result = shown[o.status]
        if o.fixture_id in failed:
            result, why = "driver failed", "unexplained"
        lines.append(f"| `{o.fixture_id}` | {specs.get(o.fixture_id, '')} | {result} | {why} |")
    return "\n".join(lines)


def shown(line: str) -> str:
    """A line of the runner's account with the ids phi-core makes at random written ``<uuid>``, so
    that every run writes the same report."""
    return UUID.sub("<uuid>", line)


def report(fixtures: list[dict[str, Any]], outcomes: list[Outcome], explanations: Explanations, template: str,
           rustc: str) -> tuple[str, list[str], list[str]]:
    """(REPORT.md's text, unexplained differences, stale entries: fixtures that do not differ and
    families no differing fixture names). A fixture whose driver failed (:func:`driver_failure`) is
    unexplained whatever differences.json says: a crash or a broken protocol is the driver's, and
    a verdict on phi-core would hide it."""
    differing = [o for o in outcomes if o.status in ("fail", "timeout")]
    problems = {o.fixture_id: o.problems for o in differing}
    failed = {o.fixture_id: why for o in differing if (why := driver_failure(o)) is not None}
    ids = [o.fixture_id for o in differing]
    explained = [f for f in ids if f in explanations.fixtures and f not in failed]
    unexplained = [f for f in ids if f not in explained]
    used = {n for f in explained for n in explanations.fixtures[f]}
    # an entry of a fixture whose driver failed is not stale: the run could not show whether it holds
    named = {n for f in ids for n in explanations.fixtures.get(f, [])}
    stale = sorted(set(explanations.fixtures) - set(problems)) + sorted(
        f"family {n}" for n in set(explanations.families) - named)
    n = {status: sum(o.status == status for o in outcomes) for status in ("pass", "unsupported")}
    summary = (f"**Summary: {n['pass']} passed, {len(differing)} differ, {n['unsupported']} unsupported "
               f"(of {len(outcomes)} fixtures); {len(used)} difference families"
               + (f"; {len(unexplained)} differences unexplained" if unexplained else "")
               + (f" ({len(failed)} of them driver failures)" if failed else "") + ".**")
    text = render(template, {
        "rustc": rustc, "summary": summary,
        "verdicts": verdict_summary(explanations, explained),
        "differences": differences_table(explanations, ids, problems, failed),
        "unsupported_count": str(n["unsupported"]), "unsupported": unsupported_list(outcomes),
        "results": results_table(fixtures, outcomes, explanations, failed),
        "problems": problem_sections(fixtures, differing, shown)})
    return text, unexplained, stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--output", type=Path, default=HERE / "REPORT.md", help="where to write (default: REPORT.md)")
    args = parser.parse_args(argv)
    cache = cache_dir()
    binary, why_not = installed(cache)
    if binary is None:
        print(f"report.py: cannot run the suite on phi-core (cache {cache}): {why_not}", file=sys.stderr)
        return 2
    fixtures = load_fixtures()
    try:
        outcomes = run_all(shlex.quote(binary), fixtures, jobs=JOBS, mode=Mode("persistent"))
    except DriverStartError as error:
        print(f"report.py: the driver could not be started: {error}", file=sys.stderr)
        return 2
    explanations = load_explanations(HERE / "differences.json")
    template = (HERE / "REPORT.template.md").read_text(encoding="utf-8")
    text, unexplained, stale = report(fixtures, outcomes, explanations, template, rustc_version(cache))
    args.output.write_text(text, encoding="utf-8")
    counts = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "timeout", "unsupported")}
    print(f"report.py: wrote {args.output}: {counts['pass']} passed, {counts['fail'] + counts['timeout']} differ, "
          f"{counts['unsupported']} unsupported (of {len(outcomes)} fixtures)")
    for fixture_id in unexplained:
        outcome = next(o for o in outcomes if o.fixture_id == fixture_id)
        failure = driver_failure(outcome)
        if failure is not None:
            print(f"report.py: {fixture_id}: the driver failed ({failure}); no verdict on phi-core explains that",
                  file=sys.stderr)
        else:
            print(f"report.py: {fixture_id} differs and differences.json does not explain it", file=sys.stderr)
    for entry in stale:
        print(f"report.py: differences.json explains {entry}, which no differing fixture needs: remove it",
              file=sys.stderr)
    return 1 if unexplained or stale else 0


if __name__ == "__main__":
    sys.exit(main())
