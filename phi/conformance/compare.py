"""Reading a driver's output and comparing it with a fixture (SPEC §10; phi/conformance/suite/README.md).

:func:`parse_output` checks the driver's lines (:mod:`.lines`) and sorts them (normalised first,
:mod:`.normalize`) into a :class:`DriverOutput`; :func:`compare` lists every way that output differs from the fixture's
``expect`` (:mod:`.match`) and from the loop invariants (:mod:`.invariants`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..json_values import is_array, is_object
from . import invariants
from .lines import check_lines
from .match import expand_length, is_matcher, matches, mismatches, sequence_mismatches
from .normalize import normalize_lines


@dataclass
class DriverOutput:
    """A driver's protocol lines sorted by kind (phi/conformance/suite/README.md "Driver protocol"); ``final`` is
    the closing ``result`` or ``error`` line, ``problems`` the lines that broke the protocol."""

    events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    hooks: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    executed: list[str] = field(default_factory=list[str])
    child_events: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    child_requests: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    branch_requests: dict[int, list[dict[str, Any]]] = field(default_factory=dict[int, list[dict[str, Any]]])
    queues: dict[str, Any] | None = None
    context: list[Any] | None = None
    final: dict[str, Any] | None = None
    unsupported: str | None = None
    problems: list[str] = field(default_factory=list[str])


def parse_output(fixture: dict[str, Any], lines: list[str]) -> DriverOutput:
    """A fixture's output lines checked (:func:`.lines.check_lines`: every malformed line or field
    is a problem) and sorted by kind."""
    checked = check_lines(lines)
    output = sort_output(fixture, checked.items)
    output.problems[:0] = [str(problem) for problem in checked.problems]
    return output


def sort_output(fixture: dict[str, Any], items: list[dict[str, Any]]) -> DriverOutput:
    """Protocol lines (JSON objects with a known ``kind``), normalised, sorted into a :class:`DriverOutput`."""
    output = DriverOutput()
    if any(item["kind"] == "unsupported" for item in items) and len(items) > 1:
        # README §2: unsupported comes *instead of* running, so it cannot excuse a run that went wrong
        output.problems.append(f"protocol: an 'unsupported' line must be the only line, not one of {len(items)}")
    configured = configured_hooks(fixture)
    for item in normalize_lines(fixture, items):
        kind = item["kind"]
        if kind == "hook" and item.get("name") not in configured:
            output.problems.append(f"protocol: a hook line for {item.get('name')!r}, which the fixture does not "
                                   "configure (only configured hooks and input filters are recorded, README §2)")
        if output.final is not None and kind != "unsupported":
            output.problems.append(f"protocol: {kind!r} line after the final {output.final['kind']!r} line")
        if kind == "event":
            output.events.append(item.get("event", {}))
        elif kind == "hook":
            output.hooks.append({"name": item.get("name"), "args": item.get("args", []),
                                 "at": _events_before(fixture, output.events)})
        elif kind == "provider_request" and type(item.get("branch")) is int:
            output.branch_requests.setdefault(item["branch"], []).append(item.get("request", {}))
        elif kind == "provider_request":
            output.requests.append(item.get("request", {}))
        elif kind == "child_event":
            output.child_events.append(item.get("event", {}))
        elif kind == "child_provider_request":
            output.child_requests.append(item.get("request", {}))
        elif kind == "tool_executed":
            output.executed.append(str(item.get("tool_call_id")))
        elif kind == "queues":
            output.queues = {"steering": item.get("steering", []), "follow_up": item.get("follow_up", [])}
        elif kind == "context":
            output.context = item.get("messages")
        elif kind in ("result", "error"):
            output.final = item
        elif kind == "unsupported" and len(items) == 1:
            output.unsupported = str(item.get("reason", "unsupported"))
        elif kind == "done" and item.get("id") != fixture.get("id"):
            output.problems.append(f"protocol: 'done' names fixture {item.get('id')!r}, not {fixture.get('id')!r}")
        elif kind != "unsupported":  # hello or done: the runner takes them out where protocol 2 has them
            output.problems.append(f"protocol: a {kind!r} line inside a fixture's output")
    return output


def configured_hooks(fixture: dict[str, Any]) -> set[str]:
    """The hook names a driver may write ``hook`` lines for: the hooks of the fixture's config, a
    branch's or the judge's (README §1.2, §1.7), and ``input_filter`` when there are input filters."""
    strategy = fixture.get("strategy")
    judge: dict[str, Any] = strategy.get("llm_judge", {}) if is_object(strategy) else {}
    configs: list[dict[str, Any]] = [fixture.get("config", {}), judge.get("config", {})]
    configs += [branch.get("config", {}) for branch in fixture.get("branches", [])]
    names: set[str] = set()
    for config in configs:
        names.update(config.get("hooks", {}))
        if config.get("input_filters"):
            names.add("input_filter")
    return names


def _events_before(fixture: dict[str, Any], events: list[dict[str, Any]]) -> int:
    """A hook's ``at``: the events emitted before it — in a parallel run only those of no branch
    (``ParallelLoopStart``, a judge's run), since how branches interleave is up to the threads."""
    if fixture.get("entry") != "agent_loop_parallel":
        return len(events)
    return len(invariants.split_parallel(events)[0])


def compare(fixture: dict[str, Any], output: DriverOutput) -> list[str]:
    """Every way the driver's output differs from the fixture's expectations (and, unless the
    fixture switches them off, from the loop invariants)."""
    expect = fixture.get("expect", {})
    problems = list(output.problems) + _final_problems(expect, output.final)
    problems += _expected_problems(fixture, expect, output)
    if fixture.get("invariants", True):
        problems += _invariant_problems(fixture, output)
    return problems


def _final_problems(expect: dict[str, Any], final: dict[str, Any] | None) -> list[str]:
    """The last line: the error the fixture expects, or a result."""
    if "error" in expect:
        if final is None or final["kind"] != "error":
            return [f"expected an error {expect['error']}, got {final['kind'] if final else 'no final line'}"]
        return [f"error.{p}" for p in mismatches(expect["error"], final)]
    if final is None:
        return ["protocol: no final result/error line"]
    if final["kind"] == "error":
        return [f"unexpected error: {final.get('error')}: {final.get('message')}"]
    return []


def _expected_problems(fixture: dict[str, Any], expect: dict[str, Any], output: DriverOutput) -> list[str]:
    """Each of the fixture's ``expect`` fields against what the driver wrote."""
    problems: list[str] = []
    final = output.final
    parallel = fixture.get("entry") == "agent_loop_parallel"
    events, branches = invariants.split_parallel(output.events) if parallel else (output.events, [])
    if "events" in expect:
        problems += _event_problems(expect["events"], events)
    for i, expected in enumerate(expect.get("branch_events", [])):
        got = branches[i] if i < len(branches) else []
        problems += _event_problems(expected, got, f"branch_events[{i}]")
    for i, expected in enumerate(expect.get("branch_provider_requests", [])):
        problems += sequence_mismatches(expected, output.branch_requests.get(i, []), f"branch_provider_requests[{i}]")
    if "messages" in expect and final is not None and final["kind"] == "result":
        problems += list(mismatches(expect["messages"], final.get("messages"), "messages"))[:8]
    if "provider_requests" in expect:
        problems += sequence_mismatches(expect["provider_requests"], output.requests, "provider_requests")
    if "hooks" in expect:
        problems += sequence_mismatches(expect["hooks"], output.hooks, "hooks")
    if "child_events" in expect:
        problems += _event_problems(expect["child_events"], output.child_events, "child_events")
    if "child_provider_requests" in expect:
        problems += sequence_mismatches(expect["child_provider_requests"], output.child_requests,
                                        "child_provider_requests")
    if "tools_executed" in expect and sorted(expect["tools_executed"]) != sorted(output.executed):
        problems.append(f"tools_executed: expected {sorted(expect['tools_executed'])}, got {sorted(output.executed)}")
    for name, written in (("queues", output.queues), ("context", output.context)):
        if name in expect:
            if written is None:
                problems.append(f"protocol: the fixture checks {name}, but the driver wrote no {name!r} line")
            else:
                problems += list(mismatches(expect[name], written, name))[:8]
    return problems


def _invariant_problems(fixture: dict[str, Any], output: DriverOutput) -> list[str]:
    """The loop invariants on the run's events, and on each sub-agent run's."""
    final = output.final
    raised = final is not None and final["kind"] == "error"
    result = final.get("messages") if final is not None and final["kind"] == "result" else None
    if fixture.get("entry") == "agent_loop_parallel":
        problems = invariants.check_parallel(output.events, result, raised=raised, context=output.context,
                                             selected=final.get("selected_config_index") if final else None,
                                             max_workers=fixture.get("max_workers"))
    else:
        problems = invariants.check(output.events, result, raised=raised, context=output.context)
    for loop_id, events in _by_loop(output.child_events).items():
        problems += [f"child run {loop_id}: {p}" for p in invariants.check(events, None)]
    return problems


def _by_loop(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        runs.setdefault(str(event.get("loop_id")), []).append(event)
    return runs


def _event_problems(expected: list[Any], actual: list[dict[str, Any]], what: str = "events") -> list[str]:
    """A count line when the lengths differ, then the first differing event: its index, both sides
    (the actual event shown with only the fields the fixture checks), what differs in it, and the
    event types around it."""
    problems: list[str] = []
    if expand_length(expected) != len(actual):
        problems.append(f"{what}: expected {expand_length(expected)} events, got {len(actual)}")
    found = first_difference(expected, actual)
    if found is None:
        return problems
    index, want, got = found
    if _is_group(want):
        group = want["unordered"]
        window = got if is_array(got) else []
        problems.append(f"{what}[{index}..{index + len(group) - 1}]: no order of the unordered group matches")
        problems.append(f"  expected (any order): {compact(group, 400)}")
        problems.append(f"  actual:               {compact([_project_like(group, e) for e in window], 400)}")
    else:
        label = f"{_type(want)} expected, {_type(got)} actual" if _type(want) != _type(got) else _type(want)
        problems.append(f"{what}[{index}]: first difference ({label})")
        problems.append(f"  expected: {compact(want)}")
        shown = project(want, got) if _type(want) == _type(got) else _without(got, ("timestamp", "loop_id"))
        problems.append(f"  actual:   {compact(shown)}")
        if is_object(want) and is_object(got) and _type(want) == _type(got):
            problems += [f"  {line}" for line in list(mismatches(want, got))[:3]]
    problems += _types_around(expected, actual, index)
    return problems


_MISSING = "<missing>"


def first_difference(expected: list[Any], actual: list[Any]) -> tuple[int, Any, Any] | None:
    """``(index, expected item, actual item)`` of the first position where ``actual`` does not
    match ``expected`` (an unordered group is compared whole, with the window of actual items it
    covers); the expected item is None for an extra actual item, the actual one None for a missing one."""
    position = 0
    for item in expected:
        if _is_group(item):
            size = len(item["unordered"])
            window = actual[position:position + size]
            if len(window) < size or sequence_mismatches([item], window, ""):
                return position, item, window
            position += size
            continue
        if position >= len(actual):
            return position, item, None
        if not matches(item, actual[position]):
            return position, item, actual[position]
        position += 1
    return (position, None, actual[position]) if position < len(actual) else None


def project(expected: Any, actual: Any) -> Any:
    """``actual`` cut down to the keys ``expected`` lists (recursively), so both sides of a
    difference line up; the event type is always kept."""
    if is_object(expected) and is_object(actual) and not is_matcher(expected):
        keys = (["type"] if "type" in actual and "type" not in expected else []) + list(expected)
        return {k: project(expected.get(k), actual[k]) if k in actual else _MISSING for k in keys}
    if is_array(expected) and is_array(actual) and len(expected) == len(actual):
        return [project(e, a) for e, a in zip(expected, actual)]
    return actual


def _without(value: Any, keys: tuple[str, ...]) -> Any:
    return {k: v for k, v in value.items() if k not in keys} if is_object(value) else value


def _project_like(group: list[Any], actual: Any) -> Any:
    """``actual`` projected onto the first expected item of its type (of an unordered group)."""
    same = [e for e in group if _type(e) == _type(actual)]
    return project(same[0], actual) if same else actual


def compact(value: Any, limit: int = 240) -> str:
    """One line of JSON, cut at ``limit`` characters."""
    if value is None:
        return "(nothing)"
    text = json.dumps(value, ensure_ascii=False, separators=(", ", ": "), default=str)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _is_group(item: Any) -> bool:
    return is_object(item) and set(item) == {"unordered"} and is_array(item["unordered"])


def _type(item: Any) -> str:
    if item is None:
        return "nothing"
    return str(item.get("type", "?")) if is_object(item) else "?"


def _types_around(expected: list[Any], actual: list[dict[str, Any]], index: int) -> list[str]:
    """The event types two before to three after ``index``, expected beside actual."""
    want: list[str] = []
    for item in expected:
        want += ["~" + _type(e) for e in item["unordered"]] if _is_group(item) else [_type(item)]
    got = [_type(e) for e in actual]
    rows = range(max(0, index - 2), min(max(len(want), len(got)), index + 4))
    lines = ["  event types around it (expected | actual; ~ any order):"]
    for i in rows:
        left, right = (want[i] if i < len(want) else ""), (got[i] if i < len(got) else "")
        lines.append(f"    {'*' if i == index else ' '} {i:3d}  {left:<24} | {right}")
    return lines
