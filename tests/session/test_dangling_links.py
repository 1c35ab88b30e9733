"""A stored link to a sub-agent's (or a parent's) session or run that the store lacks — what a crash
between the two saves leaves (SPEC SESS-5; issue 31 item 4) — loads, is found by
``phi.session.dangling_links`` and said in words, for both stores; the ``phi`` command's session
views (``CliSessions``) list and resume such a session and say what is missing."""

from __future__ import annotations

import pytest
from dangling_helpers import (
    BROKEN,
    CHILD_ANSWER,
    PARENT_ANSWER,
    break_link,
    close,
    expected_sentence,
    open_store,
    record_linked,
)

from phi import Agent, ScriptedProvider
from phi.cli.sessions import CliSessions
from phi.session import DanglingLink, dangling_links


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_whole_store_has_no_dangling_link(kind, tmp_path):
    linked = record_linked(kind, tmp_path)
    store = open_store(kind, tmp_path)
    assert dangling_links(store, store.load(linked.parent_id)) == []
    assert dangling_links(store, store.load(linked.child_id)) == []
    close(store)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
@pytest.mark.parametrize("broken", BROKEN)
def test_a_dangling_link_loads_and_is_said_in_words(kind, broken, tmp_path):
    linked = record_linked(kind, tmp_path)
    break_link(kind, tmp_path, linked, broken)
    store = open_store(kind, tmp_path)
    holder = store.load(linked.child_id if broken == "parent" else linked.parent_id)  # loads as stored
    (link,) = dangling_links(store, holder)
    assert isinstance(link, DanglingLink) and str(link).startswith(expected_sentence(linked, broken))
    assert link.tool_call_id == linked.tool_call_id and link.to_parent == (broken == "parent")
    assert link.session_missing == (broken in ("child", "parent"))
    assert (link.error is not None) == (broken == "child-corrupt")
    if broken != "parent":
        assert (link.session_id, link.loop_id) == (linked.parent_id, linked.parent_loop_id)
        assert (link.target_session_id, link.target_loop_id) == (linked.child_id, linked.child_loop_id)
        assert holder.conversation()[-1].text == PARENT_ANSWER  # the rest of the session is all there
    else:
        assert (link.target_session_id, link.target_loop_id) == (linked.parent_id, linked.parent_loop_id)
        assert holder.conversation()[-1].text == CHILD_ANSWER
    close(store)


@pytest.mark.parametrize("broken", BROKEN)
def test_the_cli_session_list_and_resume_say_what_is_missing(broken, tmp_path):
    linked = record_linked("json", tmp_path)
    break_link("json", tmp_path, linked, broken)
    holder_id = linked.child_id if broken == "parent" else linked.parent_id
    sessions = CliSessions(linked.location)
    if broken != "child-corrupt":  # a corrupt file is the listing's own error (the store's), not a link's
        rows = {row.session_id: row for row in sessions.summaries()}
        (text,) = rows[holder_id].dangling
        assert text.startswith(expected_sentence(linked, broken))
    warnings: list[str] = []
    agent = Agent(provider=ScriptedProvider(["resumed fine"]))
    sessions.attach(agent)
    count = sessions.restore(holder_id, agent, warn=warnings.append)
    assert count == (2 if broken == "parent" else 4)
    assert [w.startswith(expected_sentence(linked, broken)) for w in warnings] == [True]
    assert agent.run("and now?").text == "resumed fine"
    sessions.save()  # the resumed session goes on being saved (its runs save themselves, SESS-7)
    stored = sessions.store.load(holder_id)
    assert [m.text for r in stored.loops for m in r.messages][-2:] == ["and now?", "resumed fine"]
