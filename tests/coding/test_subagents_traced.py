"""``phi --otel`` traces a coding session's ``spawn_agent`` children (SPEC §14 CODE-9, §17 OTEL-3):
each child's ``invoke_agent`` span arrives at the OTLP receiver in the parent's trace, under the run
that spawned it — grandchildren too."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("opentelemetry.exporter.otlp.proto.http", reason="the test extra installs the OTLP exporter")

from observability.receiver import Receiver, attributes  # noqa: E402
from phi.cli.tracing import TracedSessions  # noqa: E402

from phi.coding import SessionConfig  # noqa: E402

from .dialects import Dialect, session_for  # noqa: E402
from .wire import server  # noqa: E402,F401 (the fixture)
from .wire import Call, Turn, tool_outputs  # noqa: E402

D = Dialect("anthropic")


def spawned(body):
    return [json.loads(o)["agent_id"] for o in tool_outputs("anthropic", body) if '"agent_id"' in o]


def test_children_and_grandchildren_are_spans_under_the_run_that_spawned_them(server, tmp_path, monkeypatch):
    server.script("Grandchild job", Turn("grandchild done"))
    server.script("Child job", Turn(calls=[D.spawn("Grandchild job")]),
                  lambda body: Turn(calls=[Call("wait", {"agent_id": spawned(body)[0]})]), Turn("child done"))
    server.script("Delegate", Turn(calls=[D.spawn("Child job")]),
                  lambda body: Turn(calls=[Call("wait", {"agent_id": spawned(body)[0]})]), Turn("parent done"))
    with Receiver() as receiver:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.endpoint)
        sessions = TracedSessions(tmp_path / "sessions")
        session = session_for("anthropic", server, str(tmp_path), SessionConfig(max_subagent_depth=2))
        sessions.attach_session(session)
        assert session.submit("Delegate").text == "parent done"
        session.close()
        sessions.finish()
        spans = receiver.spans()
    runs = [s for s in spans if s.name.startswith("invoke_agent")]
    assert len(runs) == 3, [s.name for s in spans]
    by_id = {s.span_id: s for s in spans}
    roots = [r for r in runs if not r.parent_span_id]
    assert len(roots) == 1
    depth = {roots[0].span_id: 0}
    for run in runs:  # each child run hangs (directly) under its parent's invoke_agent span
        if run.parent_span_id:
            parent = by_id[run.parent_span_id]
            assert parent.name.startswith("invoke_agent") and parent.trace_id == roots[0].trace_id
    for _ in range(3):
        for run in runs:
            if run.parent_span_id in depth:
                depth[run.span_id] = depth[run.parent_span_id] + 1
    assert sorted(depth.values()) == [0, 1, 2]
    assert all(attributes(r)["phi.run.outcome"] == "completed" for r in runs)
    spawns = [s for s in spans if s.name == "execute_tool spawn_agent"]
    assert len(spawns) == 2 and all(by_id[s.parent_span_id].name.startswith("invoke_agent") for s in spans
                                    if s in spawns)
