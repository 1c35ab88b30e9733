"""SKILL.md frontmatter: finding it and reading its YAML (SPEC §12.3, SKILL-1 and SKILL-2).

The fences are lines: the file starts with a line ``---`` (after an optional UTF-8 byte order
mark; trailing blanks and CRLF line ends are fine) and the frontmatter ends at the next line that
is ``---`` as well. A ``---`` inside a value therefore does not end it, unlike a naive
``split("---")``.

The YAML is composed once with PyYAML's safe loader (the C one when available) and read two ways:

* ``text``: scalars exactly as written (``version: 1.10`` stays ``"1.10"``, ``true`` stays
  ``"true"``), as the reference library skills-ref (strictyaml, which types nothing) reads them;
  a null at the top level (``~``, ``null`` or nothing) is ``None``. The spec's own fields come
  from here.
* ``value``: the value as YAML types it (``True``, ``1.1``, dates), for client-specific keys such
  as ``disable-model-invocation: true``; a value with a tag no safe constructor knows falls back to
  its text.

Skill files written for other clients often hold values that are not valid YAML, most commonly an
unquoted value containing ``": "`` (``description: Use when: ...``). As the Agent Skills client
guide recommends, when parsing fails such plain values are quoted and parsing is tried once more;
if that fails as well, the original error is reported.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .errors import InvalidFrontmatter

__all__ = ["Entry", "split_frontmatter", "parse_frontmatter", "MAX_FRONTMATTER_BYTES"]

#: The frontmatter must close within this many bytes (real ones are well under 4 KiB).
MAX_FRONTMATTER_BYTES = 256 * 1024
_MAX_DEPTH = 64
_BOM = b"\xef\xbb\xbf"
_NULL_TAG = "tag:yaml.org,2002:null"
if TYPE_CHECKING:
    _Loader = yaml.SafeLoader  # the C loader, when there, has the same composer and constructor API
else:
    _Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Constructor(Protocol):
    """The loader's ``construct_object``, typed (PyYAML's stubs leave ``node`` unannotated)."""

    def construct_object(self, node: Node, deep: bool = False) -> Any: ...


@dataclass(frozen=True)
class Entry:
    """One top-level frontmatter value: ``text`` as written, ``value`` as YAML types it."""

    text: Any
    value: Any


def _is_fence(line: bytes) -> bool:
    return line.rstrip(b" \t\r") == b"---"


def split_frontmatter(data: bytes, path: str | Path, *, truncated: bool = False) -> tuple[str, int]:
    """The frontmatter's YAML text and the offset in ``data`` where the body starts.

    ``truncated`` says that ``data`` is only the start of the file, so a missing closing fence is
    reported as "not within the first N bytes".
    """
    start = len(_BOM) if data.startswith(_BOM) else 0
    end = data.find(b"\n", start)
    first = data[start:] if end < 0 else data[start:end]
    if not _is_fence(first):
        raise InvalidFrontmatter(path, "SKILL.md must start with a line '---' that opens the YAML frontmatter")
    pos = len(data) if end < 0 else end + 1
    while pos < len(data):
        nl = data.find(b"\n", pos)
        line_end = len(data) if nl < 0 else nl
        if _is_fence(data[pos:line_end]):
            return _decode(data[end + 1:pos], path), min(len(data), line_end + 1)
        pos = line_end + 1
    if truncated:
        raise InvalidFrontmatter(path, f"no closing '---' line within the first {MAX_FRONTMATTER_BYTES} bytes")
    raise InvalidFrontmatter(path, "the frontmatter is not closed: no line '---' follows the opening one")


def _decode(raw: bytes, path: str | Path) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidFrontmatter(path, f"the frontmatter is not UTF-8 (byte {exc.start})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_frontmatter(text: str, path: str | Path) -> dict[str, Entry]:
    """The top-level mapping of the frontmatter YAML ``text``, by key (as written)."""
    try:
        return _parse(text, path)
    except yaml.YAMLError as exc:
        quoted = quote_colon_values(text)
        if quoted != text:
            try:
                return _parse(quoted, path)
            except yaml.YAMLError:
                pass
        raise InvalidFrontmatter(path, f"invalid YAML in the frontmatter: {_one_line(exc)}") from None


def _parse(text: str, path: str | Path) -> dict[str, Entry]:
    loader = _Loader(text)
    try:
        root = loader.get_single_node()
        if not isinstance(root, MappingNode):
            raise InvalidFrontmatter(path, "the frontmatter must be a YAML mapping (key: value lines)")
        memo: dict[int, Any] = {}
        out: dict[str, Entry] = {}
        for key_node, value_node in root.value:
            key = _text(key_node, path, memo, 0)
            key = key if isinstance(key, str) else str(key)
            text_form = None if _is_null(value_node) else _text(value_node, path, memo, 0)
            out[key] = Entry(text_form, _typed(loader, value_node, text_form))
        return out
    finally:
        loader.dispose()


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == _NULL_TAG


def _typed(loader: _Constructor, node: Node, fallback: Any) -> Any:
    try:
        return loader.construct_object(node, deep=True)
    except (yaml.YAMLError, RecursionError, ValueError, TypeError):
        return fallback


def _text(node: Node, path: str | Path, memo: dict[int, Any], depth: int) -> Any:
    """Scalars as written, in lists and dicts; aliases share one result (no exponential blow-up)."""
    if id(node) in memo:
        return memo[id(node)]
    if depth > _MAX_DEPTH:
        raise InvalidFrontmatter(path, f"the frontmatter nests deeper than {_MAX_DEPTH} levels")
    if isinstance(node, ScalarNode):
        return node.value
    if isinstance(node, SequenceNode):
        items: list[Any] = []
        memo[id(node)] = items
        items.extend(_text(item, path, memo, depth + 1) for item in node.value)
        return items
    mapping: dict[str, Any] = {}
    memo[id(node)] = mapping
    for key_node, value_node in node.value:
        key = _text(key_node, path, memo, depth + 1)
        mapping[key if isinstance(key, str) else str(key)] = _text(value_node, path, memo, depth + 1)
    return mapping


def _one_line(exc: yaml.YAMLError) -> str:
    """The parser's complaint, with a line number of SKILL.md (the opening fence is line 1)."""
    mark, problem = getattr(exc, "problem_mark", None), getattr(exc, "problem", None)
    if mark is None or not problem:
        return " ".join(str(exc).split())
    return f"{problem} (line {mark.line + 2}, column {mark.column + 1})"


# "key:" or "key: value" (the key an identifier, as frontmatter keys are), possibly as a list item.
_KEY_LINE = re.compile(r"^(?P<head>[ \t]*(?:- )?[A-Za-z0-9_][A-Za-z0-9_.-]*:)(?:[ \t]+(?P<value>.*))?$")
_ITEM = re.compile(r"^[ \t]*- ")
# where a plain scalar cannot start: quotes, block, flow, anchor, alias, tag, comment, directives
_NOT_PLAIN = tuple("\"'|>[{&*!#%@`")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def quote_colon_values(text: str) -> str:
    """``text`` with each plain value holding ``": "`` (or ending in ``":"``) double-quoted.

    A plain value may go on over more-indented lines (folded into one line with spaces, as YAML
    does); those lines become part of the quoted value. Literal and folded block scalars are left
    alone, and so are values that parse as nested mappings or lists.
    """
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line, indent = lines[i], _indent(lines[i])
        i += 1
        match = _KEY_LINE.match(line)
        value = (match["value"] or "").strip() if match else ""
        if match is None or value.startswith(_NOT_PLAIN):
            out.append(line)
            if value.startswith(("|", ">")):  # a block scalar: its lines are text, whatever they hold
                while i < len(lines) and (not lines[i].strip() or _indent(lines[i]) > indent):
                    out.append(lines[i])
                    i += 1
            continue
        parts = [value] if value else []
        end = i
        while (end < len(lines) and lines[end].strip() and _indent(lines[end]) > indent
               and not _KEY_LINE.match(lines[end]) and not _ITEM.match(lines[end])):
            parts.append(lines[end].strip())
            end += 1
        joined = " ".join(parts)
        if ": " in joined or joined.endswith(":"):
            out.append(f"{match['head']} {json.dumps(joined, ensure_ascii=False)}")
            i = end
        else:
            out.append(line)
    return "\n".join(out)
