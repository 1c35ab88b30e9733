"""Search-and-replace editing: the ``edit_file`` tool in phi-core's wording (``path``, ``old_text``,
``new_text``) and in the coding layer's (``file_path``, ``old_string``, ``new_string``,
``replace_all``) (SPEC §9.3, §9.4; REQ-050/101-103/137).

One implementation serves both; :class:`EditFileWording` holds the names and descriptions. The old
text must match exactly once (or, with ``replace_all``, at least once). When it matches nowhere,
the coding tool (and the phi-core tool when ``fuzzy=True``) retries ignoring whitespace differences
and typographic punctuation and reports what it matched; otherwise the error carries a "Did you
mean" hint with the most similar lines of the file. Several matches without ``replace_all`` is an
error asking for more context. Writes are confined to ``allowed_roots``. With a tool session that
requires it, the file must have been read in the session and be unchanged since
(:mod:`phi.tools.file_state`). Whatever the session, the edited text replaces the file only if the
file still holds exactly the bytes the edit was made from, checked right before the rename: a change
someone else makes while the tool works is refused and kept.

Memory stays at a few times the file's size: the tolerant match is one regular expression run over
the original text (no per-character tables), and files over ``max_bytes`` (10 MiB) are refused.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence, TypedDict

from ..errors import ToolError
from ..loop.tool import ToolContext
from ..types import ToolResult
from ._common import (
    check_cancel,
    check_writable,
    display_path,
    finish,
    get_env,
    number_lines,
    object_schema,
    os_error,
    write_roots,
)
from .environment import write_verified
from .file_state import Expected, stamp_of_bytes
from .text_match import PUNCTUATION_TABLE, WHITESPACE
from .tool_session import ToolSession, tool_session

if TYPE_CHECKING:
    from .environment import ExecutionEnvironment

_HINT_SCAN_LINES = 20_000
MAX_EDIT_BYTES = 10 * 1024 * 1024


def _equivalents() -> tuple[str, dict[str, str]]:
    """The whitespace class and, per ASCII punctuation mark, the class of characters equal to it."""
    spaces = set(WHITESPACE)
    classes: dict[str, set[str]] = {}
    for source, target in PUNCTUATION_TABLE.items():
        if target == " ":
            spaces.add(chr(source))
        else:
            classes.setdefault(target, {target}).add(chr(source))
    return _char_class(spaces), {k: _char_class(v) for k, v in classes.items()}


def _char_class(chars: set[str]) -> str:
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


_SPACE_CLASS, _PUNCT_CLASSES = _equivalents()


def fuzzy_regex(needle: str) -> re.Pattern[str] | None:
    """A pattern matching ``needle`` modulo whitespace runs and typographic punctuation, or None
    when the needle is only whitespace. Matches start and end on a non-space character."""
    pieces: list[str] = []
    for ch in needle.translate(PUNCTUATION_TABLE):
        if ch in WHITESPACE or ch == " ":
            if pieces and pieces[-1] != _SPACE_CLASS + "+":
                pieces.append(_SPACE_CLASS + "+")
            continue
        pieces.append(_PUNCT_CLASSES.get(ch) or re.escape(ch))
    if pieces and pieces[-1] == _SPACE_CLASS + "+":
        pieces.pop()
    return re.compile("".join(pieces)) if pieces else None


def _head_lines(content: str, count: int) -> list[str]:
    """The first ``count`` lines of ``content`` without splitting the whole text."""
    end = -1
    for _ in range(count):
        end = content.find("\n", end + 1)
        if end < 0:
            return content.split("\n")
    return content[:end].split("\n")


@dataclass
class EditOutcome:
    text: str
    replacements: int
    fuzzy_matched: str | None  # the original text a fuzzy match replaced, if any
    first_line: int            # 1-based line of the first replacement


def find_similar_text(content: str, needle: str) -> tuple[int, str] | None:
    """(1-based line, snippet) of the lines of ``content`` most similar to ``needle``, if any."""
    wanted = [line.strip() for line in needle.split("\n")]
    anchor = next((w for w in wanted if w), "")
    if not anchor:
        return None
    lines = _head_lines(content, _HINT_SCAN_LINES)
    best, best_ratio = -1, 0.6
    matcher = difflib.SequenceMatcher(autojunk=False)
    matcher.set_seq2(anchor)
    for i, line in enumerate(lines):
        matcher.set_seq1(line.strip())
        if matcher.real_quick_ratio() <= best_ratio or matcher.quick_ratio() <= best_ratio:
            continue
        ratio = matcher.ratio()
        if ratio > best_ratio:
            best, best_ratio = i, ratio
    if best < 0:
        return None
    start = max(best - wanted.index(anchor), 0)
    window = lines[start:start + max(len(wanted), 1)]
    return start + 1, number_lines(window, start + 1)


def _not_found(content: str, old: str, shown: str, label: str) -> ToolError:
    hint = find_similar_text(content, old)
    message = f"{label} not found in {shown}."
    if hint is not None:
        message += f" Did you mean (line {hint[0]}):\n{hint[1]}"
    else:
        message += " Read the file to check the exact text, including indentation."
    return ToolError(message)


def edit_text(content: str, old: str, new: str, *, replace_all: bool, fuzzy: bool, shown: str,
              label: str = "old_string", can_replace_all: bool = True) -> EditOutcome:
    """Apply one search-and-replace to ``content``; raises ToolError with a helpful message.

    ``label`` names the old text in messages; ``can_replace_all``: the caller offers ``replace_all``,
    so the error for several matches suggests it.
    """
    if old == "":
        raise ToolError(f"{label} must not be empty; use a file-writing tool to create or overwrite a file.")
    if old == new:
        raise ToolError(f"{label} and its replacement are identical; nothing to change.")
    count = content.count(old)
    if count == 1 or (count > 1 and replace_all):
        first = content.index(old)
        text = content.replace(old, new) if replace_all else content.replace(old, new, 1)
        return EditOutcome(text, count if replace_all else 1, None, content.count("\n", 0, first) + 1)
    if count > 1:
        raise ToolError(f"{label} matches {count} locations in {shown}. Include more surrounding context "
                        "to make it unique" + (", or set replace_all to true." if can_replace_all else "."))
    pattern = fuzzy_regex(old) if fuzzy else None
    matches = [m.span() for m in pattern.finditer(content)] if pattern is not None else []
    if not matches:
        raise _not_found(content, old, shown, label)
    if len(matches) > 1 and not replace_all:
        raise ToolError(f"{label} was not found exactly, and matches {len(matches)} locations when ignoring "
                        f"whitespace in {shown}. Include more surrounding context to make it unique.")
    pieces: list[str] = []
    pos = 0
    for start, end in matches:
        pieces += [content[pos:start], new]
        pos = end
    pieces.append(content[pos:])
    first, first_end = matches[0]
    return EditOutcome("".join(pieces), len(matches), content[first:first_end], content.count("\n", 0, first) + 1)


class EditDetails(TypedDict):
    """``details`` of an edit_file result."""

    path: str          # as shown to the model
    old_lines: int     # lines of the text replaced (the first match's, for a tolerant match)
    new_lines: int
    replacements: int
    first_line: int    # 1-based line of the first replacement
    fuzzy: bool        # matched ignoring whitespace and typographic punctuation


@dataclass(frozen=True)
class EditFileWording:
    """The names and words of one ``edit_file`` variant. Its repr shows only the parameter names, so
    a tool's repr stays short."""

    path_key: str
    old_key: str
    old_help: str = field(repr=False)
    new_key: str
    description: str = field(repr=False)
    replace_all: bool  # whether the tool offers ``replace_all``

    def schema(self) -> dict[str, Any]:
        properties: dict[str, Any] = {
            self.path_key: {"type": "string", "minLength": 1, "description": "Path of the file to edit."},
            self.old_key: {"type": "string", "minLength": 1, "description": self.old_help},
            self.new_key: {"type": "string", "description": "Replacement text."},
        }
        if self.replace_all:
            properties["replace_all"] = {"type": "boolean", "default": False, "description": "Replace all occurrences."}
        return object_schema(properties, [self.path_key, self.old_key, self.new_key])


PHI_CORE_EDIT = EditFileWording(
    "path", "old_text", "Exact text to replace.", "new_text",
    "Replace one exact occurrence of old_text with new_text in a file. old_text must match the file "
    "exactly (including indentation) and must be unique; include surrounding lines to make it unique.",
    replace_all=False,
)
CODING_EDIT = EditFileWording(
    "file_path", "old_string", "Exact text to find.", "new_string",
    "Replace an exact string occurrence in a file. old_string must be unique unless replace_all is "
    "true; include enough surrounding context to identify the location.",
    replace_all=True,
)


def edit_file(env: ExecutionEnvironment, path: str, old: str, new: str, *, replace_all: bool, fuzzy: bool,
              allowed_roots: Sequence[str] | None, ctx: ToolContext, wording: EditFileWording,
              max_bytes: int = MAX_EDIT_BYTES, session: ToolSession | None = None) -> tuple[EditOutcome, EditDetails]:
    """Read, edit and write back ``path``; returns the outcome and the result details."""
    check_cancel(ctx)
    resolved = check_writable(env, path, allowed_roots)
    shown = display_path(env, resolved)
    files = tool_session(session).files
    try:
        if env.is_dir(path):
            raise ToolError(f"{shown} is a directory, not a file")
        files.check(env, resolved, shown)
        data = env.read_bytes(path, max_bytes)
    except OSError as exc:
        raise os_error(exc, shown) from None
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ToolError(f"{shown} is not valid UTF-8 text; it cannot be edited with this tool.") from None
    source = Expected(resolved, shown, stamp_of_bytes(data))  # what the edit was made from
    del data
    outcome = edit_text(content, old, new, replace_all=replace_all, fuzzy=fuzzy, shown=shown,
                        label=wording.old_key, can_replace_all=wording.replace_all)
    del content
    check_cancel(ctx)
    written = outcome.text.encode("utf-8")
    try:
        write_verified(env, path, written, write_roots(env, allowed_roots), source)
    except OSError as exc:
        raise os_error(exc, shown) from None
    files.note(resolved, stamp_of_bytes(written))
    del written
    old_lines = (outcome.fuzzy_matched if outcome.fuzzy_matched is not None else old).count("\n") + 1
    details: EditDetails = {"path": shown, "old_lines": old_lines, "new_lines": new.count("\n") + 1,
                            "replacements": outcome.replacements, "first_line": outcome.first_line,
                            "fuzzy": outcome.fuzzy_matched is not None}
    return outcome, details


def _message(outcome: EditOutcome, details: EditDetails) -> str:
    text = (f"Edited {details['path']}: replaced {details['old_lines']} line(s) with {details['new_lines']} "
            f"line(s) at line {outcome.first_line}")
    if outcome.replacements > 1:
        text += f" ({outcome.replacements} replacements)"
    if outcome.fuzzy_matched is not None:
        text += ("\nNote: no exact match; matched while ignoring whitespace/Unicode punctuation differences. "
                 f"The replaced text was:\n{outcome.fuzzy_matched}")
    return text


@dataclass
class EditFileTool:
    """The ``edit_file`` tool; phi-core's wording unless ``wording`` says otherwise. The old text must
    match exactly; with ``fuzzy`` a text found nowhere is retried ignoring whitespace and typographic
    punctuation. ``description`` and ``parameters`` default to the wording's."""

    env: ExecutionEnvironment | None = None
    allowed_roots: Sequence[str] | None = None
    fuzzy: bool = False
    max_bytes: int = MAX_EDIT_BYTES
    session: ToolSession | None = None
    wording: EditFileWording = PHI_CORE_EDIT
    name: str = "edit_file"
    label: str = "Edit file"
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict[str, Any])

    def __post_init__(self) -> None:
        self.description = self.description or self.wording.description
        self.parameters = self.parameters or self.wording.schema()

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        env = get_env(self.env)
        words = self.wording
        replace_all = words.replace_all and bool(args.get("replace_all", False))
        outcome, details = edit_file(env, args[words.path_key], args[words.old_key], args[words.new_key],
                                     replace_all=replace_all, fuzzy=self.fuzzy, allowed_roots=self.allowed_roots,
                                     ctx=ctx, wording=words, max_bytes=self.max_bytes, session=self.session)
        return finish(_message(outcome, details), self.name, details, session=self.session)


@dataclass
class CodingEditFileTool(EditFileTool):
    """The coding layer's ``edit_file`` (seed 004 §3.3): :class:`EditFileTool` in its wording, with
    the tolerant fallback on."""

    fuzzy: bool = True
    wording: EditFileWording = CODING_EDIT
