"""The pieces of phi export: edit diffs (phi/export/diff.py), redaction (phi/tools/redact.py) and
rendering of hand-built sessions whose every field is hostile (phi/export/html.py)."""

from __future__ import annotations

import base64

from export_helpers import HOSTILE
from page_parser import parse_page

from phi.export.diff import edit_diffs, unified
from phi.export.html import render_html
from phi.tools.redact import Redactor
from phi.export.tree import ExportTree
from phi.session import ChildLoopRef, LoopRecord, LoopStatus, Session, SpawnRef
from phi.types import (AssistantMessage, ContinuationKind, ExtensionMessage, ImageContent, TextContent,
                       ThinkingContent, ToolCall, ToolResultMessage, Usage, UserMessage)

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16).decode()


def test_edit_diff_is_numbered_from_the_reported_first_line():
    (diff,) = edit_diffs({"file_path": "a.py", "old_string": "x = 1\ny = 2", "new_string": "x = 1\ny = 3"},
                         {"first_line": 40})
    assert diff.kind == "edit" and diff.text.split("\n") == ["--- a/a.py", "+++ b/a.py", "@@ -40,2 +40,2 @@",
                                                            " x = 1", "-y = 2", "+y = 3"]


def test_unified_matches_difflib_for_whole_files():
    import difflib

    old = [f"line {i}" for i in range(30)]
    new = old[:5] + ["inserted"] + old[5:20] + old[21:]
    ours = unified(old, new, "a/f", "b/f")
    reference = "\n".join(difflib.unified_diff(old, new, "a/f", "b/f", lineterm=""))
    assert ours == reference


def test_write_patch_and_non_edits():
    (write,) = edit_diffs({"path": "n.txt", "content": "one\ntwo\n"}, {"created": False})
    assert write.kind == "overwrite"  # the file existed, its earlier content is not in the session
    assert write.text.split("\n") == ["--- a/n.txt (earlier content not recorded)", "+++ b/n.txt", "@@ -0,0 +1,2 @@",
                                      "+one", "+two"]
    (known,) = edit_diffs({"path": "n.txt", "content": "one\n2\n"}, {"created": False}, before="one\ntwo\n")
    assert (known.kind, known.text.split("\n")[2:]) == ("write", ["@@ -1,2 +1,2 @@", " one", "-two", "+2"])
    (bad,) = edit_diffs({"patch": "*** Begin Patch\n*** Frobnicate: x\n*** End Patch"})
    assert bad.kind == "patch" and "Frobnicate" in bad.text
    (delete, move) = edit_diffs({"patch": "*** Begin Patch\n*** Delete File: old.txt\n*** Update File: a.txt\n"
                                          "*** Move to: b.txt\n@@ def f\n-x\n+y\n*** End Patch"})
    assert delete.text == "--- a/old.txt\n+++ /dev/null"
    assert move.path == "b.txt" and move.text.split("\n") == ["--- a/a.txt", "+++ b/b.txt", "@@ def f @@", "-x", "+y"]
    assert edit_diffs({"command": "ls"}) == [] and edit_diffs("not a mapping") == []  # type: ignore[arg-type]
    assert edit_diffs({"path": 3, "content": "x"}) == []


def test_redactor_cleans_env_secrets_shapes_and_secret_named_keys():
    r = Redactor(["custom-secret-value"], environ={"MY_SERVICE_TOKEN": "tok-1234567890", "DB_PASSWORD": "p@ss/word+1234", "HOME": "/root",
                                                  "SHORT_KEY": "abc"})
    assert r.text("a tok-1234567890 b") == "a *** b" and r.text("pw=p%40ss%2Fword%2B1234") == "pw=***"
    assert r.text("custom-secret-value") == "***" and r.text("/root") == "/root" and r.text("abc") == "abc"
    assert r.text("key sk-ant-api03-abcdefghijklmnopqrstuv and AKIAABCDEFGHIJKLMNOP") == "key *** and ***"
    assert r.text("Authorization: Bearer abcdefghijk.lmn") == "Authorization: Bearer ***"
    assert r.text("https://user:hunter22@example.com/x") == "https://user:***@example.com/x"
    data = r.data({"api_key": "plain", "path": "x", "nested": [{"password": "p4ss"}], "max_tokens": 5})
    assert data == {"api_key": "***", "path": "x", "nested": [{"password": "***"}], "max_tokens": 5}
    assert "tok-1234567890" not in repr(r)


def _hostile_tree() -> ExportTree:
    sid, child_sid = "s1", "s2"
    call = ToolCall(HOSTILE, HOSTILE, {HOSTILE: HOSTILE, "path": HOSTILE, "content": HOSTILE})
    messages = [
        UserMessage([TextContent(HOSTILE), ImageContent(PNG, "image/png"),
                     ImageContent("x\" onerror=\"alert(1)", "image/png"), ImageContent(PNG, 'image/png" onload="x')]),
        AssistantMessage([ThinkingContent(HOSTILE), ThinkingContent("", redacted=True), TextContent(HOSTILE), call],
                         model=HOSTILE, provider=HOSTILE, usage=Usage(1, 2, total_tokens=3), error_message=HOSTILE),
        ToolResultMessage(HOSTILE, HOSTILE, [TextContent(HOSTILE)], is_error=True, details={HOSTILE: HOSTILE}),
        ToolResultMessage("orphan", HOSTILE, [TextContent("orphan " + HOSTILE)]),
        ExtensionMessage(HOSTILE, {HOSTILE: [HOSTILE]}),
    ]
    loop = LoopRecord(f"{sid}.main.1", sid, "a", status=LoopStatus.ERROR, started_at=1.0, ended_at=2.0,
                      rejection=HOSTILE, messages=messages, metadata={HOSTILE: 1},
                      child_loop_refs=[ChildLoopRef(HOSTILE, HOSTILE, f"{child_sid}.sub.1", child_sid),
                                       ChildLoopRef("c9", HOSTILE, "gone.sub.1", "gone")])
    rerun = LoopRecord(f"{sid}.main.2", sid, "a", parent_loop_id=loop.loop_id, started_at=3.0,
                       continuation_kind=ContinuationKind("branch", HOSTILE), status=LoopStatus.COMPLETED)
    loop.children_loop_ids.append(rerun.loop_id)
    child = LoopRecord(f"{child_sid}.sub.1", child_sid, "b", parent_loop_id=loop.loop_id, started_at=1.5,
                       messages=[AssistantMessage([TextContent("child " + HOSTILE)])], status=LoopStatus.COMPLETED)
    root = Session(sid, "a", 1.0, 3.0, None, loops=[loop, rerun])  # type: ignore[arg-type]
    sub = Session(child_sid, "b", 1.5, 1.6, None, SpawnRef(sid, loop.loop_id, HOSTILE, HOSTILE), [child])  # type: ignore[arg-type]
    return ExportTree(root, {sid: root, child_sid: sub}, {"gone": "no session gone " + HOSTILE})


def test_every_field_of_a_hostile_session_is_text():
    text = render_html(_hostile_tree(), Redactor(environ={}))
    page = parse_page(text)
    assert [n.tag for n in page.find_all("script")] == ["script"]
    for node in page.walk():
        assert not [a for a in node.attrs if a.startswith("on")], (node.tag, node.attrs)
    (img,) = page.find_all("img")  # the one valid PNG; the broken data and the hostile type are refused
    assert img.attrs["src"] == f"data:image/png;base64,{PNG}"
    refused = [n.text() for n in page.find_all("div", "missing") if n.text().startswith("image")]
    assert len(refused) == 2
    body = page.find("body").text()
    assert body.count(HOSTILE) >= 15 and "(redacted thinking)" in body and "orphan " + HOSTILE in body
    assert "child " + HOSTILE in page.find("div", "tool-call").find("div", "subagent").text()
    assert "not in the store: no session gone " + HOSTILE in body
    tree = page.find("nav", id="tree")
    assert f"(branch: {HOSTILE})" in tree.text() and len(tree.find_all("li", "missing")) == 1
    assert page.find("div", "tool-call").attrs["data-tool-call-id"] == HOSTILE


def test_an_empty_session_renders():
    session = Session.explicit("empty", "agent", 5.0)
    page = parse_page(render_html(ExportTree(session, {"empty": session}), Redactor(environ={})))
    assert page.find_all("section", "loop") == [] and "runs" in page.find("header").text()


def test_a_chain_of_thousands_of_continuations_is_exported():
    """A deep continuation chain must not exhaust the recursion limit; every run stays linked."""
    loops = [LoopRecord(f"deep.main.{i}", "deep", "a", parent_loop_id=f"deep.main.{i - 1}" if i > 1 else None,
                        continuation_kind=ContinuationKind() if i > 1 else None, started_at=float(i),
                        status=LoopStatus.COMPLETED, messages=[AssistantMessage([TextContent(f"reply {i}")])])
             for i in range(1, 1501)]
    for parent, child in zip(loops, loops[1:]):
        parent.children_loop_ids.append(child.loop_id)
    session = Session("deep", "a", 1.0, 1500.0, None, loops=loops)  # type: ignore[arg-type]
    page = parse_page(render_html(ExportTree(session, {"deep": session}), Redactor(environ={})))
    links = page.find("nav", id="tree").find_all("a")
    assert [a.attrs["data-loop-id"] for a in links] == [loop.loop_id for loop in loops]
    assert len(page.find_all("section", "loop")) == 1500
