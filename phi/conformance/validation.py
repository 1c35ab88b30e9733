"""Checking fixtures before anything runs (SPEC §10; issue 32): a fixture is run only when it is
strict JSON (no repeated key, no ``NaN``, nested at most :data:`.jsoncheck.MAX_DEPTH` deep), valid
against the shipped ``schema/fixture.schema.json`` and sound where a schema cannot say (a unique id
equal to the file name, requirement ids SPEC.md defines, event types the event schema knows, in
``when.event``, expected events and ``wait_for_event`` steps). Every problem
names the file, the JSON path and the reason; the other fixtures still run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from ..json_values import is_array, is_object
from .jsoncheck import MAX_DEPTH, json_path, load_json, lone_surrogates, too_deep
from .runner import FixtureDir, json_files


@dataclass(frozen=True)
class FixtureProblem:
    """Why one fixture file is not run: ``file``, the JSON path (``$`` for the whole file) and the reason."""

    file: str
    where: str
    reason: str

    def __str__(self) -> str:
        return f"{self.file}: {self.where}: {self.reason}"


def load_checked(directory: FixtureDir) -> tuple[list[dict[str, Any]], list[FixtureProblem]]:
    """The sound fixtures under ``directory`` (sorted by path, each with its ``_path``) and the
    problems of the others."""
    fixtures: list[dict[str, Any]] = []
    problems: list[FixtureProblem] = []
    for _name, entry in json_files(directory):
        path = str(entry)
        try:
            text = entry.read_text(encoding="utf-8")
            if too_deep(text):
                problems.append(FixtureProblem(path, "$", f"arrays and objects nested more than {MAX_DEPTH} deep"))
                continue
            data, repeated = load_json(text)
        except (ValueError, OSError, RecursionError) as error:  # not UTF-8, not JSON (NaN too), unreadable
            problems.append(FixtureProblem(path, "$", f"not a JSON file: {error}"))
            continue
        if repeated:  # JSON would keep only the last value: a second "expect" silently replaces the first
            problems += [FixtureProblem(path, json_path([*where, key]), f"key {key!r} appears more than once "
                                        "in this object") for where, key in repeated]
            continue
        unpaired = lone_surrogates(text, data)
        if unpaired:
            problems += [FixtureProblem(path, json_path(where).encode("ascii", "backslashreplace").decode(),
                                        "a \\u escape of half a surrogate pair: not a Unicode character")
                         for where in unpaired]
            continue
        try:
            found = list(_problems(data, path, Path(_name).stem))
        except RecursionError as error:  # a check that recurses (jsonschema) refused: still this file's problem
            found = [FixtureProblem(path, "$", f"could not be checked: {error}")]
        if found:
            problems += found
            continue
        data["_path"] = path
        fixtures.append(data)
    seen: dict[str, str] = {}
    unique: list[dict[str, Any]] = []
    for fixture in fixtures:
        first = seen.setdefault(fixture["id"], fixture["_path"])
        if first != fixture["_path"]:
            problems.append(FixtureProblem(fixture["_path"], "$.id", f"id {fixture['id']!r} is also the id of {first}"))
        else:
            unique.append(fixture)
    return unique, problems


def _problems(data: Any, path: str, stem: str) -> Iterator[FixtureProblem]:
    errors = sorted(_fixture_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    for error in errors[:8]:
        yield FixtureProblem(path, error.json_path, error.message[:300])
    if errors or not is_object(data):
        return
    if data["id"] != stem:  # README §1.1: the id is the file name, so that a failure names its file
        yield FixtureProblem(path, "$.id", f"{data['id']!r} is not the file name without .json ({stem!r})")
    known = _requirement_ids()
    for index, requirement in enumerate(data.get("spec", [])):
        if known and requirement not in known:
            yield FixtureProblem(path, f"$.spec[{index}]", f"{requirement!r} is not a requirement id of SPEC.md")
    events = _event_types()
    for index, action in enumerate(data.get("actions", [])):
        when = action.get("when") if is_object(action) else None
        if is_object(when) and "event" in when and when["event"] not in events:
            yield FixtureProblem(path, f"$.actions[{index}].when.event",
                                 f"{when['event']!r} is not an event type (one of {', '.join(sorted(events))})")
    for where, name in _event_patterns(data):
        if not is_object(name) and name not in events:  # a matcher ({"$regex": ...}) may stand for it
            yield FixtureProblem(path, where, f"{name!r} is not an event type of schema/event.schema.json")


def _event_patterns(data: dict[str, Any]) -> Iterator[tuple[str, Any]]:
    """``(JSON path, type)`` of every event pattern: expected events and ``wait_for_event`` steps
    (an unknown type there blocks its tool until the fixture times out)."""
    expect = data.get("expect", {})
    sequences = [(f"$.expect.{name}", expect.get(name, [])) for name in ("events", "child_events")]
    sequences += [(f"$.expect.branch_events[{i}]", events) for i, events in enumerate(expect.get("branch_events", []))]
    for where, sequence in sequences:
        for i, item in enumerate(sequence):
            group = item.get("unordered") if is_object(item) else None
            for j, event in (enumerate(group) if is_array(group) else [(None, item)]):
                if is_object(event) and "type" in event:
                    yield f"{where}[{i}]" + ("" if j is None else f".unordered[{j}]") + ".type", event["type"]
    tools = [(f"$.tools[{i}]", tool) for i, tool in enumerate(data.get("tools", []))]
    while tools:  # a sub-agent's tools too, at any depth
        where, tool = tools.pop(0)
        child = tool.get("sub_agent", {})
        tools += [(f"{where}.sub_agent.tools[{i}]", t) for i, t in enumerate(child.get("tools", []))]
        scripts = [(where + json_path([k])[1:], v) for k, v in tool.get("calls", {}).items()]
        for script_where, steps in scripts + [(f"{where}.default", tool.get("default", []))]:
            for i, step in enumerate(steps):
                if "wait_for_event" in step:
                    yield f"{script_where}[{i}].wait_for_event.type", step["wait_for_event"]["type"]


@lru_cache(maxsize=1)
def _fixture_validator() -> Any:
    import jsonschema

    from . import suite_files

    schema = json.loads((suite_files() / "schema" / "fixture.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


@lru_cache(maxsize=1)
def _requirement_ids() -> frozenset[str]:
    from . import suite_files

    try:
        data = json.loads((suite_files() / "requirements.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return frozenset()  # no index shipped: requirement ids are only checked by the schema's pattern
    return frozenset(data.get("requirements", {}))


@lru_cache(maxsize=1)
def _event_types() -> frozenset[str]:
    from . import suite_files

    schema = json.loads((suite_files() / "schema" / "event.schema.json").read_text(encoding="utf-8"))
    return frozenset(item["$ref"].rsplit("/", 1)[-1] for item in schema["oneOf"])


__all__ = ["FixtureProblem", "load_checked"]
