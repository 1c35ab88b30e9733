"""What the interactive ``phi`` adds to a typed input (SPEC §15 CLI-10): ``@path`` mentions, ``!``
shell commands, the system-prompt flags; the MCP servers are in :mod:`phi.cli.mcp_servers`.

* ``@path`` (a file or directory under the working directory; Tab completes it) attaches the file's
  text — or the directory's listing — to the message, after the typed text. A mention of something
  that does not exist is sent as typed, with a notice; a binary or too large file is not attached.
* ``!command`` runs the command in the working directory (``sh -c``; the environment without
  credential-like variables, as for the model's commands), shows its output, and offers it to the
  conversation: ``y`` sends it along with the next message.
* ``--system-prompt TEXT`` replaces the profile's base instructions; ``--append-system-prompt TEXT``
  comes last in the system prompt (after plan mode's instructions, when on).
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Iterable


if TYPE_CHECKING:
    from .repl_state import ReplState

MENTION = re.compile(r"(?<![\w@])@([^\s@]+)")
MAX_ATTACHED_BYTES = 256 * 1024
MAX_LISTED = 200
SHELL_TIMEOUT_S = 600.0
SHELL_OUTPUT_CHARS = 30_000


# ----------------------------------------------------------------------------- @path


def _inside(root: Path, path: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _attachment(root: Path, name: str) -> tuple[str | None, str]:
    """``(text to attach or None, what to tell the person)``."""
    path = root / name
    if not _inside(root, path):
        return None, f"@{name} is outside the working directory: not attached"
    if path.is_dir():
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir())
        listed = "\n".join(entries[:MAX_LISTED]) + (f"\n… {len(entries) - MAX_LISTED} more" if len(entries) >
                                                    MAX_LISTED else "")
        return f'<directory path="{name}">\n{listed}\n</directory>', f"attached @{name} ({len(entries)} entries)"
    if not path.is_file():
        return None, f"no file {name}: @{name} is sent as typed"
    size = path.stat().st_size
    if size > MAX_ATTACHED_BYTES:
        return None, (f"@{name} is {size:,} bytes (more than {MAX_ATTACHED_BYTES:,}): not attached; ask the model "
                      "to read it")
    data = path.read_bytes()
    if b"\0" in data[:8192]:
        return None, f"@{name} is a binary file: not attached"
    text = data.decode("utf-8", "replace")
    return f'<file path="{name}">\n{text}\n</file>', f"attached @{name} ({len(text.splitlines())} lines)"


def expand_mentions(repl: ReplState, text: str) -> str | None:
    """The message to send for ``text``: its mentioned files attached, a pending ``!`` output first."""
    root = Path(repl.options.cwd)
    attached: list[str] = []
    for name in dict.fromkeys(m.group(1).rstrip(".,;:!?)]}'\"") for m in MENTION.finditer(text)):
        if not name:
            continue
        block, note = _attachment(root, name)
        repl.renderer.line(repl.style("grey", note))
        if block is not None:
            attached.append(block)
    pending, repl.pending_context = repl.pending_context, []
    return "\n\n".join([*pending, text, *attached])


def complete(root: Path, text: str, commands: Iterable[str]) -> list[str]:
    """Tab at the prompt: ``@`` + paths under ``root``, or ``/`` + one of ``commands`` (the names
    the REPL answers to, handed in by it: this module keeps no command table)."""
    if text.startswith("/"):
        return sorted(name + " " for name in commands if name.startswith(text))
    if not text.startswith("@"):
        return []
    typed = text[1:]
    folder, _, start = typed.rpartition("/")
    base = root / folder if folder else root
    if not _inside(root, base) or not base.is_dir():
        return []
    found: list[str] = []
    for entry in sorted(base.iterdir()):
        if entry.name.startswith(start) and (start.startswith(".") or not entry.name.startswith(".")):
            shown = f"{folder}/{entry.name}" if folder else entry.name
            found.append("@" + shown + ("/" if entry.is_dir() else ""))
    return found


# ----------------------------------------------------------------------------- !command


def command_environment() -> dict[str, str]:
    """This process's environment without credential-like variables (SPEC CLI-8)."""
    from ..tools.env_filter import filter_environment

    return dict(filter_environment(os.environ, "inherit_all"))


def run_shell(repl: ReplState, command: str) -> None:
    """``!command`` (see the module docstring)."""
    if not command:
        repl.renderer.line("usage: !COMMAND (runs it here and offers its output to the conversation)")
        return
    try:
        done = subprocess.run(["sh", "-c", command], cwd=repl.options.cwd, env=command_environment(),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=SHELL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        repl.renderer.line(repl.style("red", f"!{command}: still running after {SHELL_TIMEOUT_S:.0f}s; stopped"))
        return
    except OSError as error:
        repl.renderer.line(repl.style("red", f"!{command}: {error}"))
        return
    output = done.stdout.decode("utf-8", "replace")
    if output:
        repl.renderer.write(output if output.endswith("\n") else output + "\n")
    repl.renderer.line(repl.style("grey", f"exit status {done.returncode}"))
    if len(output) > SHELL_OUTPUT_CHARS:
        output = output[:SHELL_OUTPUT_CHARS // 2] + "\n[... output cut ...]\n" + output[-SHELL_OUTPUT_CHARS // 2:]
    question = repl.style("yellow", "add this output to your next message? [y]es, [n]o: ")
    repl.renderer.write(question)
    with repl.term.running():
        try:
            answer = repl.term.read_key("yn", repl.kept_paste(question))
        except EOFError:
            answer = "n"
    repl.renderer.write(f"{answer}\n" if repl.term.tty else "\n")
    repl.renderer.after_typing()
    if answer == "y":
        repl.pending_context.append(f"I ran `{command}` (exit status {done.returncode}); its output:\n"
                                    f"```\n{output.rstrip()}\n```")
        repl.renderer.line(repl.style("grey", "it goes with your next message"))


__all__ = ["expand_mentions", "complete", "run_shell", "command_environment"]
