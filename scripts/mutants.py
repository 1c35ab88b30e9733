#!/usr/bin/env python3
"""Plant semantic bugs in the loop and tool execution; see which the conformance suite catches.

Each mutant is a small change (usually one line) that reverses one decision SPEC.md makes: the order
of the checks at a turn's start, which stop reasons run tools, where queues are read, when a failed
attempt may be retried, how usage is summed, where hooks fire, ... For each, the script copies the
``phi`` package to a temporary directory, applies the change, runs the whole conformance suite
against the reference driver with that copy first on ``PYTHONPATH``, and records whether any fixture
failed (the mutant is *killed*) or none did (it *survived*). It prints a line per mutant, the kill
rate, and a last line of JSON.

    .venv/bin/python scripts/mutants.py              # every mutant (a few minutes)
    .venv/bin/python scripts/mutants.py --only M07   # one mutant, verbose

A surviving mutant is either a gap in the suite (add a fixture) or a behaviour SPEC leaves open;
``OPEN`` below lists the latter with the reason.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from phi.conformance.runner import REFERENCE_DRIVER, load_fixtures, run_all  # noqa: E402


@dataclass(frozen=True)
class Mutant:
    key: str
    file: str  # relative to phi/
    old: str  # must occur exactly once in the file
    new: str
    decision: str  # what SPEC says, which the mutant reverses


MUTANTS = [
    # ---- the order of the checks at a turn's start (LOOP-4)
    Mutant("M01", "loop.py",
           "                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n"
           "                if self.limit_reached():\n                    return RunOutcome.LIMIT\n",
           "                if self.limit_reached():\n                    return RunOutcome.LIMIT\n"
           "                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n",
           "LOOP-4: cancellation is checked before the execution limits"),
    Mutant("M02", "loop.py",
           "                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n                self.announce_prompts()\n",
           "                self.announce_prompts()\n                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n",
           "LOOP-6: prompts are announced right after the first TurnStart"),
    Mutant("M03", "loop.py",
           "                self.announce_prompts()\n                self.deliver_pending()\n",
           "                self.deliver_pending()\n                self.announce_prompts()\n",
           "LOOP-4/LOOP-8: prompts first, then pending steering"),
    Mutant("M04", "loop.py",
           "and config.before_turn(context.messages, turn_index) is False:\n                    return RunOutcome.VETOED",
           "and config.before_turn(context.messages, turn_index) is False:\n                    pass",
           "LOOP-15: before_turn returning false ends the run"),
    # ---- which stop reasons run tools (LOOP-17, TOOL-9, TOOL-13)
    Mutant("M05", "loop.py", "                if reply.stop_reason in _FAILED:\n",
           "                if reply.stop_reason == StopReason.ERROR:\n",
           "LOOP-17: the tool calls of an aborted reply do not run"),
    Mutant("M06", "loop.py", "        if reply.stop_reason == StopReason.LENGTH:\n            runner.answer_truncated",
           "        if False:\n            runner.answer_truncated",
           "TOOL-9: the calls of a length reply never run"),
    Mutant("M07", "loop.py", "        elif calls:\n            runner.run(",
           "        elif calls and reply.stop_reason == StopReason.TOOL_USE:\n            runner.run(",
           "TOOL-13: the calls of a stop reply run"),
    # ---- where the queues are read (LOOP-7, LOOP-8, LOOP-17, LOOP-18)
    Mutant("M08", "loop.py", "if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:",
           "if reply.stop_reason == StopReason.LENGTH:",
           "LOOP-8: steering is read after a turn without tool calls"),
    Mutant("M09", "loop.py", "if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:",
           "if not more_tool_calls:",
           "LOOP-8: steering is read after a length turn"),
    Mutant("M10", "loop.py",
           "            if self.cancel.is_cancelled():\n                return RunOutcome.ABORTED\n            if not self.take(FOLLOW_UP):",
           "            if not self.take(FOLLOW_UP):",
           "LOOP-17: no follow-up is read after an abort"),
    Mutant("M11", "loop.py", "        self.take(STEERING)  # steering queued before the run",
           "        pass  # steering queued before the run",
           "LOOP-8: steering queued before the run is read before the first turn"),
    Mutant("M12", "loop.py", "            self.give_back_pending(announce=True)\n            self.emit(AgentEnd(",
           "            self.emit(AgentEnd(",
           "LOOP-18: messages taken but not delivered are given back"),
    Mutant("M13", "queues.py", "self._items.extendleft(reversed(messages))", "self._items.extend(messages)",
           "LOOP-18: put back at the front of the queue, in order"),
    Mutant("M14", "tool_exec.py", "            if poll_steering():\n",
           "            if poll_steering() and len(groups) == 1:\n",
           "TOOL-11: steering after a call (group) skips the remaining calls"),
    Mutant("M15", "tool_exec.py", "        if mode == ToolExecution.PARALLEL:\n            groups = [calls]",
           "        if mode == ToolExecution.PARALLEL:\n            groups = [[call] for call in calls]",
           "TOOL-3: parallel mode reads steering once, after the whole batch"),
    # ---- retries and visibility (ERR-1, ERR-2, EVT-7)
    Mutant("M16", "loop.py", "if failure is not None and not stream.visible and not self.cancel.is_cancelled():",
           "if failure is not None and not self.cancel.is_cancelled():",
           "ERR-2: an attempt is retried only while nothing of it is visible"),
    Mutant("M17", "loop.py", "if failure.is_retryable() and attempt < config.retry_config.max_retries:",
           "if attempt < config.retry_config.max_retries:",
           "ERR-1: only rate_limited and network errors are retried"),
    Mutant("M18", "loop.py", "                    overflow_retried = True\n",
           "                    overflow_retried = False\n",
           "ERR-4: one compaction retry per request"),
    Mutant("M19", "reply_stream.py", "        if not self.visible:\n            self.visible = True\n            self.emit(MessageStart(self.loop_id, reply))",
           "        if True:\n            self.visible = True\n            self.emit(MessageStart(self.loop_id, reply))",
           "EVT-7: one MessageStart, emitted with the first delta"),
    # ---- usage sums and limits (LOOP-10, LOOP-16)
    Mutant("M20", "loop.py", "        self.usage = self.usage.combine(reply.usage)", "        self.usage = reply.usage",
           "LOOP-16: AgentEnd.usage sums every reply"),
    Mutant("M21", "loop.py", "                    self.tracker.record_turn(reply.usage.tokens())",
           "                    self.tracker.record_turn(0)",
           "LOOP-10: the token limit counts the replies' tokens"),
    # ---- hook positions and arguments (LOOP-14)
    Mutant("M22", "loop.py",
           "        self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))\n"
           "        if self.config.after_turn is not None:\n            self.config.after_turn(self.context.messages, reply.usage)",
           "        if self.config.after_turn is not None:\n            self.config.after_turn(self.context.messages, reply.usage)\n"
           "        self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))",
           "LOOP-14: after_turn runs after TurnEnd"),
    Mutant("M23", "loop.py", "            config.after_loop(context.messages, self.usage)",
           "            config.after_loop(self.new_messages, self.usage)",
           "LOOP-14: after_loop receives the whole context"),
    Mutant("M24", "loop.py", "if reply.stop_reason == StopReason.ERROR and config.on_error is not None:",
           "if config.on_error is not None:",
           "LOOP-14/ERR-3: on_error fires for error replies only"),
    Mutant("M25", "tool_exec.py",
           "                config.before_tool_execution_update(call.name, call.id, text) is False:\n            return",
           "                config.before_tool_execution_update(call.name, call.id, text) is False:\n            pass",
           "TOOL-10: before_tool_execution_update returning false drops the update"),
    Mutant("M26", "tool_exec.py", "config.before_tool_execution(call.name, call.id, call.arguments) is False:",
           "config.before_tool_execution(call.name, call.id, call.arguments) is None:",
           "TOOL-8 / §4.1: only an explicit false vetoes"),
    # ---- results, timeouts, abort (TOOL-5, TOOL-6, CANCEL-3, TOOL-4)
    Mutant("M27", "tool_exec.py", "            for execution in self._run_group(group):",
           "            for execution in reversed(self._run_group(group)):",
           "TOOL-5: results are announced in call order"),
    Mutant("M28", "tool_exec.py", "self._abandon(ex, error_result(TIMED_OUT.format(ms=ex.timeout_ms)))",
           "self._abandon(ex, error_result(ABORTED))",
           "TOOL-6: a timed-out call says so"),
    Mutant("M29", "tool_exec.py",
           "grace_deadline = time.monotonic() + self.config.tool_abort_grace_ms / 1000.0",
           "grace_deadline = time.monotonic()",
           "CANCEL-3: running calls get a grace period to return their own result"),
    Mutant("M30", "tool_exec.py",
           "        if self.cancel.is_cancelled():\n            ex.result, ex.is_error, ex.finished = error_result(ABORTED), True, True\n            return ex\n",
           "",
           "CANCEL-3: calls not started at an abort do not run and get no events"),
    Mutant("M31", "tool_exec.py",
           "            for ex in executions:  # failures found before execution end right away",
           "            for ex in []:  # failures found before execution end right away",
           "TOOL-4: unknown tools and invalid arguments also get a Start/End pair"),
    # ---- the history (LOOP-12, LOOP-5) and identity (LOOP-13, EVT-5, EVT-9)
    Mutant("M32", "loop.py", "        if kind is AssistantMessage and message.stop_reason in _FAILED:",
           "        if False:",
           "LOOP-12: tool calls of failed replies are stripped from the model's view"),
    Mutant("M33", "loop.py", "        for message in unanswered_call_results(self.context.messages, known):",
           "        for message in []:",
           "LOOP-5: an exception leaves every call of the last reply answered"),
    Mutant("M34", "loop.py", "        number = _loop_counters.pop(key, 0) + 1",
           "        number = _loop_counters.pop(key, 0) + 2",
           "LOOP-13: N counts from 1"),
    Mutant("M35", "loop.py", "        if self.continuation:\n            return TurnTrigger.CONTINUATION",
           "        if self.continuation:\n            return self.config.first_turn_trigger",
           "EVT-5: the first turn of a continuation is triggered by Continuation"),
    Mutant("M36", "loop.py", "                    return RunOutcome.VETOED", "                    return RunOutcome.COMPLETED",
           "EVT-9: a before_turn veto is reported as vetoed"),
    Mutant("M37", "loop.py", "            for i in range(len(prompts) - 1, -1, -1):",
           "            for i in range(len(prompts)):",
           "LOOP-2: warnings go onto the last user prompt"),
]

# Mutants SPEC deliberately leaves open (a survivor listed here is not a gap in the suite).
OPEN: dict[str, str] = {
    "M10": "not observable: a follow-up read after an abort is given back at the next turn's cancellation "
           "check (LOOP-18), so the queues and events end the same; the check only saves the read",
}


def apply(mutant: Mutant, package: Path) -> None:
    path = package / mutant.file
    text = path.read_text(encoding="utf-8")
    if text.count(mutant.old) != 1:
        raise SystemExit(f"{mutant.key}: its target occurs {text.count(mutant.old)} times in phi/{mutant.file}; "
                         "update the mutant to the current code")
    path.write_text(text.replace(mutant.old, mutant.new), encoding="utf-8")


def run_suite(package_parent: str | None, fixtures: list, jobs: int) -> list[str]:
    """The ids of the fixtures that fail with the ``phi`` package found in ``package_parent`` (None:
    this checkout). The driver runs there, so that copy is the one ``python -m`` imports."""
    old_path, old_cwd = os.environ.get("PYTHONPATH"), os.getcwd()
    if package_parent is not None:
        os.environ["PYTHONPATH"] = package_parent + (os.pathsep + old_path if old_path else "")
        os.chdir(package_parent)
    try:
        outcomes = run_all(REFERENCE_DRIVER, fixtures, jobs=jobs, timeout_ms=15000)
    finally:
        os.chdir(old_cwd)
        if old_path is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = old_path
    return [o.fixture_id for o in outcomes if o.status in ("fail", "timeout")]


def run_mutant(mutant: Mutant, fixtures: list, jobs: int) -> tuple[bool, list[str], float]:
    """(killed, the fixtures that caught it, seconds). A fixture counts only if it fails again when
    run alone, so a slow machine cannot kill a mutant."""
    with tempfile.TemporaryDirectory(prefix=f"phi-{mutant.key}-") as tmp:
        package = Path(tmp) / "phi"
        shutil.copytree(ROOT / "phi", package, ignore=shutil.ignore_patterns("__pycache__"))
        apply(mutant, package)
        started = time.monotonic()
        failed = run_suite(tmp, fixtures, jobs)
        if failed:
            again = [f for f in fixtures if f["id"] in failed[:5]]
            confirmed = run_suite(tmp, again, 1)
            failed = confirmed or []
        return bool(failed), failed, time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", help="run one mutant (e.g. M07)")
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args()
    fixtures = load_fixtures(ROOT / "conformance" / "fixtures")
    baseline = run_suite(None, fixtures, args.jobs)
    if baseline:
        raise SystemExit(f"the unmutated suite fails ({', '.join(baseline)}): fix that first")
    mutants = [m for m in MUTANTS if args.only in (None, m.key)]
    killed, survivors = 0, []
    for mutant in mutants:
        dead, caught, seconds = run_mutant(mutant, fixtures, args.jobs)
        killed += dead
        status = "killed  " if dead else ("open    " if mutant.key in OPEN else "SURVIVED")
        shown = ", ".join(caught[:4]) + (f" (+{len(caught) - 4})" if len(caught) > 4 else "")
        print(f"{mutant.key} {status} {mutant.decision}  [{seconds:.0f}s] {shown}", flush=True)
        if not dead:
            survivors.append(mutant.key)
    rate = killed / len(mutants) if mutants else 0.0
    print(f"\n{killed} of {len(mutants)} mutants killed ({rate:.0%}); survivors: {', '.join(survivors) or 'none'}")
    for key in survivors:
        if key in OPEN:
            print(f"  {key} is behaviour SPEC leaves open: {OPEN[key]}")
    print(json.dumps({"mutants": len(mutants), "killed": killed, "kill_rate": round(rate, 3),
                      "survivors": survivors, "fixtures": len(fixtures)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
