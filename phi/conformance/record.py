"""Draft a fixture's ``expect`` from the reference driver (a maintainer's tool, SPEC §10).

``python -m phi.conformance record FIXTURE.json...`` runs each fixture through the reference driver
and writes ``expect`` with the fields worth checking (timestamps, zero usage, null optionals and
per-event loop ids are left out). The result is a draft: read it against SPEC.md before committing,
and wrap completion-order groups in ``{"unordered": [...]}`` by hand.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable

from ..json_values import is_object
from .compare import parse_output
from .invariants import split_parallel
from .runner import REFERENCE_DRIVER, run_driver

_ZERO_USAGE = {"input": 0, "output": 0, "reasoning": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0}


def prune_message(message: Any) -> Any:
    if not is_object(message):
        return message
    out: dict[str, Any] = {}
    for key, value in message.items():
        if key in ("timestamp", "model", "provider"):
            continue
        if key == "usage" and value == _ZERO_USAGE:
            continue
        if value is None:
            continue
        if key == "error_message":
            # the wording is the implementation's; check the provider's message is in it
            if value == "aborted":
                continue
            value = {"$contains": value.rsplit(": ", 1)[-1]}
        out[key] = value
    return out


def prune_event(event: dict[str, Any]) -> dict[str, Any]:
    kind = event.get("type")
    out: dict[str, Any] = {}
    for key, value in event.items():
        if key == "timestamp" or (key == "loop_id" and kind not in ("AgentStart", "AgentEnd")):
            continue
        if value is None:
            if key in ("parent_loop_id", "continuation_kind"):  # EVT-2: AgentStart carries them, null or not
                out[key] = value
            continue
        if key == "message" and kind == "MessageStart" and value.get("role") == "assistant":
            value = {"role": "assistant"}  # the snapshot before the first delta is not specified
        elif key == "message" and kind == "MessageUpdate":
            value = {"role": value.get("role"), "content": value.get("content")}
        elif key == "message":
            value = prune_message(value)
        elif key in ("messages", "tool_results"):
            value = [prune_message(m) for m in value]
        elif key in ("result", "partial_result") and is_object(value):
            value = {k: v for k, v in value.items() if v is not None}
        elif key == "usage" and value == _ZERO_USAGE and kind == "TurnEnd":
            continue
        out[key] = value
    return out


def prune_request(request: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"messages": [prune_message(m) for m in request.get("messages", [])]}
    if request.get("system_prompt"):
        out["system_prompt"] = request["system_prompt"]
    if request.get("tools"):
        out["tools"] = [{"name": t.get("name")} for t in request["tools"]]
    if request.get("api_key") is not None:
        out["api_key"] = request["api_key"]
    return out


def draft_expect(fixture: dict[str, Any], command: str = REFERENCE_DRIVER) -> dict[str, Any]:
    lines, stderr, failure = run_driver(command, fixture, 20.0)
    if failure:
        raise RuntimeError(f"{fixture.get('id')}: {failure}\n{stderr}")
    output = parse_output(fixture, lines)
    expect: dict[str, Any] = {}
    final = output.final or {}
    if final.get("kind") == "error":
        expect["error"] = {"error": final.get("error")}
    events = output.events
    if fixture.get("entry") == "agent_loop_parallel":
        events, branches = split_parallel(output.events)
        expect["branch_events"] = [[prune_event(e) for e in branch] for branch in branches]
        expect["branch_provider_requests"] = [[prune_request(r) for r in output.branch_requests.get(i, [])]
                                              for i in range(len(branches))]
    expect["events"] = [prune_event(e) for e in events]
    if final.get("kind") == "result":
        expect["messages"] = [prune_message(m) for m in final.get("messages", [])]
    expect["provider_requests"] = [prune_request(r) for r in output.requests]
    if output.hooks or fixture.get("config", {}).get("hooks"):
        expect["hooks"] = output.hooks  # with hooks installed, "none was called" is worth checking too
    expect["tools_executed"] = sorted(output.executed)
    if output.child_events:
        expect["child_events"] = [prune_event(e) for e in output.child_events]
        expect["child_provider_requests"] = [prune_request(r) for r in output.child_requests]
    queued = any(isinstance(a.get("do"), dict) and ("steer" in a["do"] or "follow_up" in a["do"])
                 for a in fixture.get("actions", []))
    if output.queues is not None and (queued or any(output.queues.values())):
        expect["queues"] = {name: [prune_message(m) for m in messages] for name, messages in output.queues.items()}
    if output.context is not None and final.get("kind") == "error":
        expect["context"] = [prune_message(m) for m in output.context]
    return expect


def record(paths: list[Path], command: str = REFERENCE_DRIVER, done: Callable[[Path], None] | None = None) -> None:
    """Rewrite each fixture file with a drafted ``expect``; ``done(path)`` after each one."""
    for path in paths:
        fixture = json.loads(path.read_text(encoding="utf-8"))
        fixture["expect"] = draft_expect(fixture, command)
        path.write_text(json.dumps(fixture, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        if done is not None:
            done(path)
