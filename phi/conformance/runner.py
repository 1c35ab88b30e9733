"""The conformance runner (SPEC §10): run fixtures on a driver, compare, summarise.

Fixtures are read from the package's ``suite/fixtures`` through :mod:`importlib.resources` (or any
directory). :func:`run_all` runs them on ``jobs`` driver sessions (:mod:`.drivers`) that take
fixtures from a shared queue — one process per fixture, or one long-lived process per session when
the driver announces persistent mode — and compares each fixture's output with its expectations
(:mod:`.compare`). Every line a driver writes is checked against the shipped event schema first
(:mod:`.lines`): a malformed line fails its fixture, or with ``lenient_events`` is only a warning.
Outcomes come back in fixture order.
"""

from __future__ import annotations

import json
import shlex
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Union

from ..log import get_logger
from .compare import DriverOutput, compare, parse_output, sort_output
from .drivers import TIMED_OUT, DriverSession, Mode, run_once
from .lines import check_lines
from .process import DriverStartError, RawRun, split_command

if TYPE_CHECKING:
    from importlib.abc import Traversable

DEFAULT_TIMEOUT_MS = 10_000
#: the longest time limit a fixture gets (one day); a larger ``timeout_ms`` or ``--timeout-ms`` is cut to it
MAX_TIMEOUT_MS = 86_400_000
DEFAULT_JOBS = 4
# this package's own name, so that a vendored copy runs its own driver
REFERENCE_DRIVER = f"{shlex.quote(sys.executable)} -m {__package__}.driver"
STATUSES = ("pass", "fail", "timeout", "unsupported")

FixtureDir = Union[Path, "Traversable"]

logger = get_logger(__name__)  # phi's loggers redact secrets (SPEC §17 OTEL-11)


@dataclass
class Outcome:
    fixture_id: str
    status: str  # one of STATUSES
    problems: list[str] = field(default_factory=list[str])
    seconds: float = 0.0
    stderr: str = ""
    warnings: list[str] = field(default_factory=list[str])  # malformed lines of a lenient run


def load_fixtures(directory: FixtureDir | None = None, pattern: str | None = None) -> list[dict[str, Any]]:
    """Every ``*.json`` under ``directory`` (default: the suite shipped in this package), sorted by
    path, optionally filtered by a glob on the fixture id or file name (see :mod:`.selection` for
    ``--only``/``--skip``)."""
    from .selection import matches_fixture_glob

    if directory is None:
        from . import suite_files

        directory = suite_files() / "fixtures"
    fixtures: list[dict[str, Any]] = []
    for name, entry in json_files(directory):
        data = json.loads(entry.read_text(encoding="utf-8"))
        data.setdefault("id", Path(name).stem)
        if pattern and not matches_fixture_glob(pattern, data["id"], Path(name).name):
            continue
        data["_path"] = str(entry)
        fixtures.append(data)
    return fixtures


def json_files(directory: FixtureDir, prefix: str = "") -> list[tuple[str, FixtureDir]]:
    """``(relative name, entry)`` of every ``*.json`` below ``directory``, sorted by name."""
    found: list[tuple[str, FixtureDir]] = []
    for entry in directory.iterdir():
        name = f"{prefix}{entry.name}"
        if entry.is_dir():
            found += json_files(entry, name + "/")
        elif entry.name.endswith(".json"):
            found.append((name, entry))
    return sorted(found, key=lambda item: item[0])


def judge(fixture: dict[str, Any], raw: RawRun, seconds: float, lenient_events: bool = False) -> Outcome:
    """The outcome of one fixture from what its driver wrote. A malformed line (:mod:`.lines`)
    fails the fixture, even one the driver says it does not support; with ``lenient_events`` a
    line that is JSON but not of the schema's shape is a warning and the fixture is judged on its
    expectations alone. Whatever goes wrong while
    judging fails this fixture, naming the error: no fixture is ever left without an outcome."""
    try:
        return _judge(fixture, raw, seconds, lenient_events)
    except Exception as error:  # a runner bug or a line no check foresaw: still this fixture's outcome
        logger.debug("judging fixture %s failed", fixture.get("id"), exc_info=True)
        problem = f"runner: judging this fixture's output raised {type(error).__name__}: {str(error)[:200]}"
        return Outcome(str(fixture.get("id")), "timeout" if raw.timed_out else "fail",
                       ([raw.failure] if raw.failure else []) + [problem], seconds, raw.stderr)


def _judge(fixture: dict[str, Any], raw: RawRun, seconds: float, lenient_events: bool) -> Outcome:
    checked = check_lines(raw.lines)
    # lenient relaxes the shape of a line only: a line that breaks the protocol itself (not JSON,
    # a repeated key, nested too deep) still fails its fixture
    warnings = [str(p) for p in checked.problems if lenient_events and not p.protocol]
    malformed = [str(p) for p in checked.problems if not lenient_events or p.protocol]
    output = sort_output(fixture, checked.items)
    if output.unsupported is not None and not raw.timed_out and not malformed:
        return Outcome(fixture["id"], "unsupported", [output.unsupported], seconds, raw.stderr, warnings)
    problems = ([raw.failure] if raw.failure else []) + malformed + compare(fixture, output)
    if raw.timed_out:
        return Outcome(fixture["id"], "timeout", problems, seconds, raw.stderr, warnings)
    return Outcome(fixture["id"], "fail" if problems else "pass", problems, seconds, raw.stderr, warnings)


def time_limit(fixture: dict[str, Any], timeout_ms: int | None) -> float:
    """The fixture's time limit in seconds: ``timeout_ms`` (``--timeout-ms``) when given, else the
    fixture's ``timeout_ms``, else :data:`DEFAULT_TIMEOUT_MS`; never more than :data:`MAX_TIMEOUT_MS`."""
    chosen = timeout_ms if timeout_ms is not None else fixture.get("timeout_ms")
    limit = float(chosen) if isinstance(chosen, (int, float)) and chosen > 0 else float(DEFAULT_TIMEOUT_MS)
    # a limit beyond what a thread can wait for (1e300 ms) raised OverflowError deep in queue.get
    return (limit if limit <= MAX_TIMEOUT_MS else float(MAX_TIMEOUT_MS)) / 1000.0


def run_driver(command: str, fixture: dict[str, Any], timeout_s: float) -> tuple[list[str], str, str | None]:
    """Run the driver on one fixture in a process of its own; (stdout lines, stderr, failure or None)."""
    raw = run_once(split_command(command), fixture, timeout_s)
    return raw.lines, raw.stderr, raw.failure


def run_one(command: str, fixture: dict[str, Any], timeout_ms: int | None = None,
            lenient_events: bool = False) -> Outcome:
    """One fixture in a process of its own."""
    started = time.monotonic()
    raw = run_once(split_command(command), fixture, time_limit(fixture, timeout_ms))
    return judge(fixture, raw, time.monotonic() - started, lenient_events)


class _Scheduler:
    """The fixtures of one run, handed to worker sessions from a shared queue; the outcomes are
    reported (``progress``) in fixture order as soon as each one and all before it are in."""

    def __init__(self, fixtures: list[dict[str, Any]], timeout_ms: int | None,
                 progress: Callable[[Outcome], None] | None, lenient_events: bool = False) -> None:
        self.fixtures, self.timeout_ms, self.progress = fixtures, timeout_ms, progress
        self.lenient_events = lenient_events
        self.outcomes: list[Outcome | None] = [None] * len(fixtures)
        self.next_index = self.reported = 0
        self.error: BaseException | None = None
        self.sessions: list[DriverSession] = []
        self.lock = threading.Lock()
        self.changed = threading.Condition(self.lock)

    def take(self) -> int | None:
        with self.lock:
            if self.error is not None or self.next_index >= len(self.fixtures):
                return None
            self.next_index += 1
            return self.next_index - 1

    def put(self, index: int, outcome: Outcome) -> None:
        with self.changed:
            self.outcomes[index] = outcome
            self.changed.notify_all()

    def stop(self, error: BaseException) -> None:
        with self.changed:
            self.error = self.error or error
            self.changed.notify_all()

    def work(self, command: str, mode: Mode) -> None:
        """One worker: a driver session running fixtures until none are left. An outcome is
        settled when the next fixture starts, so output the driver wrote after its ``done`` line
        is charged to the fixture it belongs to."""
        held: tuple[int, RawRun, float] | None = None
        try:
            session = DriverSession(command, mode)
        except DriverStartError as error:
            self.stop(error)
            return
        with self.lock:
            self.sessions.append(session)
        try:
            while (index := self.take()) is not None:
                if held is not None:
                    self._settle(held, session.strays())
                fixture = self.fixtures[index]
                started = time.monotonic()
                held = (index, session.run(fixture, time_limit(fixture, self.timeout_ms)), started)
        except BaseException as error:  # DriverStartError, or a bug here: run_all raises it
            self.stop(error)
            held = None
        finally:
            if held is not None:
                self._settle(held, session.last_strays())
            session.close()

    def _settle(self, held: tuple[int, RawRun, float], strays: list[str]) -> None:
        index, raw, started = held
        if strays:
            raw.failure = (raw.failure + "; " if raw.failure else "") + \
                f"protocol: {len(strays)} line(s) after the 'done' line, e.g. {strays[0][:100]!r}"
        self.put(index, judge(self.fixtures[index], raw, time.monotonic() - started, self.lenient_events))

    def abandon(self) -> None:
        """Kill every driver (the run was interrupted)."""
        self.stop(DriverStartError("interrupted"))
        with self.lock:
            sessions = list(self.sessions)
        for session in sessions:
            session.abandon()

    def report_in_order(self, workers: list[threading.Thread]) -> None:
        with self.changed:
            while self.reported < len(self.fixtures):
                outcome = self.outcomes[self.reported]
                if outcome is not None:
                    self.reported += 1
                    if self.progress is not None:
                        self.progress(outcome)
                    continue
                if self.error is not None or not any(w.is_alive() for w in workers):
                    return
                self.changed.wait(0.5)


def run_all(command: str, fixtures: list[dict[str, Any]], jobs: int = DEFAULT_JOBS, timeout_ms: int | None = None,
            progress: Callable[[Outcome], None] | None = None, mode: str | Mode = "auto",
            lenient_events: bool = False) -> list[Outcome]:
    """Run every fixture on ``jobs`` driver sessions; outcomes come back in fixture order.

    ``mode``: ``auto`` (persistent when the driver announces it, SPEC §10 protocol 2),
    ``persistent`` or ``per-fixture``. ``timeout_ms`` (positive) replaces every fixture's time
    limit (:func:`time_limit`). ``lenient_events``: malformed output lines are warnings
    instead of failures. Raises :class:`DriverStartError` when the driver cannot be started (then
    no outcomes are returned), and whatever else stopped a worker."""
    if timeout_ms is not None and not timeout_ms > 0:  # 0 used to mean "the default", -5 "time out at once"
        raise ValueError(f"timeout_ms must be positive, not {timeout_ms}")
    shared = mode if isinstance(mode, Mode) else Mode(mode)
    split_command(command)  # bad quoting is a start error before any thread runs
    scheduler = _Scheduler(fixtures, timeout_ms, progress, lenient_events)
    workers = [threading.Thread(target=scheduler.work, args=(command, shared), name=f"conformance-{n}", daemon=True)
               for n in range(max(1, min(jobs, len(fixtures))))]
    try:
        for worker in workers:
            worker.start()
        scheduler.report_in_order(workers)
        for worker in workers:
            worker.join()
    except BaseException:  # KeyboardInterrupt: drivers run in process groups of their own, so end them here
        scheduler.abandon()
        raise
    if scheduler.error is not None:
        raise scheduler.error
    scheduler.report_in_order(workers)
    return [o for o in scheduler.outcomes if o is not None]


_HEADS = {"pass": "PASS", "fail": "FAIL", "timeout": "TIMEOUT", "unsupported": "UNSUPPORTED"}
_SHOWN_PROBLEMS = 16
_SHOWN_WARNINGS = 4
_LINE_LIMIT = 220


def format_outcome(outcome: Outcome, verbose: bool = False) -> str:
    """``PASS id (0.01s)``; a failure adds its problems (the first differing event first, every
    line cut short, at most a screenful) and the end of the driver's stderr; the warnings of a
    lenient run (malformed lines) follow the head of any outcome."""
    text = f"{_HEADS[outcome.status]:<11} {outcome.fixture_id}  ({outcome.seconds:.2f}s)"
    warned = outcome.warnings if verbose else outcome.warnings[:_SHOWN_WARNINGS]
    warnings = [f"    warning: {_cut(w)}" for w in warned]
    if len(warned) < len(outcome.warnings):
        warnings.append(f"    ... {len(outcome.warnings) - len(warned)} more warning(s) (-v shows all)")
    if outcome.status == "unsupported":
        return "\n".join([f"{text}  {outcome.problems[0]}", *warnings])
    if outcome.status not in ("fail", "timeout") and not verbose:
        return "\n".join([text, *warnings])
    shown = outcome.problems if verbose else outcome.problems[:_SHOWN_PROBLEMS]
    details = warnings + [f"    {_cut(p)}" for p in shown]
    if len(shown) < len(outcome.problems):
        details.append(f"    ... {len(outcome.problems) - len(shown)} more (-v shows all; --report writes them)")
    if outcome.status in ("fail", "timeout") and outcome.stderr.strip():
        tail = outcome.stderr.strip().splitlines()[-6:]
        details += ["    driver stderr (last lines):"] + [f"      {_cut(line)}" for line in tail]
    return "\n".join([text, *details])


def _cut(line: str) -> str:
    return line if len(line) <= _LINE_LIMIT else line[:_LINE_LIMIT - 3] + "..."


__all__ = ["DEFAULT_JOBS", "DEFAULT_TIMEOUT_MS", "MAX_TIMEOUT_MS", "REFERENCE_DRIVER", "STATUSES", "TIMED_OUT", "DriverOutput",
           "DriverStartError", "Outcome", "compare", "format_outcome", "judge", "load_fixtures", "parse_output",
           "run_all", "run_driver", "run_one", "time_limit"]
