"""File edits of a session as unified diffs (SPEC §16 EXPORT-2).

A tool call is recognised as a file edit by its arguments, whatever the tool is called (phi-core's
and the coding layer's names differ, applications register their own):

* ``path``/``file_path`` with ``old_text``/``old_string`` and ``new_text``/``new_string`` — an
  edit: the replaced text against its replacement, numbered from the ``first_line`` the tool reported
  in its result details when it did;
* ``path``/``file_path`` with ``content`` — a write: against the file's earlier content when the
  session shows it (:class:`FileHistory`: an earlier write or edit of the same path, or an earlier
  read whose result holds the whole file, with nothing since that may have changed the file by
  another route: a patch, a command, a tool of unknown effect, a partial read), else every line
  added — ``/dev/null`` as the old side when the result says the file was created, and the kind
  ``overwrite`` (earlier content not recorded) when it says the file existed, e.g. after a read of
  only part of it;
* ``patch`` holding an apply_patch ("v4a") text — one diff per file operation, parsed with
  :func:`phi.tools.patch_parser.parse_patch` (a patch that does not parse is shown as it is).

Anything else is not an edit (:func:`edit_diffs` returns ``[]``).
"""

from __future__ import annotations

import difflib
import posixpath
import re
from dataclasses import dataclass
from typing import Mapping, cast

from ..json_values import is_array

_CONTEXT = 3
_NUMBERED = re.compile(r" *(\d+) \| (.*)", re.S)  # a line of read_file's output (both wordings)


@dataclass(frozen=True)
class FileDiff:
    """One file's change: ``kind`` is ``edit``, ``write``, ``add``, ``delete``, ``update`` or
    ``patch`` (a patch that did not parse: ``text`` is the patch itself)."""

    path: str
    kind: str
    text: str


def _mapping(value: object) -> Mapping[str, object] | None:
    """``value`` when it is a mapping (a result's details, read by their string keys), else None."""
    return cast("Mapping[str, object]", value) if isinstance(value, Mapping) else None


def _first_str(args: Mapping[str, object], *names: str) -> str | None:
    for name in names:
        value = args.get(name)
        if isinstance(value, str):
            return value
    return None


def unified(old: list[str], new: list[str], old_name: str, new_name: str, start: int = 1) -> str:
    """A unified diff of two line lists (no line endings), line numbers counted from ``start``."""
    out = [f"--- {old_name}", f"+++ {new_name}"]
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for group in matcher.get_grouped_opcodes(_CONTEXT):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(start + i1, i2 - i1)} +{_range(start + j1, j2 - j1)} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out.extend(" " + line for line in old[a1:a2])
                continue
            out.extend("-" + line for line in old[a1:a2])
            out.extend("+" + line for line in new[b1:b2])
    return "\n".join(out)


def _range(first: int, count: int) -> str:
    if count == 0:
        return f"{first - 1},0"
    return str(first) if count == 1 else f"{first},{count}"


def _lines(text: str) -> list[str]:
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _all_added(content: str, old_name: str, path: str) -> str:
    """A diff adding every line of ``content`` (the previous content is not known)."""
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    body = [f"--- {old_name}", f"+++ b/{path}", f"@@ -0,0 +{_range(1, len(lines))} @@"]
    return "\n".join(body + ["+" + line for line in lines])


def whole_read(details: object, output: str | None) -> str | None:
    """The file's content when a read_file result shows all of it (its ``details`` name
    ``total_lines`` and ``output`` numbers every one of them from 1, nothing cut), else None. Line
    endings are not recorded: every line is taken to end with a newline."""
    info = _mapping(details)
    if info is None or output is None:
        return None
    total = info.get("total_lines")
    if not isinstance(total, int) or isinstance(total, bool):
        return None
    if info.get("truncated_output") is True:
        full = info.get("full_output")
        if not isinstance(full, str):
            return None
        output = full
    lines = output.split("\n")
    if lines[0].startswith("File: "):  # phi-core's header line
        lines = lines[1:]
    elif lines == ["(empty file)"]:
        lines = []
    if len(lines) != total:  # a range, or a note saying what was left out
        return None
    content: list[str] = []
    for number, line in enumerate(lines, 1):
        match = _NUMBERED.fullmatch(line)
        if match is None or int(match.group(1)) != number:
            return None
        content.append(match.group(2) + "\n")
    return "".join(content)


def _key(arguments: Mapping[str, object]) -> str | None:
    path = _first_str(arguments, "path", "file_path")
    return None if path is None else posixpath.normpath(path)


#: Tools that only look at files: they change nothing the history knows (``read_file`` may add a
#: whole read, ``read_many_files`` is handled on its own).
READ_ONLY_TOOLS = frozenset({"read_file", "grep", "glob", "list_dir", "list_files", "search"})


class FileHistory:
    """What the session so far says each file contains: the content of its last write or of its
    last whole read, with later edits applied. Fed in the order the calls ran (:meth:`after`).

    A remembered content is used only while nothing may have changed the file by another route
    since: any ``apply_patch`` (a patch, even a failed one, may have changed files and names them
    relative to a directory the history does not know), any shell command or other tool the history
    does not understand (a sub-agent, an application's tool) forgets every file; a read of only part
    of a file, a ``read_many_files`` naming it (its output does not say the whole file was shown), an
    edit the history cannot replay (a tolerant match) or a write or edit without a result forgets
    that file. Only a whole read or a write or edit of the file sets it again.
    """

    def __init__(self) -> None:
        self.files: dict[str, str] = {}

    def before(self, arguments: Mapping[str, object]) -> str | None:
        if not isinstance(arguments, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # app-built ToolCalls
            return None
        key = _key(arguments)
        return None if key is None else self.files.get(key)

    def after(self, arguments: Mapping[str, object], failed: bool, details: object = None,
              output: str | None = None, *, tool: str | None = None, finished: bool = True) -> None:
        """Note what a call of the tool named ``tool`` left in the files (``failed``: its result is an
        error; ``finished`` False: it has no result, so it may or may not have run). ``details`` and
        ``output`` are its result's, which for a read may hold the whole file. Without ``tool`` the
        call is judged by its arguments alone (a call that is neither a write, an edit nor a read of
        one file forgets everything)."""
        if not isinstance(arguments, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # app-built ToolCalls
            self.files.clear()
            return
        key = _key(arguments)
        content = _first_str(arguments, "content")
        old = _first_str(arguments, "old_text", "old_string")
        new = _first_str(arguments, "new_text", "new_string")
        if key is not None and (content is not None or (old is not None and new is not None)):
            if not finished:
                self._forget(key)
            elif not failed:  # a failed write or edit changed nothing: it replaces the file whole or not at all
                self._written(key, content, old, new, arguments, details)
            return
        if tool == "read_many_files":
            self._forget_read_many(arguments, details)
            return
        if tool in READ_ONLY_TOOLS or (tool is None and key is not None and _first_str(arguments, "patch",
                                                                                      "command") is None):
            if key is not None and tool in (None, "read_file"):
                read = None if failed or not finished else whole_read(details, output)
                if read is not None:
                    self._forget(key)
                    self.files[key] = read
                elif not failed:  # a part of it was shown: it may not be what was remembered
                    self._forget(key)
            return
        self.files.clear()  # apply_patch, a command, or a tool of unknown effect

    def _written(self, key: str, content: str | None, old: str | None, new: str | None,
                 arguments: Mapping[str, object], details: object) -> None:
        text = self.files.get(key)
        self._forget(key)  # other spellings of the path now hold something stale
        if content is not None:
            self.files[key] = content
            return
        assert old is not None and new is not None
        info = _mapping(details)
        fuzzy = info is not None and info.get("fuzzy") is True
        if text is None or fuzzy or old not in text:  # the edit cannot be replayed on what is known
            return
        every = arguments.get("replace_all") is True
        self.files[key] = text.replace(old, new) if every else text.replace(old, new, 1)

    def _forget_read_many(self, arguments: Mapping[str, object], details: object) -> None:
        names: list[str] = []
        info = _mapping(details)
        for group in (arguments.get("paths"), None if info is None else info.get("files")):
            if is_array(group):
                names.extend(p for p in group if isinstance(p, str))
        if any(any(c in name for c in "*?[") for name in names):
            self.files.clear()  # a pattern: which files it read is only partly known
            return
        for name in names:
            self._forget(posixpath.normpath(name))

    def _forget(self, key: str) -> None:
        """Forget ``key`` and every other spelling that may name the same file (relative or absolute:
        the same last component) — forgetting too much only costs a diff, keeping a stale one misleads."""
        base = posixpath.basename(key)
        for known in [k for k in self.files if posixpath.basename(k) == base]:
            del self.files[known]


def edit_diffs(arguments: Mapping[str, object], details: object = None,
               before: str | None = None) -> list[FileDiff]:
    """The diffs a tool call with these arguments made (``details``: its result's details;
    ``before``: the file's content before the call, when the session shows it)."""
    if not isinstance(arguments, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]  # app-built ToolCalls
        return []
    info = _mapping(details) or {}
    path = _first_str(arguments, "path", "file_path")
    old = _first_str(arguments, "old_text", "old_string")
    new = _first_str(arguments, "new_text", "new_string")
    if path is not None and old is not None and new is not None:
        first = info.get("first_line")
        start = first if isinstance(first, int) and not isinstance(first, bool) and first > 0 else 1
        text = unified(old.split("\n"), new.split("\n"), f"a/{path}", f"b/{path}", start)
        return [FileDiff(path, "edit", text)]
    content = _first_str(arguments, "content")
    if path is not None and content is not None:
        created = info.get("created") is True
        if before is not None and not created:
            return [FileDiff(path, "write", unified(_lines(before), _lines(content), f"a/{path}", f"b/{path}"))]
        if created or info.get("created") is not False:
            return [FileDiff(path, "write", _all_added(content, "/dev/null" if created else f"a/{path}", path))]
        return [FileDiff(path, "overwrite", _all_added(content, f"a/{path} (earlier content not recorded)", path))]
    patch = _first_str(arguments, "patch", "input")
    if patch is not None and "*** Begin Patch" in patch:
        return patch_diffs(patch)
    return []


def patch_diffs(patch: str) -> list[FileDiff]:
    """One diff per file operation of an apply_patch text."""
    from ..tools.patch_parser import AddFile, DeleteFile, PatchParseError, parse_patch

    try:
        hunks = parse_patch(patch)
    except PatchParseError:
        return [FileDiff("(patch)", "patch", patch)]
    out: list[FileDiff] = []
    for hunk in hunks:
        if isinstance(hunk, AddFile):
            out.append(FileDiff(hunk.path, "add", _all_added(hunk.contents, "/dev/null", hunk.path)))
        elif isinstance(hunk, DeleteFile):
            out.append(FileDiff(hunk.path, "delete", f"--- a/{hunk.path}\n+++ /dev/null"))
        else:
            target = hunk.move_path or hunk.path
            body = [f"--- a/{hunk.path}", f"+++ b/{target}"]
            for chunk in hunk.chunks:
                body.append("@@ " + chunk.change_context + " @@" if chunk.change_context else "@@")
                body.extend(line.op + line.text for line in chunk.lines)
            out.append(FileDiff(target, "update", "\n".join(body)))
    return out
