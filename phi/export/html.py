"""One session as one self-contained HTML page (SPEC §16 EXPORT-1..3).

The page shows what people need when they debug an agent run: every run (loop) of the session with
its messages — user input, the model's thinking and text, each tool call with its input, its output
and, for file edits, a unified diff (:mod:`phi.export.diff`) — usage per turn (one assistant reply
is one turn) and per run, and the loop tree: continuations, parallel evaluation branches (the
selected one marked) and sub-agent runs, whose sessions are loaded from the store and shown inside
the tool call that started them (:mod:`phi.export.tree`).

Self-contained and safe to open: no external asset (images are ``data:`` URIs), the stylesheet and
script inline (:mod:`phi.export.assets`), every recorded string HTML-escaped and cleaned of secrets
(:mod:`phi.tools.redact`), and a Content-Security-Policy that allows only the page's own style and
script, so a message holding ``</script><img onerror=...>`` is shown as text and nothing in it runs.

    from phi.export.html import export_session_html
    export_session_html(JsonDirStore("~/.phi/sessions"), session_id, "run.html")
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import html
import json
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Iterable

from ..session import ChildLoopRef, LoopRecord, Session, SessionStore
from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    ExtensionMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from .assets import CONTENT_SECURITY_POLICY, CSS, JS
from .diff import FileHistory, edit_diffs
from ..tools.redact import Redactor
from .tree import ExportTree, load_tree

_IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}\Z")
_SHORT_ARGS = 80
_MAX_NEST = 32  # tree levels; deeper continuations are listed flat


def esc(value: object) -> str:
    """Text for HTML element content and quoted attribute values."""
    return html.escape(str(value), quote=True)


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    moment = _dt.datetime.fromtimestamp(seconds, _dt.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def usage_text(usage: Usage) -> str:
    """``in 120 · out 45 · cache read 30 · total 195``: reasoning and cache figures only when not zero."""
    parts = [f"in {usage.input}", f"out {usage.output}"]
    for label, value in (("reasoning", usage.reasoning), ("cache read", usage.cache_read),
                         ("cache write", usage.cache_write)):
        if value:
            parts.append(f"{label} {value}")
    parts.append(f"total {_tokens(usage)}")
    return " · ".join(parts)


def _tokens(usage: Usage) -> int:
    """All tokens of a usage: its total, or the sum of its parts when the provider gave no total."""
    return usage.total_tokens or usage.input + usage.output + usage.cache_read + usage.cache_write


@dataclass(frozen=True)
class _LoopScope:
    """What the messages of one loop refer to each other by: tool call ids are unique within a loop
    only (providers and scripts reuse them across runs)."""

    loop_id: str
    called: frozenset[str]
    results: dict[str, ToolResultMessage]
    refs: dict[str, list[ChildLoopRef]]

    @classmethod
    def of(cls, record: LoopRecord) -> _LoopScope:
        called = frozenset(b.id for m in record.messages if isinstance(m, AssistantMessage)
                           for b in m.content if isinstance(b, ToolCall))
        results = {m.tool_call_id: m for m in record.messages if isinstance(m, ToolResultMessage)}
        refs: dict[str, list[ChildLoopRef]] = {}
        for ref in record.child_loop_refs:
            refs.setdefault(ref.tool_call_id, []).append(ref)
        return cls(record.loop_id, called, results, refs)


class _Page:
    """Renders one :class:`ExportTree`; ``anchors`` gives every loop a stable element id."""

    def __init__(self, tree: ExportTree, redactor: Redactor) -> None:
        self.tree, self.r = tree, redactor
        self.history = FileHistory()  # what each file held, for diffs of overwritten files
        self.anchors = {record.loop_id: f"loop-{n}" for n, record in enumerate(tree.all_loops(), 1)}
        self.shown: set[str] = set()  # loops whose section is written

    # ------------------------------------------------------------------ small pieces

    def t(self, value: object) -> str:
        """A recorded string: cleaned of secrets, then escaped."""
        return esc(self.r.text(str(value)))

    def json_text(self, value: object, indent: int | None = None) -> str:
        """A recorded JSON value as text, cleaned of secrets; a value nested too deeply for Python's
        recursion (a store can hold ~1000 levels) is named, not shown, so the rest of the page is."""
        try:
            return json.dumps(self.r.data(value), indent=indent, ensure_ascii=False, default=str)
        except RecursionError:
            return "(a value nested too deeply to show)"

    def json_block(self, value: object, cls: str = "json") -> str:
        return f'<pre class="{cls}">{esc(self.json_text(value, indent=2))}</pre>'

    def status(self, record: LoopRecord) -> str:
        name = record.status.value
        return f'<span class="badge status-{esc(name)}">{esc(name)}</span>'

    def loop_label(self, record: LoopRecord) -> str:
        """``{config} · run {N}`` from the loop id ``{session}.{config}.{N}`` (SPEC LOOP-13)."""
        parts = record.loop_id.rsplit(".", 2)
        if len(parts) != 3:
            return record.loop_id
        config = record.config.config_id if record.config and record.config.config_id else parts[1]
        return f"{config} · run {parts[2]}"

    # ------------------------------------------------------------------ the tree (navigation)

    def tree_html(self) -> str:
        items = self.tree_items(self.tree.root, self.tree.root.root_loops(), set())
        return f'<nav id="tree" aria-label="Loop tree"><h2>Loop tree</h2><ul class="tree">{items}</ul></nav>'

    def tree_items(self, session: Session, records: list[LoopRecord], seen: set[str], depth: int = 0) -> str:
        """List items for ``records``; below :data:`_MAX_NEST` levels, continuations are listed
        after their parent instead of inside it (a chain of thousands of runs stays a flat list)."""
        out: list[str] = []
        grouped: set[str] = set()
        pending = list(records)
        for record in pending:  # grows while it is walked, past the nesting limit
            if record.loop_id in seen or record.loop_id in grouped:
                continue
            if record.parallel_group is None:
                out.append(self.tree_item(session, record, seen, depth, pending))
                continue
            branches = session.parallel_siblings(record.loop_id)
            grouped.update(b.loop_id for b in branches)
            inner = "".join(self.tree_item(session, b, seen, depth + 1, pending) for b in branches)
            out.append(f'<li class="parallel-group"><span class="group-label">parallel evaluation: '
                       f'{len(branches)} branches</span><ul>{inner}</ul></li>')
        return "".join(out)

    def tree_item(self, session: Session, record: LoopRecord, seen: set[str], depth: int,
                  pending: list[LoopRecord]) -> str:
        seen.add(record.loop_id)
        label = self.t(self.loop_label(record))
        kind = record.continuation_kind
        if kind is not None:
            label += f' <span class="meta">({esc(kind.kind)}{": " + self.t(kind.tag) if kind.tag else ""})</span>'
        if record.parallel_group is not None and record.parallel_group.is_selected:
            label += ' <span class="selected">selected</span>'
        head = (f'<a href="#{self.anchors[record.loop_id]}" data-loop-id="{self.t(record.loop_id)}">{label}</a> '
                f'{self.status(record)} <span class="meta">{_tokens(record.usage)} tok</span>')
        children = session.children_of(record.loop_id)
        if depth < _MAX_NEST:
            inner = self.tree_items(session, children, seen, depth + 1)
        else:
            inner = ""
            pending.extend(children)
        for ref in record.child_loop_refs:
            inner += self.sub_agent_item(ref, seen, depth + 1)
        return f'<li class="tree-loop">{head}' + (f"<ul>{inner}</ul>" if inner else "") + "</li>"

    def sub_agent_item(self, ref: ChildLoopRef, seen: set[str], depth: int) -> str:
        child = self.tree.sessions.get(ref.child_session_id)
        label = f'<span class="group-label">sub-agent {self.t(ref.tool_name)}</span>'
        if child is None:
            why = self.tree.missing.get(ref.child_session_id, "not loaded")
            return (f'<li class="sub-agent missing">{label}: session {self.t(ref.child_session_id)} — '
                    f'{self.t(why)}</li>')
        items = self.tree_items(child, child.root_loops(), seen, depth + 1)
        return f'<li class="sub-agent">{label}<ul>{items}</ul></li>'

    # ------------------------------------------------------------------ loops and messages

    def loop_section(self, record: LoopRecord) -> str:
        self.shown.add(record.loop_id)
        facts = [f"started {_time(record.started_at)}"]
        if record.duration is not None:
            facts.append(f"{record.duration:.2f} s")
        if record.config is not None:
            facts.append(self.t(f"{record.config.provider}/{record.config.model}"))
        if record.parent_loop_id:
            facts.append(f"parent {self.t(record.parent_loop_id)}")
        if record.parallel_group is not None:
            facts.append("parallel branch" + (" (selected)" if record.parallel_group.is_selected else ""))
        if record.rejection:
            facts.append(f"rejected: {self.t(record.rejection)}")
        scope = _LoopScope.of(record)
        messages = "".join(self.message(m, scope) for m in record.messages
                           if not (isinstance(m, ToolResultMessage) and m.tool_call_id in scope.called))
        unshown = "".join(self.sub_agent_block(ref, record.loop_id) for ref in record.child_loop_refs
                          if ref.tool_call_id not in scope.called)
        return (f'<section class="loop" id="{self.anchors[record.loop_id]}" data-loop-id="{self.t(record.loop_id)}">'
                f'<header class="loop-head"><h3>{self.t(record.loop_id)}</h3> {self.status(record)}'
                f'<div class="meta">{" · ".join(facts)}</div>'
                f'<div class="usage">run usage: {esc(usage_text(record.usage))}</div></header>'
                f'<ol class="messages">{messages}</ol>{unshown}</section>')

    def message(self, message: AgentMessage, scope: _LoopScope) -> str:
        if isinstance(message, UserMessage):
            return f'<li class="msg msg-user"><div class="role">user</div>{self.blocks(message.content)}</li>'
        if isinstance(message, AssistantMessage):
            return self.assistant(message, scope)
        if isinstance(message, ToolResultMessage):
            head = f"tool result {self.t(message.tool_name)} ({self.t(message.tool_call_id)})"
            return f'<li class="msg msg-toolResult"><div class="role">{head}</div>{self.blocks(message.content)}</li>'
        # an application's own message class (outside the AgentMessage union) falls through to the end
        if isinstance(message, ExtensionMessage):  # pyright: ignore[reportUnnecessaryIsInstance]  # else: app class
            return (f'<li class="msg msg-extension"><div class="role">extension {self.t(message.kind)}</div>'
                    f"{self.json_block(message.data)}</li>")
        return f'<li class="msg msg-extension"><div class="role">message</div>{self.t(message)}</li>'

    def assistant(self, message: AssistantMessage, scope: _LoopScope) -> str:
        parts: list[str] = []
        for block in message.content:
            if isinstance(block, ThinkingContent):
                text = "(redacted thinking)" if block.redacted else block.thinking
                parts.append(f'<details class="thinking" open><summary>thinking</summary>'
                             f'<div class="text">{self.t(text)}</div></details>')
            elif isinstance(block, ToolCall):
                parts.append(self.tool_call(block, scope))
            else:
                parts.append(self.blocks([block]))
        if message.error_message:
            parts.append(f'<div class="missing">error: {self.t(message.error_message)}</div>')
        model = f"{message.provider}/{message.model}" if message.provider or message.model else ""
        turn = (f'<div class="usage">turn usage: {esc(usage_text(message.usage))} · '
                f'stop {esc(message.stop_reason.value)}'
                f'{" · " + self.t(model) if model else ""}</div>')
        return f'<li class="msg msg-assistant"><div class="role">assistant</div>{"".join(parts)}{turn}</li>'

    def blocks(self, content: Iterable[Content]) -> str:
        out: list[str] = []
        for block in content:
            if isinstance(block, TextContent):
                out.append(f'<div class="text">{self.t(block.text)}</div>')
            elif isinstance(block, ImageContent):
                out.append(self.image(block))
            elif isinstance(block, ThinkingContent):
                out.append(f'<div class="text thinking">{self.t(block.thinking)}</div>')
            else:
                out.append(f'<div class="text">{self.t(block)}</div>')
        return "".join(out)

    def image(self, block: ImageContent) -> str:
        data = "".join(block.data.split())
        valid = block.mime_type in _IMAGE_TYPES and _BASE64.match(data) is not None
        if valid:
            try:
                base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                valid = False
        if not valid:
            return (f'<div class="missing">image ({self.t(block.mime_type)}) not shown: '
                    'not a base64 PNG, JPEG, GIF or WebP</div>')
        return f'<img class="inline" alt="image" src="data:{block.mime_type};base64,{data}">'

    def tool_call(self, call: ToolCall, scope: _LoopScope) -> str:
        result = scope.results.get(call.id)
        args = self.json_text(call.arguments)
        short = args if len(args) <= _SHORT_ARGS else args[:_SHORT_ARGS - 1] + "…"
        state = "no result" if result is None else ("error" if result.is_error else "ok")
        details = None if result is None else result.details
        body = ['<h4>input</h4>', self.json_block(call.arguments)]
        diffs = edit_diffs(call.arguments, details, self.history.before(call.arguments))
        self.history.after(call.arguments, result is not None and result.is_error, details,
                           None if result is None else _plain(result.content), tool=call.name,
                           finished=result is not None)
        for diff in diffs:
            body.append(f"<h4>diff {self.t(diff.path)} ({esc(diff.kind)})</h4>{self.diff_block(diff.text)}")
        if result is not None:
            body.append(f'<h4>output</h4><pre class="output">{self.t(_plain(result.content))}</pre>')
            body.extend(self.image(b) for b in result.content if isinstance(b, ImageContent))
            if result.details is not None:
                body.append(f"<details><summary>details</summary>{self.json_block(result.details)}</details>")
        for ref in scope.refs.get(call.id, ()):
            body.append(self.sub_agent_block(ref, scope.loop_id))
        cls = "tool-call is-error" if state == "error" else "tool-call"
        return (f'<div class="{cls}" data-tool-call-id="{self.t(call.id)}"><details open><summary>'
                f'{self.t(call.name)} {self.t(short)} — {state}</summary>'
                f'<div class="tool-body">{"".join(body)}</div></details></div>')

    def diff_block(self, text: str) -> str:
        lines: list[str] = []
        for line in self.r.text(text).split("\n"):
            cls = ("d-file" if line.startswith(("--- ", "+++ ")) else "d-hunk" if line.startswith("@@")
                   else "d-add" if line.startswith("+") else "d-del" if line.startswith("-") else "d-ctx")
            lines.append(f'<span class="{cls}">{esc(line)}</span>')
        return f'<pre class="diff">{"".join(lines)}</pre>'

    def sub_agent_block(self, ref: ChildLoopRef, loop_id: str) -> str:
        child = self.tree.sessions.get(ref.child_session_id)
        head = f'<div class="role">sub-agent {self.t(ref.tool_name)} · session {self.t(ref.child_session_id)}</div>'
        link = self.tree.dangling_child(loop_id, ref.tool_call_id)
        if child is None:
            why = str(link) if link is not None else "not in the store: " + self.tree.missing.get(
                ref.child_session_id, "not loaded")
            return f'<div class="subagent missing">{head}{self.t(why)}</div>'
        if link is not None:  # the session is there, the loop the link names is not
            head += f'<div class="missing">{self.t(link)}</div>'
        sections = "".join(self.loop_section(r) for r in child.loops if r.loop_id not in self.shown)
        return f'<div class="subagent" data-child-session-id="{self.t(ref.child_session_id)}">{head}{sections}</div>'

    # ------------------------------------------------------------------ the page

    def page(self) -> str:
        root = self.tree.root
        total = Usage()
        for record in self.tree.all_loops():
            total = total + record.usage
        facts = [("session", root.session_id), ("agent", root.agent_id), ("created", _time(root.created_at)),
                 ("last active", _time(root.last_active_at)), ("runs", str(len(root.loops))),
                 ("sub-agent sessions", str(len(self.tree.sessions) - 1)), ("usage (all runs)", usage_text(total))]
        if root.parent_spawn_ref is not None:
            facts.append(("started by", f"{root.parent_spawn_ref.parent_loop_id} {root.parent_spawn_ref.tool_name}"))
        dl = "".join(f"<div><dt>{esc(k)}</dt><dd>{self.t(v)}</dd></div>" for k, v in facts)
        main = "".join(self.loop_section(r) for r in root.loops if r.loop_id not in self.shown)
        told = {link.target_session_id for link in self.tree.dangling if not link.to_parent}
        notes = [str(link) for link in self.tree.dangling] + [
            f"sub-agent session {sid} could not be loaded: {why}" for sid, why in self.tree.missing.items()
            if sid not in told]
        missing = "".join(f'<p class="missing">{self.t(note)}</p>' for note in notes)
        return ("<!DOCTYPE html>\n"
                f'<html lang="en"><head><meta charset="utf-8">'
                f'<meta http-equiv="Content-Security-Policy" content="{esc(CONTENT_SECURITY_POLICY)}">'
                f'<meta name="viewport" content="width=device-width, initial-scale=1">'
                f"<title>phi session {self.t(root.session_id)}</title><style>{CSS}</style></head>"
                f'<body><header id="summary"><h1>phi session</h1><dl class="facts">{dl}</dl>'
                '<div class="toolbar"><button type="button" id="expand-all">expand all</button>'
                '<button type="button" id="collapse-all">collapse all</button>'
                '<button type="button" id="toggle-thinking">thinking on/off</button></div></header>'
                f'<div class="layout">{self.tree_html()}<main id="conversation"><h2>Conversation</h2>'
                f"{missing}{main}</main></div><script>{JS}</script></body></html>\n")


def _plain(content: Iterable[Content]) -> str:
    return "\n".join(b.text for b in content if isinstance(b, TextContent))


def render_html(tree: ExportTree, redactor: Redactor | None = None) -> str:
    """The page for ``tree`` (see the module docstring)."""
    return _Page(tree, redactor or Redactor()).page()


def export_session_html(store: SessionStore, session_id: str, path: str | os.PathLike[str],
                        secrets: Iterable[str] = ()) -> ExportTree:
    """Write the page of ``session_id`` (and its sub-agent sessions) to ``path``, atomically.

    Raises the store's errors for the session itself, and ``OSError`` when ``path`` cannot be
    written; ``secrets`` are cleaned from the page besides those :class:`Redactor` finds itself."""
    tree = load_tree(store, session_id)
    page = render_html(tree, Redactor(secrets))
    target = os.fspath(path)
    fd, temp = tempfile.mkstemp(prefix=".phi-export.", suffix=".tmp", dir=os.path.dirname(os.path.abspath(target)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(page)
        os.replace(temp, target)
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return tree
