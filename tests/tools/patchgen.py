"""Seeded generator of realistic (and adversarial) apply_patch cases for the differential fuzz.

A case is a small tree of source files plus one patch, written the way a model writes them: Python
with nested indentation and blank lines, brace languages, prose with typographic punctuation,
configuration files; LF, CRLF, mixed and lone-CR endings, missing final newlines, trailing
whitespace, repeated lines. Patches update (one or more chunks, with or without ``@@`` headers,
``*** End of File``, context rendered with the usual slips: lost indentation, ASCII quotes for curly
ones, dropped trailing spaces), add, delete and move files. A share of cases is then mutated line by
line to probe the parser's edges. Everything depends only on the ``random.Random`` passed in.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

NAMES = ["value", "count", "items", "result", "config", "path", "name", "data", "total", "index", "cache", "user"]
FUNCS = ["load", "save", "parse", "render", "update", "compute", "validate", "fetch", "close", "reset"]
CLASSES = ["Store", "Parser", "Widget", "Session", "Report", "Client"]
PROSE = [
    "The parser doesn’t accept “smart quotes” yet — see the notes.",
    "Run it twice – once per platform.", "It’s fine… mostly.", "Use the ‘fast’ path\u00a0when possible.",
    "Set the limit to 10\u2009MB.", "The “default” value is −1.", "Plain ASCII line with no surprises.",
    "Returns the value; raises on error.", "TODO — decide on naming.",
]
TYPOGRAPHIC = {"’": "'", "‘": "'", "“": '"', "”": '"', "—": "-", "–": "-", "−": "-", "\u00a0": " ", "\u2009": " ", "…": "..."}


@dataclass
class Case:
    files: dict[str, bytes | None]
    patch: str
    kind: str


# -- source files ------------------------------------------------------------------------------

def _python(rng: random.Random) -> list[str]:
    ind = "\t" if rng.random() < 0.1 else "    "
    lines = ['"""' + rng.choice(PROSE) + '"""', ""] if rng.random() < 0.6 else []
    lines += sorted(rng.sample(["import os", "import sys", "import json", "from pathlib import Path", "import re"], 2))
    lines += ["", f"LIMIT = {rng.randint(1, 99)}", ""]
    for _ in range(rng.randint(1, 4)):
        lines += ["", ""]
        if rng.random() < 0.4:
            cls = rng.choice(CLASSES)
            lines += [f"class {cls}:", f'{ind}"""{rng.choice(PROSE)}"""', "",
                      f"{ind}def __init__(self, {rng.choice(NAMES)}):", f"{ind*2}self.value = value",
                      f"{ind*2}self.items = []", ""]
        name = rng.choice(FUNCS)
        arg = rng.choice(NAMES)
        lines += [f"def {name}({arg}):"]
        for _ in range(rng.randint(1, 5)):
            roll = rng.random()
            if roll < 0.3:
                lines += [f"{ind}if {arg} is None:", f"{ind*2}return None"]
            elif roll < 0.5:
                lines += [f"{ind}for item in {arg}:", f"{ind*2}total += item", ""]
            elif roll < 0.6:
                lines += [f"{ind}# {rng.choice(PROSE)}"]
            else:
                lines += [f"{ind}{rng.choice(NAMES)} = {rng.choice(NAMES)} + {rng.randint(0, 9)}"]
        lines += [f"{ind}return {arg}"]
    return lines


def _brace(rng: random.Random) -> list[str]:
    lines = ["'use strict';", ""]
    for _ in range(rng.randint(1, 4)):
        name = rng.choice(FUNCS)
        lines += [f"function {name}({rng.choice(NAMES)}) {{"]
        for _ in range(rng.randint(1, 4)):
            if rng.random() < 0.3:
                lines += [f"  if (!{rng.choice(NAMES)}) {{", "    return null;", "  }"]
            else:
                lines += [f"  const {rng.choice(NAMES)} = {rng.choice(NAMES)}.{rng.choice(FUNCS)}();"]
        lines += ["  return true;", "}", ""]
    lines += ["module.exports = { " + ", ".join(rng.sample(FUNCS, 2)) + " };"]
    return lines


def _prose(rng: random.Random) -> list[str]:
    lines = ["# " + rng.choice(CLASSES) + " notes", ""]
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.4:
            lines += ["- " + rng.choice(PROSE) for _ in range(rng.randint(1, 3))]
        else:
            lines += [rng.choice(PROSE)]
        lines += [""] * rng.choice([1, 1, 2])
    return lines[:-1] if rng.random() < 0.5 else lines


def _config(rng: random.Random) -> list[str]:
    lines = []
    for section in rng.sample(NAMES, rng.randint(1, 3)):
        lines += [f"{section}:"] + [f"  {k}: {rng.randint(0, 9)}" for k in rng.sample(NAMES, rng.randint(1, 4))] + [""]
    return lines


def _tiny(rng: random.Random) -> list[str]:
    return [rng.choice(["a", "b", "", " ", "x = 1", "}"]) for _ in range(rng.randint(0, 4))]


ODD_SPACE = ["\u3000", "\x85", "\u2028", "\x0b", "\x0c", "\x1c", "\u200b", "\ufeff", "\u00a0", "\t"]


def _repetitive(rng: random.Random) -> list[str]:
    """The same few lines over and over, some with unusual whitespace: first-match choices matter."""
    block = [rng.choice(["    return None", "}", "", "pass", "  - item"]) for _ in range(rng.randint(1, 3))]
    lines = block * rng.randint(2, 5)
    for _ in range(rng.randint(0, 3)):
        i = rng.randrange(len(lines))
        lines[i] = rng.choice([lines[i] + rng.choice(ODD_SPACE), rng.choice(ODD_SPACE) + lines[i], lines[i].strip()])
    return lines


GENERATORS = [(".py", _python, 8), (".js", _brace, 4), (".md", _prose, 4), (".yaml", _config, 2), (".txt", _tiny, 2),
              (".txt", _repetitive, 2)]


def _encode(rng: random.Random, lines: list[str]) -> bytes:
    """Join logical lines with a realistic mix of line endings, final newline and stray spaces."""
    style = rng.choices(["lf", "crlf", "mixed", "cr"], [70, 20, 7, 3])[0]
    out = []
    for i, line in enumerate(lines):
        if line and rng.random() < 0.05:
            line += rng.choice([" ", "  ", "\t"])
        ending = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}.get(style) or rng.choice(["\n", "\r\n", "\r\n"])
        if i == len(lines) - 1 and rng.random() < 0.25:
            ending = ""
        out.append(line + ending)
    data = "".join(out).encode("utf-8")
    return b"\xef\xbb\xbf" + data if rng.random() < 0.02 else data


def source_file(rng: random.Random, directory: str) -> tuple[str, bytes]:
    ext, make, _ = rng.choices(GENERATORS, [w for *_, w in GENERATORS])[0]
    name = rng.choice(FUNCS + NAMES) + ext
    return f"{directory}/{name}" if directory else name, _encode(rng, make(rng))


# -- rendering lines the way models do -------------------------------------------------------

def _typography_to_ascii(text: str) -> str:
    return "".join(TYPOGRAPHIC.get(ch, ch) for ch in text)


def _slip(rng: random.Random, text: str) -> str:
    """A context/removed line as a model might quote it."""
    roll = rng.random()
    if roll < 0.80:
        return text
    if roll < 0.86:
        return text.strip()
    if roll < 0.91:
        return _typography_to_ascii(text)
    if roll < 0.95:
        return text.rstrip()
    if roll < 0.97:
        return text + rng.choice([" ", " ", "\t", "\u3000"])
    if roll < 0.985:
        return " " + text
    return text.replace("\t", "    ")


def _context(rng: random.Random, text: str) -> str:
    if text.strip() == "" and rng.random() < 0.4:
        return ""  # a blank context line written without its leading space
    return " " + _slip(rng, text)


def _new_line(rng: random.Random, near: str) -> str:
    indent = near[: len(near) - len(near.lstrip())]
    roll = rng.random()
    if roll < 0.15:
        return ""
    if roll < 0.5 and near.strip():
        return near.replace(rng.choice(NAMES), rng.choice(NAMES), 1) + rng.choice(["", "  # changed", ";"])
    if roll < 0.6:
        return indent + rng.choice(PROSE)
    return indent + f"{rng.choice(NAMES)} = {rng.choice(FUNCS)}({rng.choice(NAMES)})"


def _anchor(rng: random.Random, lines: list[str], lo: int, hi: int) -> str | None:
    """An ``@@`` context line: a def/class/heading before ``hi`` (at or after ``lo``) when there is one."""
    starts = [i for i in range(lo, hi) if lines[i].lstrip().startswith(("def ", "class ", "function ", "# "))]
    candidates = starts or [i for i in range(lo, hi) if lines[i].strip()]
    if not candidates:
        return None
    text = lines[rng.choice(candidates)]
    roll = rng.random()
    if roll < 0.15:
        text = text.strip()
    elif roll < 0.25:
        text = "  " + text + "  "
    elif roll < 0.3:
        text = text + "\t"
    return text


# -- update hunks ----------------------------------------------------------------------------

def _logical_lines(data: bytes) -> list[str]:
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def _chunk(rng: random.Random, lines: list[str], lo: int, first: bool) -> tuple[list[str], int]:
    """One chunk changing lines at or after ``lo``; returns its patch lines and where it ends."""
    n = len(lines)
    if rng.random() < 0.1 or lo >= n:
        header = ["@@"] if rng.random() < 0.7 else [f"@@ {_anchor(rng, lines, 0, n) or ''}".rstrip()]
        return header + ["+" + _new_line(rng, lines[-1] if lines else "") for _ in range(rng.randint(1, 3))], lo
    before = rng.randint(0, 3)
    start = rng.randint(lo, n - 1)
    removed = rng.randint(0, min(3, n - start))
    after = rng.randint(0, 3)
    ctx_lo, end = max(lo, start - before), min(n, start + removed + after)
    body = [_context(rng, lines[i]) for i in range(ctx_lo, start)]
    added = [_new_line(rng, lines[min(start, n - 1)]) for _ in range(rng.randint(0 if removed else 1, 3))]
    minus = ["-" + _slip(rng, lines[i]) for i in range(start, start + removed)]
    if rng.random() < 0.3 and minus and added:  # interleave -/+ pairs
        pairs = [x for pair in zip(minus, ["+" + a for a in added]) for x in pair]
        body += pairs + minus[len(added):] + ["+" + a for a in added[len(minus):]]
    else:
        body += minus + ["+" + a for a in added]
    body += [_context(rng, lines[i]) for i in range(start + removed, end)]
    roll = rng.random()
    if first and roll < 0.3:
        header = []
    elif roll < 0.75:
        header = ["@@"] + ([""] if rng.random() < 0.02 else [])
    else:
        anchor = _anchor(rng, lines, lo, max(ctx_lo, lo + 1))
        header = ["@@" if anchor is None else "@@ " + anchor]
    if end == n and rng.random() < 0.5 or rng.random() < 0.03:
        body.append(rng.choice(["*** End of File", "*** End of File", "*** End of File  "]))
    return header + body, end


def update_hunk(rng: random.Random, path: str, data: bytes, move_to: str | None) -> list[str]:
    lines = _logical_lines(data)
    out = [f"*** Update File: {path}"] + ([f"*** Move to: {move_to}"] if move_to is not None else [])
    lo = 0
    chunks = []
    for index in range(rng.choices([1, 2, 3, 4], [50, 30, 15, 5])[0]):
        body, lo = _chunk(rng, lines, lo, index == 0)
        chunks.append(body)
    if len(chunks) > 1 and rng.random() < 0.04:
        chunks[0], chunks[1] = chunks[1], chunks[0]
    for index, body in enumerate(chunks):
        if index and rng.random() < 0.15:
            out.append(rng.choice(["", "", " ", "\t"]))
        out += body
    return out


# -- whole cases -----------------------------------------------------------------------------

def _tree(rng: random.Random) -> dict[str, bytes | None]:
    files: dict[str, bytes | None] = {}
    for _ in range(rng.randint(1, 4)):
        path, data = source_file(rng, rng.choice(["", "src", "src/pkg", "docs"]))
        files[path] = data
    return files


def _new_path(rng: random.Random, files: dict[str, bytes | None]) -> str:
    roll = rng.random()
    existing = [p for p, d in files.items() if d is not None]
    if roll < 0.08 and existing:
        return rng.choice(existing)
    if roll < 0.1:
        return "../outside-" + rng.choice(NAMES) + ".txt"
    directory = rng.choice(["", "src", "lib/new", "docs/api", "a b"])
    name = rng.choice(NAMES) + rng.choice([".py", ".txt", ".md"])
    return f"{directory}/{name}" if directory else name


def _hunk(rng: random.Random, files: dict[str, bytes | None], touched: set[str]) -> list[str]:
    """One file operation; mostly on files no earlier hunk of the patch touched."""
    existing = [p for p, d in files.items() if d is not None and (p not in touched or rng.random() < 0.05)]
    roll = rng.random()
    if roll < 0.6 and existing:
        path = rng.choice(existing)
        touched.add(path)
        move = None
        if rng.random() < 0.1:
            move = rng.choice([path, "./" + path]) if rng.random() < 0.2 else _new_path(rng, files)
            touched.add(move)
        return update_hunk(rng, path, files[path] or b"", move)
    if roll < 0.8 or not existing:
        lines = _python(rng)[: rng.randint(0, 8)] if rng.random() < 0.7 else [rng.choice(PROSE)]
        path = _new_path(rng, files)
        touched.add(path)
        return [f"*** Add File: {path}"] + ["+" + line for line in lines]
    path = rng.choice(existing) if rng.random() < 0.9 else "missing.txt"
    touched.add(path)
    return [f"*** Delete File: {path}"]


def _frame(rng: random.Random, body: list[str]) -> str:
    begin, end = "*** Begin Patch", "*** End Patch"
    if rng.random() < 0.05:
        begin, end = " " + begin + " ", end + "  "
    lines = [begin] + body + [end]
    if rng.random() < 0.03:  # models sometimes close the patch twice
        lines[-1:-1] = [end] + [rng.choice(["", " ", "\t"]) for _ in range(rng.randint(0, 2))]
    if rng.random() < 0.03:
        lines = [rng.choice(["<<EOF", "<<'EOF'", '<<"EOF"'])] + lines + ["EOF"]
    newline = "\r\n" if rng.random() < 0.06 else "\n"
    return newline.join(lines) + (newline if rng.random() < 0.8 else "")


JUNK = ["", " ", "\t", "@@", "@@ ", "@@\t", "*** End of File", "*** End of File ", " *** End of File", "+", "-",
        "+\r", "*** Move to: moved.txt", "  ", "@@ def load(value):", "***", "*** Add File: junk.txt",
        "\u3000", "@@\u3000", "*** End of File\u3000", "@@ return None\x85", " \x0c", "-\u2028", "*** Delete File: ",
        "*** End Patch", "*** Begin Patch", "@@ @@", "*** Update File: missing.py"]


def _mutate(rng: random.Random, lines: list[str]) -> list[str]:
    lines = list(lines)
    for _ in range(rng.randint(1, 3)):
        if not lines:
            break
        i = rng.randrange(len(lines))
        op = rng.randrange(6)
        if op == 0:
            del lines[i]
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            lines.insert(i, rng.choice(JUNK))
        elif op == 3 and i + 1 < len(lines):
            lines[i], lines[i + 1] = lines[i + 1], lines[i]
        elif op == 4 and lines[i][:1] in (" ", "+", "-"):
            lines[i] = rng.choice([" ", "+", "-", ""]) + lines[i][1:]
        else:
            lines[i] = lines[i] + rng.choice([" ", "\t", "\r", "", "\r\r", "\u3000", "\x85"])
    return lines


def _special(rng: random.Random) -> Case:
    """Files the patch cannot handle: a directory, invalid UTF-8, a path that is a file's parent."""
    files: dict[str, bytes | None] = {"dir": None, "bin.dat": b"\xff\xfe\x00x\n", "f.txt": b"a\nb\n"}
    body = rng.choice([
        ["*** Update File: dir", "@@", "-a", "+b"], ["*** Delete File: dir"], ["*** Add File: dir", "+x"],
        ["*** Update File: bin.dat", "@@", "-x", "+y"], ["*** Add File: f.txt/inner", "+x"],
        ["*** Update File: f.txt", "*** Move to: dir", "@@", "-a", "+A"],
        ["*** Update File: nope.txt", "@@", "-a", "+A"],
    ])
    return Case(files, _frame(rng, body), "special")


def generate_case(rng: random.Random) -> Case:
    """One case; about a fifth of them adversarial (mutated lines or unhandleable files)."""
    if rng.random() < 0.03:
        return _special(rng)
    files = _tree(rng)
    body: list[str] = []
    touched: set[str] = set()
    for _ in range(rng.choices([1, 2, 3], [60, 30, 10])[0]):
        body += _hunk(rng, files, touched)
    kind = "realistic"
    if rng.random() < 0.18:
        body, kind = _mutate(rng, body), "mutated"
    if rng.random() < 0.02:
        body.insert(1, "*** End of File")
    return Case(files, _frame(rng, body), kind)
