"""``phi export`` and the ``phi`` command, run as real processes on stores holding a link that leads
nowhere — a sub-agent's session (or run) missing, unreadable, or the parent's session missing, as a
crash between two saves leaves them (SPEC SESS-5, EXPORT-5; issue 31 item 4): nothing crashes, the
dangling link is said in words, and the rest of the session is shown or resumed. Also: a stored
value nested as deep as the store can read is named on the page, not a crash of the export."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from dangling_helpers import (
    BROKEN,
    CHILD_ANSWER,
    PARENT_ANSWER,
    break_link,
    expected_sentence,
    record_linked,
)
from page_parser import parse_page

from phi.session import JsonDirStore

REPO = Path(__file__).resolve().parents[2]


def phi(*args: str, home: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -m phi.cli ARGS`` with ``PHI_HOME`` set and no model key (hang guard only)."""
    env = {key: value for key, value in os.environ.items() if not key.endswith("_API_KEY")}
    env.update(PHI_HOME=str(home), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "phi.cli", *args], capture_output=True, text=True, env=env,
                          cwd=cwd, timeout=120, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
@pytest.mark.parametrize("broken", BROKEN)
def test_export_names_the_dangling_link_and_shows_the_rest(kind, broken, tmp_path):
    linked = record_linked(kind, tmp_path)
    break_link(kind, tmp_path, linked, broken)
    exported = linked.child_id if broken == "parent" else linked.parent_id
    out = tmp_path / "page.html"
    done = phi("export", exported, "--html", str(out), "--store", str(linked.location), home=tmp_path / "home",
               cwd=tmp_path)
    sentence = expected_sentence(linked, broken)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and f"phi export: warning: {sentence}" in done.stderr
    assert "1 link(s) lead to sessions or runs the store lacks" in done.stdout
    page = parse_page(out.read_text(encoding="utf-8"))
    notes = [p.text() for p in page.find_all("p", "missing")]
    assert len(notes) == 1 and notes[0].startswith(sentence)
    conversation = page.find("main").text()
    if broken == "parent":
        assert CHILD_ANSWER in conversation
    else:
        assert PARENT_ANSWER in conversation and "Ask the helper to say hello." in conversation
        call = page.find("div", "tool-call", data_tool_call_id=linked.tool_call_id)
        assert sentence in call.text()  # said where the sub-agent's run would be


def test_export_from_phi_home_and_print_mode_resume_say_it_too(tmp_path):
    """The ``phi`` command's own store (``$PHI_HOME/sessions``): export without ``--store``, and
    ``phi -p --resume`` of the session, which goes on and is saved."""
    home = tmp_path / "home"
    linked = record_linked("json", home)  # home/sessions: the command's default store
    break_link("json", home, linked, "child")
    sentence = expected_sentence(linked, "child")
    done = phi("export", linked.parent_id, "--html", str(tmp_path / "p.html"), home=home, cwd=tmp_path)
    assert done.returncode == 0 and f"phi export: warning: {sentence}" in done.stderr
    done = phi("--offline", "-p", "what did the helper say?", "--resume", linked.parent_id, home=home, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"phi: warning: {sentence}" in done.stderr and "Traceback" not in done.stderr
    assert "what did the helper say?" in done.stdout
    stored = JsonDirStore(home / "sessions").load(linked.parent_id)
    assert len(stored.loops) == 2 and stored.conversation()[0].text == "Ask the helper to say hello."


def test_a_value_nested_as_deep_as_the_store_reads_is_named_not_a_crash(tmp_path):
    depth = sys.getrecursionlimit() - 50  # the reading process parses it; a recursive walk of it fails
    deep: dict = {}
    node = deep
    for _ in range(depth):
        node["x"] = {}
        node = node["x"]
    session = {
        "session_id": "deep", "agent_id": "a", "created_at": "2026-01-01T00:00:00.000000Z",
        "last_active_at": "2026-01-01T00:00:00.000000Z", "formation": {"Explicit": {"timestamp": "2026-01-01T00:00:00.000000Z"}},
        "parent_spawn_ref": None,
        "loops": [{
            "loop_id": "deep.m.1", "session_id": "deep", "agent_id": "a", "parent_loop_id": None,
            "continuation_kind": None, "started_at": "2026-01-01T00:00:00.000000Z", "ended_at": None,
            "status": "Completed", "rejection": None, "config": None, "metadata": None, "events": [],
            "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0},
            "messages": [
                {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "t", "arguments": {"a": deep}}],
                 "stopReason": "toolUse", "model": "m", "provider": "p", "timestamp": 1,
                 "usage": {"input": 0, "output": 0, "cache_read": 0, "cache_write": 0, "total_tokens": 0}},
                {"role": "toolResult", "toolCallId": "c1", "toolName": "t", "content": [{"type": "text", "text": "ok"}],
                 "isError": False, "timestamp": 2, "details": deep},
            ],
            "children_loop_ids": [], "child_loop_refs": [], "parallel_group": None,
        }],
    }
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 1000)  # this process writes it from deep inside pytest
    try:
        text = json.dumps(session)
    finally:
        sys.setrecursionlimit(limit)
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "deep.jsonl").write_text(text + "\n", encoding="utf-8")
    out = tmp_path / "deep.html"
    done = phi("export", "deep", "--html", str(out), "--store", str(tmp_path / "store"), home=tmp_path, cwd=tmp_path)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    call = parse_page(out.read_text(encoding="utf-8")).find("div", "tool-call", data_tool_call_id="c1")
    assert "(a value nested too deeply to show)" in call.text() and "ok" in call.find("pre", "output").text()
