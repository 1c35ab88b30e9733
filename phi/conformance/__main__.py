"""``python -m phi.conformance`` — run the conformance suite (SPEC §10).

Commands::

    run [--driver CMD] [--filter GLOB] [--fixtures DIR] [--jobs N] [--timeout-ms MS] [--report FILE]
    coverage [--write]        print (or write) phi/conformance/suite/COVERAGE.md; exit 1 if a requirement is missing
    record FIXTURE.json...    draft the expect block of fixtures from the reference driver

``run`` prints one line per fixture (with a readable diff on failure) and ends with
``N passed, N failed``. It exits 1 on any failure, and — when the whole suite ran against SPEC.md —
when a tested requirement has no fixture.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from . import coverage, default_conformance_dir
from .report import write_report
from .runner import REFERENCE_DRIVER, format_outcome, load_fixtures, run_all


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m phi.conformance", description="phi conformance suite")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run fixtures against a driver")
    run.add_argument("--driver", default=REFERENCE_DRIVER, help="driver command (default: the phi reference driver)")
    run.add_argument("--filter", default=None, help="glob on fixture id or file name")
    run.add_argument("--fixtures", type=Path, default=None, help="fixtures directory")
    run.add_argument("--jobs", type=int, default=4, help="drivers run at once (default 4)")
    run.add_argument("--timeout-ms", type=int, default=None,
                     help="per-fixture time limit (default: fixture's or 10000)")
    run.add_argument("--report", type=Path, default=None, help="also write a Markdown report here")
    run.add_argument("--verbose", "-v", action="store_true")
    cov = sub.add_parser("coverage", help="requirement id -> fixtures table")
    cov.add_argument("--fixtures", type=Path, default=None)
    cov.add_argument("--write", action="store_true", help="write phi/conformance/suite/COVERAGE.md")
    rec = sub.add_parser("record", help="draft expect blocks from the reference driver")
    rec.add_argument("paths", nargs="+", type=Path)
    return parser


def _fixtures_dir(arg: Path | None) -> Path:
    return arg if arg is not None else default_conformance_dir() / "fixtures"


def cmd_run(args: argparse.Namespace) -> int:
    directory = _fixtures_dir(args.fixtures)
    fixtures = load_fixtures(directory, args.filter)
    if not fixtures:
        print(f"no fixtures matched in {directory}")
        return 1
    started = time.monotonic()
    outcomes = run_all(args.driver, fixtures, args.jobs, args.timeout_ms,
                       progress=lambda o: print(format_outcome(o, args.verbose), flush=True))
    passed = sum(o.status == "pass" for o in outcomes)
    failed = sum(o.status == "fail" for o in outcomes)
    timed_out = sum(o.status == "timeout" for o in outcomes)
    unsupported = sum(o.status == "unsupported" for o in outcomes)
    status = 1 if failed or timed_out else 0
    spec = coverage.find_spec(directory.parent)
    if args.filter is None and spec is not None and args.driver == REFERENCE_DRIVER:
        gaps = coverage.missing(spec.read_text(encoding="utf-8"), fixtures)
        if gaps:
            print(f"coverage: no fixture for tested requirement(s) {', '.join(gaps)}")
            status = 1
    if args.report is not None:
        write_report(args.report, args.driver, fixtures, outcomes)
    if unsupported:
        print(f"{unsupported} unsupported by this driver")
    print(f"time: {time.monotonic() - started:.1f}s")
    print(f"{passed} passed, {failed} failed" + (f", {timed_out} timed out" if timed_out else ""))
    return status


def cmd_coverage(args: argparse.Namespace) -> int:
    directory = _fixtures_dir(args.fixtures)
    spec = coverage.find_spec(directory.parent)
    if spec is None:
        print(f"SPEC.md not found next to {directory.parent}")
        return 1
    text = spec.read_text(encoding="utf-8")
    fixtures = load_fixtures(directory)
    mutants = coverage.load_mutants(directory.parent)
    table = coverage.render(text, fixtures, mutants)
    if args.write:
        (directory.parent / "COVERAGE.md").write_text(table, encoding="utf-8")
    else:
        print(table, end="")
    status = 0
    gaps = coverage.missing(text, fixtures)
    if gaps:
        print(f"missing fixtures for: {', '.join(gaps)}", file=sys.stderr)
        status = 1
    stale = coverage.stale_mutant_killers(mutants, fixtures)
    if stale:
        print(f"mutants.json names fixtures that no longer exist ({', '.join(stale)}): run scripts/mutants.py",
              file=sys.stderr)
        status = 1
    return status


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "run":
        return cmd_run(args)
    if args.command == "coverage":
        return cmd_coverage(args)
    from .record import record

    record(args.paths, done=lambda path: print(f"recorded {path}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
