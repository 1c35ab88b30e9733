"""``phi-conformance`` / ``python -m phi.conformance`` — run the conformance suite (SPEC §10).

Commands::

    run [--driver CMD] [--only SEL] [--skip SEL] [--list] [--jobs N] [--mode M] [--report FILE]
        [--lenient-events] ...
    list [--only SEL] [--skip SEL]     the fixtures a run would choose
    coverage [--write]                 print (or write) suite/COVERAGE.md; exit 1 if a requirement is missing
    requirements [--write]             print (or write) suite/requirements.json (sections of SPEC.md);
                                       --write also copies SPEC.md into suite/
    spec                               the path of SPEC.md as shipped with the suite
    record FIXTURE.json...             draft the expect block of fixtures from the reference driver

``run`` prints one line per fixture (the first difference on a failure) and ends with
``N passed, N failed``. Exit status: :data:`EXIT_HELP`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from . import coverage, default_conformance_dir, spec_file, suite_files
from .drivers import MODES, Mode
from .report import RunInfo, write_report
from .runner import DEFAULT_JOBS, MAX_TIMEOUT_MS, REFERENCE_DRIVER, DriverStartError, Outcome, format_outcome, load_fixtures, run_all
from .selection import load_index, parse_spec, select

EXIT_HELP = """exit status:
  0  every fixture passed (unsupported fixtures do not count against a driver)
  1  a fixture failed or timed out (a malformed driver output line fails its fixture unless
     --lenient-events); or, in a repository checkout running the whole suite on the reference
     driver, a requirement marked [tested] in SPEC.md has no fixture
  2  bad usage, no fixture selected, the driver could not be started, or a fixture is invalid (not
     JSON, not valid against schema/fixture.schema.json, a repeated id, an unknown requirement id or
     event type: each named with its file and JSON path; the valid fixtures still run)"""

SELECTOR_HELP = ("a fixture id or glob (tool-*), a SPEC section (§4, 4.3) or a requirement id or family "
                 "(LOOP-8, LOOP); repeat the option or separate with commas")


def _prog() -> str:
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else ""
    return "phi-conformance" if name.startswith("phi-conformance") else "python -m phi.conformance"


def _add_selection(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--only", action="append", metavar="SEL", help=f"run only these: {SELECTOR_HELP}")
    parser.add_argument("--filter", action="append", dest="only", metavar="GLOB", help=argparse.SUPPRESS)
    parser.add_argument("--skip", action="append", metavar="SEL", help="leave these out (same forms as --only)")
    parser.add_argument("--fixtures", type=Path, default=None,
                        help="a fixtures directory (default: the suite shipped with this package)")


def _parser(prog: str | None = None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog or _prog(), description="The phi agent-loop conformance suite "
                                     "(SPEC §10): run its fixtures against a driver for any implementation.\n"
                                     "The suite (SPEC.md, README.md, DRIVERS.md, fixtures/) is in\n"
                                     f"  {suite_files()}",
                                     epilog=EXIT_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run fixtures against a driver", epilog=EXIT_HELP,
                         formatter_class=argparse.RawDescriptionHelpFormatter)
    run.add_argument("--driver", default=REFERENCE_DRIVER,
                     help='driver command, e.g. "node my-driver.mjs" (default: the phi reference driver)')
    _add_selection(run)
    run.add_argument("--list", action="store_true", help="list the chosen fixtures instead of running them")
    run.add_argument("--jobs", "-j", type=_jobs, default=DEFAULT_JOBS,
                     help=f"driver processes at once (default {DEFAULT_JOBS})")
    run.add_argument("--mode", choices=MODES, default="auto",
                     help="auto (default): one persistent process per job when the driver announces it, "
                          "else one process per fixture (see DRIVERS.md)")
    run.add_argument("--timeout-ms", type=_timeout_ms, default=None,
                     help="per-fixture time limit in milliseconds, 1 or more (default: the fixture's timeout_ms, "
                          f"else 10000; at most {MAX_TIMEOUT_MS}, a larger one is cut to that)")
    run.add_argument("--report", type=Path, action="append", default=[], metavar="FILE",
                     help="also write a report: .xml JUnit XML, .json JSON, else Markdown (repeatable)")
    run.add_argument("--lenient-events", action="store_true",
                     help="a driver output line that is not valid against schema/event.schema.json (or breaks a "
                          "rule of SPEC §3 it cannot state) is a warning, and the fixture is judged on its "
                          "expectations only; by default such a line fails its fixture, named by line number, "
                          "event type, JSON path and reason")
    run.add_argument("--verbose", "-v", action="store_true", help="show every problem, also of passing fixtures")
    listing = sub.add_parser("list", help="list the fixtures (id, requirements, title)")
    _add_selection(listing)
    cov = sub.add_parser("coverage", help="requirement id -> fixtures table")
    cov.add_argument("--fixtures", type=Path, default=None)
    cov.add_argument("--write", action="store_true", help="write phi/conformance/suite/COVERAGE.md")
    req = sub.add_parser("requirements", help="SPEC.md sections and requirement ids as JSON (needs SPEC.md)")
    req.add_argument("--write", action="store_true",
                     help="write phi/conformance/suite/requirements.json and copy SPEC.md next to it")
    sub.add_parser("spec", help="print the path of SPEC.md as shipped with the suite")
    rec = sub.add_parser("record", help="draft expect blocks from the reference driver")
    rec.add_argument("paths", nargs="+", type=Path)
    return parser


def _fixtures_dir(arg: Path | None) -> Path:
    return arg if arg is not None else default_conformance_dir() / "fixtures"


def _chosen(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The fixtures ``--fixtures``/``--only``/``--skip`` choose (raises on a missing directory);
    the problems of fixtures that cannot run are printed and kept in ``args.invalid``."""
    from . import suite_files
    from .validation import load_checked

    if args.fixtures is not None and not args.fixtures.is_dir():
        raise FileNotFoundError(f"no fixtures directory {args.fixtures}")
    fixtures, args.invalid = load_checked(args.fixtures if args.fixtures is not None else suite_files() / "fixtures")
    for problem in args.invalid:
        print(f"INVALID     {problem}", file=sys.stderr)
    suite = args.fixtures.parent if args.fixtures is not None else None
    only: list[str] = args.only or []
    skip: list[str] = args.skip or []
    index = load_index(suite) if any(s for s in only + skip) else None
    return select(fixtures, args.only, args.skip, index)


def _at_least_one(what: str) -> Callable[[str], int]:
    """An argparse type for a whole number of ``what`` that must be 1 or more (``-j``, ``--timeout-ms``)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of {what}") from None
        if value < 1:
            raise argparse.ArgumentTypeError(f"{value} {what}: give 1 or more")
        return value

    return parse


_jobs = _at_least_one("driver processes")
_timeout_ms = _at_least_one("milliseconds")


def cmd_list(args: argparse.Namespace) -> int:
    try:
        fixtures = _chosen(args)
    except (LookupError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    width = max((len(f["id"]) for f in fixtures), default=0)
    for fixture in fixtures:
        print(f"{fixture['id']:<{width}}  {','.join(fixture.get('spec', [])):<28}  {fixture.get('title', '')}")
    print(f"{len(fixtures)} fixtures" + (f", {len(args.invalid)} invalid (see above)" if args.invalid else ""))
    return 0 if fixtures and not args.invalid else 2


def cmd_run(args: argparse.Namespace) -> int:
    if args.list:
        return cmd_list(args)
    try:
        fixtures = _chosen(args)
    except (LookupError, OSError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if not fixtures:
        print("error: no fixtures selected" + (" (the others are invalid, see above)" if args.invalid else ""),
              file=sys.stderr)
        return 2
    for path in args.report:
        if not path.parent.is_dir():
            print(f"error: cannot write the report {path}: no directory {path.parent}", file=sys.stderr)
            return 2
    mode = Mode(args.mode)
    started = time.monotonic()
    try:
        outcomes = run_all(args.driver, fixtures, max(1, args.jobs), args.timeout_ms, mode=mode,
                           progress=lambda o: print(format_outcome(o, args.verbose), flush=True),
                           lenient_events=args.lenient_events)
    except DriverStartError as error:
        print(f"error: the driver could not be started: {error}", file=sys.stderr)
        return 2
    info = RunInfo(args.driver, time.monotonic() - started, "persistent" if mode.persistent else "per-fixture",
                   coverage_gaps=_coverage_gaps(args, fixtures))
    for path in args.report:
        write_report(path, info, fixtures, outcomes)
    status = _summary(outcomes, info, min(args.jobs, len(fixtures)))  # run_all starts no more sessions than that
    if args.invalid:
        print(f"{len(args.invalid)} problem(s) in fixtures that were not run (INVALID above)")
        return 2
    return status


def _coverage_gaps(args: argparse.Namespace, fixtures: list[dict[str, Any]]) -> list[str]:
    """Tested requirements without a fixture — checked only for a whole-suite run of the reference
    driver in a checkout (:func:`coverage.find_spec` looks for the repository's SPEC.md, which an installed
    package does not have; its copy in ``suite/`` was checked against the fixtures in the repository)."""
    if args.only or args.skip or args.driver != REFERENCE_DRIVER:
        return []
    root = args.fixtures.parent if args.fixtures is not None else suite_files()
    spec = coverage.find_spec(root) if isinstance(root, Path) else None
    return [] if spec is None else coverage.missing(spec.read_text(encoding="utf-8"), fixtures)


def _summary(outcomes: list[Outcome], info: RunInfo, jobs: int) -> int:
    n = {s: sum(o.status == s for o in outcomes) for s in ("pass", "fail", "timeout", "unsupported")}
    if info.coverage_gaps:
        print(f"coverage: no fixture for tested requirement(s) {', '.join(info.coverage_gaps)}")
    if n["unsupported"]:
        print(f"{n['unsupported']} unsupported by this driver")
    if n["timeout"]:
        print(f"{n['timeout']} timed out (counted as failed)")
    warned = sum(bool(o.warnings) for o in outcomes)
    if warned:
        print(f"{warned} with malformed output lines (warnings: --lenient-events)")
    print(f"time: {info.seconds:.1f}s ({info.mode} driver, {jobs} job{'s' if jobs != 1 else ''})")
    print(f"{n['pass']} passed, {n['fail'] + n['timeout']} failed")
    return 1 if n["fail"] or n["timeout"] or info.coverage_gaps else 0


def cmd_coverage(args: argparse.Namespace) -> int:
    directory = _fixtures_dir(args.fixtures)
    spec = coverage.find_spec(directory.parent)
    if spec is None:
        print(f"SPEC.md not found next to {directory.parent}")
        return 1
    text = spec.read_text(encoding="utf-8")
    fixtures = load_fixtures(directory)
    mutants = coverage.load_mutants(directory.parent)
    table = coverage.render(text, fixtures, mutants, coverage.load_blind_sets(directory.parent))
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


def cmd_requirements(args: argparse.Namespace) -> int:
    root = suite_files()
    spec = coverage.find_spec(root) if isinstance(root, Path) else None
    if spec is None:
        print("error: SPEC.md not found (requirements.json is generated in a repository checkout)", file=sys.stderr)
        return 2
    source = spec.read_text(encoding="utf-8")
    text = parse_spec(source).render()
    if args.write:
        # the suite ships the specification it tests: the copy and the index are made from the same text
        (default_conformance_dir() / "requirements.json").write_text(text, encoding="utf-8")
        (default_conformance_dir() / "SPEC.md").write_text(source, encoding="utf-8")
    else:
        print(text, end="")
    return 0


def cmd_spec() -> int:
    """Print where the shipped SPEC.md is (a reader with only the installed package needs it)."""
    spec = spec_file()
    if not spec.is_file():
        print(f"error: SPEC.md is missing from the suite at {suite_files()}", file=sys.stderr)
        return 2
    print(spec)
    return 0


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP reached the runner: raised in the main thread like Ctrl-C's
    KeyboardInterrupt, so that run_all ends every driver's process group on the way out (the
    drivers run in sessions of their own: a signal to the runner alone would orphan them)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _raise_terminated(signum: int, frame: object) -> None:
    raise Terminated(signum)


def _ending_signals() -> list[signal.Signals]:
    if threading.current_thread() is not threading.main_thread():  # only the main thread may set handlers
        return []
    return [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    """The command line (``phi-conformance``); returns the exit status (see :data:`EXIT_HELP`):
    130 after Ctrl-C, 128 + the signal's number after SIGTERM or SIGHUP (the drivers ended first)."""
    args = _parser(prog).parse_args(argv)
    previous = {signum: signal.signal(signum, _raise_terminated) for signum in _ending_signals()}
    try:
        return _dispatch(args)
    except Terminated as stop:  # run_all has ended every driver's process group
        print(f"terminated ({stop})", file=sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:  # run_all has ended every driver's process group
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the output went into `head` or a pager that quit: end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "run":
        return cmd_run(args)
    if args.command == "list":
        return cmd_list(args)
    if args.command == "coverage":
        return cmd_coverage(args)
    if args.command == "requirements":
        return cmd_requirements(args)
    if args.command == "spec":
        return cmd_spec()
    from .record import record

    record(args.paths, done=lambda path: print(f"recorded {path}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
