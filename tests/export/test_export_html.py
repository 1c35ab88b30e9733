"""phi export (phi/export/html.py, phi/export/command.py): a real recorded session — tools, a sub-agent,
a parallel run — exported and checked with html.parser: the conversation, thinking, tool calls with
input and output, diffs, usage per turn, the loop tree; hostile text stays text; no secret; errors."""

from __future__ import annotations

import json
import re

from export_helpers import HOSTILE, SECRET
from page_parser import parse_page

from phi.export.command import main
from phi.session import default_sessions_dir
from phi.session import JsonDirStore, SqliteStore


def export(recorded, tmp_path, *extra: str) -> str:
    out = tmp_path / "session.html"
    assert main([recorded.session_id, "--html", str(out), "--store", str(recorded.store.directory), *extra]) == 0
    return out.read_text(encoding="utf-8")


def test_page_shows_every_loop_message_and_tool_call(recorded, tmp_path, secret_env):
    page = parse_page(export(recorded, tmp_path))
    sections = page.find_all("section", "loop")
    session = recorded.store.load(recorded.session_id)
    (ref,) = session.loops[0].child_loop_refs
    child = recorded.store.load(ref.child_session_id)
    expected = [loop.loop_id for loop in session.loops] + [child.loops[0].loop_id]
    assert sorted(s.attrs["data-loop-id"] for s in sections) == sorted(expected)
    main_loop = page.find("section", data_loop_id=session.loops[0].loop_id)
    roles = [n.find("div", "role").text() for n in main_loop.find_all("li", "msg")
             if not any("subagent" in a.classes for a in n.ancestors())]
    assert roles == ["user", "assistant", "assistant", "assistant", "assistant", "assistant", "assistant"]
    calls = {c.attrs["data-tool-call-id"]: c for c in main_loop.find_all("div", "tool-call")}
    assert set(calls) == {"c_write", "c_edit", "c_patch", "c_bash", "c_sub", "child_read"}
    bash = calls["c_bash"]
    assert json.loads(bash.find("pre", "json").text())["command"] == "cat notes.txt; echo key=***"
    assert HOSTILE in bash.find("pre", "output").text()  # the output, shown as text
    assert "— ok" in bash.find("summary").text()
    thinking = [d.text() for d in page.find_all("details", "thinking")]
    assert any("I should write notes first " + HOSTILE in t for t in thinking)
    assert any("child plans" in t for t in thinking)


def test_edits_are_unified_diffs(recorded, tmp_path):
    page = parse_page(export(recorded, tmp_path))
    def diff_lines(call_id):
        call = page.find("div", "tool-call", data_tool_call_id=call_id)
        return [[s.text() for s in pre.find_all("span")] for pre in call.find_all("pre", "diff")]
    (write,) = diff_lines("c_write")
    assert write[:3] == ["--- /dev/null", "+++ b/notes.txt", "@@ -0,0 +1,3 @@"] and write[3:5] == ["+alpha", "+beta"]
    assert diff_lines("c_edit") == [["--- a/notes.txt", "+++ b/notes.txt", "@@ -2 +2 @@", "-beta", "+beta changed"]]
    update, add = diff_lines("c_patch")
    assert update == ["--- a/notes.txt", "+++ b/notes.txt", "@@", " alpha", "-beta changed", "+beta patched"]
    assert add == ["--- /dev/null", "+++ b/extra.txt", "@@ -0,0 +1 @@", "+fresh line"]
    assert (recorded.workdir / "notes.txt").read_text().startswith("alpha\nbeta patched\n")  # the tools really ran
    classes = {s.attrs["class"] for s in page.find("div", "tool-call", data_tool_call_id="c_edit").find_all("span")}
    assert classes == {"d-file", "d-hunk", "d-del", "d-add"}


def test_usage_is_shown_per_turn_and_per_run(recorded, tmp_path):
    page = parse_page(export(recorded, tmp_path))
    turns = [n.text() for n in page.find_all("div", "usage") if n.text().startswith("turn usage")]
    assert len(turns) == 6 + 2 + 2  # the main run's replies, the sub-agent's, one per parallel branch
    assert "turn usage: in 100 · out 20 · total 120" in turns[0]
    assert any("in 50 · out 10 · cache read 7 · total 67" in t for t in turns)
    session = recorded.store.load(recorded.session_id)
    runs = {s.attrs["data-loop-id"]: s.find("div", "usage").text() for s in page.find_all("section", "loop")}
    first = session.loops[0]
    assert runs[first.loop_id] == f"run usage: in {first.usage.input} · out {first.usage.output} · " \
                                  f"cache read {first.usage.cache_read} · total {first.usage.total_tokens}"


def test_loop_tree_has_the_sub_agent_and_the_parallel_branches(recorded, tmp_path):
    page = parse_page(export(recorded, tmp_path))
    tree = page.find("nav", id="tree")
    anchors = {s.attrs["id"] for s in page.find_all("section", "loop")}
    links = tree.find_all("a")
    assert {a.attrs["href"][1:] for a in links} == anchors
    session = recorded.store.load(recorded.session_id)
    sub = tree.find("li", "sub-agent")
    assert "sub-agent researcher" in sub.text()
    assert any(a.tag == "li" and session.loops[0].loop_id == a.find("a").attrs["data-loop-id"] for a in sub.ancestors()
               if "tree-loop" in a.classes)
    group = tree.find("li", "parallel-group")
    branches = group.find_all("li", "tree-loop")
    assert "2 branches" in group.text() and len(branches) == 2
    selected = [b for b in branches if b.find_all("span", "selected")]
    assert len(selected) == 1 and selected[0].find("a").attrs["data-loop-id"].endswith(".terse.1")
    # in the conversation the sub-agent's run sits inside the tool call that started it
    child_section = page.find("div", "tool-call", data_tool_call_id="c_sub").find("section", "loop")
    assert child_section.attrs["data-loop-id"].endswith(".sub.1")


def test_hostile_text_cannot_inject_markup(recorded, tmp_path):
    text = export(recorded, tmp_path)
    page = parse_page(text)
    assert [n.tag for n in page.find_all("script")] == ["script"]  # only the page's own script
    assert page.find_all("img") == []  # no image was recorded: the hostile <img> is text
    for node in page.walk():
        assert not [a for a in node.attrs if a.startswith("on")], (node.tag, node.attrs)
        for name in ("src", "href"):
            value = node.attrs.get(name)
            assert value is None or value.startswith(("#", "data:")), (node.tag, value)
    assert page.find_all("link") == [] and "http://" not in text and "https://" not in text
    assert HOSTILE in page.find("main").text() and "<img src=x" not in text
    csp = page.find("meta", http_equiv="Content-Security-Policy").attrs["content"]
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp


def test_secrets_are_not_in_the_page(recorded, tmp_path, secret_env):
    text = export(recorded, tmp_path)
    raw = recorded.store.path_of(recorded.session_id)
    assert SECRET in open(raw, encoding="utf-8").read()  # the run did print it
    assert SECRET not in text and "***" in text
    assert json.dumps(SECRET)[1:-1] not in text


def test_sqlite_store_and_default_store(recorded, tmp_path, monkeypatch):
    db = tmp_path / "sessions.db"
    with SqliteStore(str(db)) as sqlite:
        for session_id in recorded.store.list_ids():
            sqlite.save(recorded.store.load(session_id))
    page = parse_page(export(recorded, tmp_path, "--store", str(db)))
    assert len(page.find_all("section", "loop")) == 4
    monkeypatch.setenv("PHI_HOME", str(tmp_path / "home"))
    assert default_sessions_dir() == tmp_path / "home" / "sessions"
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / "sessions").symlink_to(recorded.store.directory)
    out = tmp_path / "default.html"
    assert main([recorded.session_id, "--html", str(out)]) == 0 and out.stat().st_size > 0


def test_unknown_id_and_unreadable_stores_exit_1(recorded, tmp_path, capsys):
    out = tmp_path / "x.html"
    store = recorded.store.directory
    assert main(["no-such-session", "--html", str(out), "--store", store]) == 1
    assert "no session no-such-session" in capsys.readouterr().err and not out.exists()
    assert main(["../etc/passwd", "--html", str(out), "--store", store]) == 1
    assert "cannot be stored" in capsys.readouterr().err
    assert main([recorded.session_id, "--html", str(out), "--store", str(tmp_path / "nowhere")]) == 1
    assert "does not exist" in capsys.readouterr().err
    junk = tmp_path / "junk.db"
    junk.write_text("not a database")
    assert main([recorded.session_id, "--html", str(out), "--store", str(junk)]) == 1
    assert "neither a session directory nor an SQLite" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "s1.json").write_text("{not json")
    assert main(["s1", "--html", str(out), "--store", str(broken)]) == 1
    assert "s1.json is not valid JSON" in capsys.readouterr().err
    assert main([recorded.session_id, "--html", str(tmp_path / "no-dir" / "x.html"), "--store", store]) == 1
    assert "cannot write" in capsys.readouterr().err
    assert main([recorded.session_id]) == 2 and "--html" in capsys.readouterr().err
    assert not out.exists()


def test_a_child_session_missing_from_the_store_is_shown_as_missing(recorded, tmp_path, capsys):
    copy = JsonDirStore(tmp_path / "copy")
    session = recorded.store.load(recorded.session_id)
    copy.save(session)  # the parent only: its sub-agent's session is not there
    out = tmp_path / "partial.html"
    assert main([recorded.session_id, "--html", str(out), "--store", copy.directory]) == 0
    said = capsys.readouterr()
    assert "1 link(s) lead to sessions or runs the store lacks" in said.out
    assert "is missing from the store" in said.err
    page = parse_page(out.read_text(encoding="utf-8"))
    missing = page.find("div", "tool-call", data_tool_call_id="c_sub").find("div", "missing")
    assert "is missing from the store" in missing.text() and session.loops[0].child_loop_refs[0].child_session_id in missing.text()
    assert len(page.find_all("section", "loop")) == 3


def test_anchors_and_ids_are_unique(recorded, tmp_path):
    text = export(recorded, tmp_path)
    ids = re.findall(r'\sid="([^"]*)"', text)
    assert len(ids) == len(set(ids))


def test_sub_agents_of_runs_reusing_a_tool_call_id_stay_with_their_run(tmp_path):
    """Tool call ids are unique within a run only: each run's sub-agent is shown in its own call."""
    from phi import Agent, ScriptedProvider, SubAgentTool

    from export_helpers import call, reply

    helper = SubAgentTool("helper", provider=ScriptedProvider([reply("first child"), reply("second child")]))
    script = ScriptedProvider([call("c1", "helper", {"task": "one"}), reply("one done"),
                               call("c1", "helper", {"task": "two"}), reply("two done")])
    store = JsonDirStore(tmp_path / "s")
    agent = Agent(provider=script, tools=[helper], store=store)
    agent.run("first")
    agent.run("second")
    out = tmp_path / "reuse.html"
    assert main([agent.session_id, "--html", str(out), "--store", store.directory]) == 0
    page = parse_page(out.read_text(encoding="utf-8"))
    first, second = store.load(agent.session_id).loops
    for record, text in ((first, "first child"), (second, "second child")):
        tool_call = page.find("section", data_loop_id=record.loop_id).find("div", "tool-call", data_tool_call_id="c1")
        (child,) = tool_call.find_all("section", "loop")
        assert text in child.text()
