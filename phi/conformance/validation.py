"""Checking fixtures before anything runs (SPEC §10; issue 32): a fixture is run only when it is
JSON, valid against the shipped ``schema/fixture.schema.json`` and sound where a schema cannot say
(a unique id, requirement ids SPEC.md defines, event types the event schema knows). Every problem
names the file, the JSON path and the reason; the other fixtures still run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Iterator

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
            data = json.loads(entry.read_text(encoding="utf-8"))
        except (ValueError, OSError, RecursionError) as error:  # not UTF-8, not JSON, unreadable
            problems.append(FixtureProblem(path, "$", f"not a JSON file: {error}"))
            continue
        found = list(_problems(data, path))
        if found:
            problems += found
            continue
        data["_path"] = path
        fixtures.append(data)
    seen: dict[str, str] = {}
    unique = []
    for fixture in fixtures:
        first = seen.setdefault(fixture["id"], fixture["_path"])
        if first != fixture["_path"]:
            problems.append(FixtureProblem(fixture["_path"], "$.id", f"id {fixture['id']!r} is also the id of {first}"))
        else:
            unique.append(fixture)
    return unique, problems


def _problems(data: Any, path: str) -> Iterator[FixtureProblem]:
    errors = sorted(_fixture_validator().iter_errors(data), key=lambda e: list(e.absolute_path))
    for error in errors[:8]:
        yield FixtureProblem(path, error.json_path, error.message[:300])
    if errors or not isinstance(data, dict):
        return
    known = _requirement_ids()
    for index, requirement in enumerate(data.get("spec", [])):
        if known and requirement not in known:
            yield FixtureProblem(path, f"$.spec[{index}]", f"{requirement!r} is not a requirement id of SPEC.md")
    events = _event_types()
    for index, action in enumerate(data.get("actions", [])):
        when = action.get("when") if isinstance(action, dict) else None
        if isinstance(when, dict) and "event" in when and when["event"] not in events:
            yield FixtureProblem(path, f"$.actions[{index}].when.event",
                                 f"{when['event']!r} is not an event type (one of {', '.join(sorted(events))})")


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
