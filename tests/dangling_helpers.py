"""Stores holding a link that leads nowhere, as a crash between two saves leaves them (issue 31 item 4):
a real Agent runs a real SubAgentTool with ``store=...``, so the parent session and the sub-agent's
session are saved and linked both ways; then one side is taken away again (``store.delete``, or the
child stored without its run, or its file or row replaced by garbage)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Union

from phi import Agent, ScriptedProvider, SubAgentTool
from phi.session import JsonDirStore, SqliteStore
from phi.session.model import replace_loops

Store = Union[JsonDirStore, SqliteStore]

PARENT_ANSWER = "The helper said hello; all done."
CHILD_ANSWER = "hello from the helper"
BROKEN = ("child", "parent", "child-loop", "child-corrupt")


@dataclass
class Linked:
    location: Path  # the directory or the database file
    parent_id: str
    child_id: str
    parent_loop_id: str
    child_loop_id: str
    tool_call_id: str = "call_helper"


def open_store(kind: str, root: Path) -> Store:
    return JsonDirStore(root / "sessions") if kind == "json" else SqliteStore(root / "sessions.db")


def close(store: Store) -> None:
    if isinstance(store, SqliteStore):
        store.close()


def record_linked(kind: str, root: Path) -> Linked:
    """A parent session whose one run called a sub-agent tool, and the sub-agent's session, stored."""
    store = open_store(kind, root)
    helper = SubAgentTool("helper", provider=ScriptedProvider([CHILD_ANSWER]))
    script = ScriptedProvider([
        {"blocks": [{"type": "toolCall", "id": "call_helper", "name": "helper", "arguments": {"task": "say hello"}}]},
        PARENT_ANSWER,
    ])
    agent = Agent(provider=script, tools=[helper], store=store)
    assert agent.run("Ask the helper to say hello.").text == PARENT_ANSWER
    parent = store.load(agent.session_id)
    (ref,) = parent.loops[0].child_loop_refs
    child = store.load(ref.child_session_id)
    assert child.parent_spawn_ref is not None and child.get_loop(ref.child_loop_id) is not None
    close(store)
    location = root / ("sessions" if kind == "json" else "sessions.db")
    return Linked(location, parent.session_id, child.session_id, parent.loops[0].loop_id, ref.child_loop_id)


def break_link(kind: str, root: Path, linked: Linked, broken: str) -> None:
    """Take away what ``broken`` names: the ``child`` or ``parent`` session, the child's run only
    (``child-loop``), or make the child session unreadable (``child-corrupt``)."""
    store = open_store(kind, root)
    if broken in ("child", "parent"):
        store.delete(linked.child_id if broken == "child" else linked.parent_id)
    elif broken == "child-loop":
        child = store.load(linked.child_id)
        store.delete(linked.child_id)
        store.save(replace_loops(child, []))  # the session's header is stored, its run is not
    elif isinstance(store, JsonDirStore):
        Path(store.path_of(linked.child_id)).write_text('{"session_id": 7}\n', encoding="utf-8")  # a whole line
    else:
        store.close()
        db = sqlite3.connect(linked.location)
        db.execute("UPDATE phi_session_loops SET data = ? WHERE session_id = ?",
                   (json.dumps({"loop_id": linked.child_loop_id}), linked.child_id))
        db.commit()
        db.close()
    close(store)


def expected_sentence(linked: Linked, broken: str) -> str:
    """The words a viewer must show for ``broken`` (the start of ``str(DanglingLink)``)."""
    if broken == "parent":
        return (f"parent session {linked.parent_id} (loop {linked.parent_loop_id}, tool call {linked.tool_call_id}, "
                f"which started session {linked.child_id}) is missing from the store")
    where = f"(linked from loop {linked.parent_loop_id}, tool call {linked.tool_call_id})"
    if broken == "child":
        return f"sub-agent session {linked.child_id} {where} is missing from the store"
    if broken == "child-loop":
        return f"sub-agent loop {linked.child_loop_id} {where} is missing from session {linked.child_id}"
    return f"sub-agent session {linked.child_id} {where} cannot be loaded: "
