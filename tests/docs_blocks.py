"""Code blocks of the Markdown pages in ``docs/``, and running the ones marked runnable.

The markers, in a fence's info string:

* ```` ```python runnable ```` — the block is run. A page's runnable blocks run in order, as one
  program in one namespace (``__name__ == "__main__"``), in an empty working directory with an
  empty ``HOME`` and no provider credentials in the environment: offline.
* ```` ```python runnable file=server.py ```` — the block is saved as ``server.py`` in that
  directory (for a later block to start), not run.
* ```` ```output ```` right after a runnable block — what that block prints. Lines must match
  exactly, except that a line ``...`` matches any number of lines and ``...`` inside a line matches
  any text (``id-... done``).

Every other ``python`` block is compiled, so that an example cannot rot into a syntax error, except
a ```` ```python fragment ```` (a signature such as ``f(a, *, b=1) -> str``, not a program).

``scripts/typecheck-docs`` also holds every ``python`` block to ``mypy --strict`` and pyright's strict
mode: a page's runnable blocks as one program, each other block alone — except a fragment and a
```` ```python sketch ```` (a few lines that use names the prose around them gives, or a package phi's
tests do not install; compiled, not type-checked). A sketch is never runnable.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SEPARATOR = "\x1e--- end of docs block ---\x1e"
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.S | re.M)
# Variables that would let a page reach a real provider; a runnable page must not need them.
CREDENTIALS = re.compile(r"API_KEY|_TOKEN|^AWS_|^AZURE_|^GOOGLE_|^GEMINI_|^ANTHROPIC_|^OPENAI_|^PHI_PROXY")


@dataclass
class Block:
    """One fenced block: its info-string words, text and the line its code starts on."""

    info: list[str]
    code: str
    line: int
    output: str | None = None  # the ``output`` block that follows a runnable one

    @property
    def language(self) -> str:
        return self.info[0] if self.info else ""

    @property
    def runnable(self) -> bool:
        return self.language == "python" and "runnable" in self.info

    @property
    def file(self) -> str | None:
        return next((word.split("=", 1)[1] for word in self.info if word.startswith("file=")), None)


def blocks(text: str) -> list[Block]:
    """The fenced blocks of a page, each runnable one carrying the ``output`` block after it."""
    found: list[Block] = []
    for match in FENCE.finditer(text):
        block = Block(match.group(1).split(), match.group(2), text.count("\n", 0, match.start(2)) + 1)
        if block.language == "output" and found and found[-1].runnable and found[-1].output is None:
            found[-1].output = block.code
            continue
        found.append(block)
    return found


def pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


def lines_match(expected: str, actual: str) -> bool:
    """``expected`` (an ``output`` block) against what was printed; ``...`` lines are wildcards."""
    want, got = expected.splitlines(), actual.splitlines()

    def match(i: int, j: int) -> bool:
        if i == len(want):
            return j == len(got)
        if want[i] == "...":
            return any(match(i + 1, k) for k in range(j, len(got) + 1))
        if j == len(got):
            return False
        pattern = ".*".join(re.escape(part) for part in want[i].split("..."))
        return re.fullmatch(pattern, got[j]) is not None and match(i + 1, j + 1)

    return match(0, 0)


DRIVER = """
import faulthandler, json, sys
faulthandler.dump_traceback_later(float(sys.argv[2]), exit=True)  # a hang shows where it hangs
blocks = json.load(open(sys.argv[1], encoding="utf-8"))
namespace = {"__name__": "__main__"}
for path, line, code in blocks:
    exec(compile("\\n" * (line - 1) + code, path, "exec"), namespace)
    sys.stdout.flush()
    print(%r, flush=True)
""" % SEPARATOR


def offline_environment(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not CREDENTIALS.search(key)}
    env.update(HOME=str(home), PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8", PHI_OFFLINE="1")
    return env


def run_page(page: Path, workdir: Path, substitutions: dict[str, str] | None = None,
             timeout: float = 120) -> list[tuple[Block, str]]:
    """Run the runnable blocks of ``page`` in ``workdir``; return each block with what it printed.

    ``substitutions`` replace text in the code before it runs (a public address by a local
    server's), and are undone in what it printed, so the ``output`` blocks show the page's text.
    """
    substitutions = substitutions or {}
    runnable = [block for block in blocks(page.read_text(encoding="utf-8")) if block.runnable]
    program = []
    for block in runnable:
        code = block.code
        for public, local in substitutions.items():
            code = code.replace(public, local)
        if block.file:
            (workdir / block.file).write_text(code, encoding="utf-8")
        else:
            program.append((str(page), block.line, code))
    (workdir / "home").mkdir(exist_ok=True)
    script = workdir / ".docs-blocks.json"
    script.write_text(json.dumps(program), encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", DRIVER, str(script), str(timeout)], cwd=workdir,
                          capture_output=True, text=True, timeout=timeout + 30, env=offline_environment(workdir / "home"))
    assert done.returncode == 0, f"{page.name}: a runnable block failed\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    printed = done.stdout
    for public, local in substitutions.items():
        printed = printed.replace(local, public)
    outputs = printed.split(SEPARATOR + "\n")
    executed = [block for block in runnable if not block.file]
    assert len(outputs) == len(executed) + 1, printed
    return list(zip(executed, outputs))
