"""The slash commands of the interactive ``phi`` (SPEC §15 CLI-1, CLI-4; seed 002 §16.8,
§16.9, §16.11).

Each command is a function ``(repl, argument) -> bool`` (False ends the program) listed in
:data:`COMMANDS` with its one-line help; :func:`dispatch` runs the one a line names.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING, Callable

from .options import APPROVAL_MODES, THINKING_LEVELS

if TYPE_CHECKING:
    from .repl import Repl

Command = Callable[["Repl", str], bool]
EXECUTE_PROMPT = "Carry out the plan you just made."


def _help(repl: Repl, arg: str) -> bool:
    width = max(len(name) + len(usage) for name, (_, usage, _) in COMMANDS.items()) + 2
    for name, (_, usage, text) in COMMANDS.items():
        repl.renderer.line(f"  {(name + ' ' + usage).ljust(width)} {text}")
    repl.renderer.line("  A line ending in \\ continues the input. Text typed while phi works steers it. "
                       "Ctrl+C aborts a run; twice at the prompt exits.")
    return True


def _quit(repl: Repl, arg: str) -> bool:
    return False


def _clear(repl: Repl, arg: str) -> bool:
    repl.replace_session(carry=False)
    repl.renderer.calls.clear()
    repl.renderer.line(f"new conversation: session {repl.session.id}")
    return True


def _model(repl: Repl, arg: str) -> bool:
    if not arg:
        repl.renderer.line(f"model: {repl.profile.model} ({repl.profile.id})")
        return True
    from .options import make_profile

    try:
        profile = make_profile(repl.options, model=arg)
    except Exception as error:
        repl.renderer.line(repl.style("red", str(error)))
        return True
    repl.replace_session(carry=True, profile=profile)
    repl.renderer.line(f"model: {profile.model} ({profile.id}); the conversation goes on")
    return True


def _thinking(repl: Repl, arg: str) -> bool:
    if arg in ("show", "hide"):
        repl.renderer.show_thinking = arg == "show"
    elif arg in THINKING_LEVELS:
        repl.reasoning_effort = None if arg == "off" else arg
        repl.session.config.reasoning_effort = repl.reasoning_effort
    elif arg:
        repl.renderer.line(repl.style("red", f"/thinking takes one of {', '.join(THINKING_LEVELS)}, show, hide"))
        return True
    shown = "shown" if repl.renderer.show_thinking else "hidden"
    repl.renderer.line(f"reasoning effort: {repl.reasoning_effort or 'off'} · thinking {shown}")
    return True


def _plan(repl: Repl, arg: str) -> bool:
    repl.set_plan_mode(True)
    message = "PLAN mode: only reading tools are offered; /execute carries the plan out"
    repl.renderer.line(repl.style("magenta", message))
    if arg:
        repl.run_input(arg)
    return True


def _execute(repl: Repl, arg: str) -> bool:
    was_planning = repl.plan_mode
    repl.set_plan_mode(False)
    repl.renderer.line("EXECUTE mode: every tool is offered again")
    if arg or (was_planning and repl.session.agent.messages):
        repl.run_input(arg or EXECUTE_PROMPT)
    return True


def _approve(repl: Repl, arg: str) -> bool:
    if arg and arg not in APPROVAL_MODES:
        repl.renderer.line(repl.style("red", f"/approve takes one of {', '.join(APPROVAL_MODES)}"))
        return True
    if arg:
        repl.gate.mode = arg
    trusted = ", ".join(sorted(repl.gate.trusted)) or "none"
    repl.renderer.line(f"approval: {repl.gate.mode} (always allowed: {trusted})")
    return True


def editor_command() -> list[str]:
    """``$VISUAL``, else ``$EDITOR``, else ``vi`` (split like a shell would)."""
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def _editor(repl: Repl, arg: str) -> bool:
    fd, path = tempfile.mkstemp(prefix="phi-", suffix=".md")
    os.close(fd)
    try:
        try:
            status = subprocess.call([*editor_command(), path])
        except OSError as error:
            repl.renderer.line(repl.style("red", f"could not start the editor: {error}"))
            return True
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    finally:
        os.unlink(path)
    if status != 0:
        repl.renderer.line(repl.style("yellow", f"the editor exited with status {status}; nothing sent"))
    elif not text.strip():
        repl.renderer.line(repl.style("grey", "empty file: cancelled"))
    else:
        repl.renderer.line(repl.style("grey", f"sending {len(text.splitlines())} lines from the editor"))
        repl.run_input(text.strip())
    return True


def _tools(repl: Repl, arg: str) -> bool:
    offered = {t.name for t in repl.session.agent.tools}
    for registered in repl.profile.tool_registry.tools():
        mark = "" if registered.name in offered else repl.style("grey", " (not offered in plan mode)")
        first = registered.definition.description.split(". ")[0]
        repl.renderer.line(f"  {registered.name:<16} {registered.kind:<8} {first[:70]}{mark}")
    return True


def _save(repl: Repl, arg: str) -> bool:
    repl.save()
    return True


def _sessions(repl: Repl, arg: str) -> bool:
    try:
        rows = repl.sessions.summaries()
    except Exception as error:
        repl.renderer.line(repl.style("red", f"cannot list sessions: {error}"))
        return True
    if not rows:
        repl.renderer.line(f"no saved sessions in {repl.sessions.directory}")
    for row in rows:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(row.last_active_at))
        here = " *" if row.session_id == repl.session.id else ""
        repl.renderer.line(f"  {row.session_id}  {when}  {row.loops:>3} runs  {row.first_input}{here}")
    return True


def _resume(repl: Repl, arg: str) -> bool:
    session_id, _, at = arg.partition(" ")
    if not session_id:
        repl.renderer.line("usage: /resume ID [LOOP_ID] (see /sessions; LOOP_ID: branch from that run)")
        return True
    try:
        count = repl.resume(session_id, at.strip() or None)
    except Exception as error:
        repl.renderer.line(repl.style("red", f"cannot resume {arg}: {error}"))
        return True
    repl.renderer.line(f"resumed session {session_id}: {count} messages" + (f" (branching from {at.strip()})"
                                                                               if at.strip() else ""))
    return True


def _export(repl: Repl, arg: str) -> bool:
    from ..export.command import main as export_main

    repl.save(quiet=True)
    path = arg or f"phi-session-{repl.session.id[:8]}.html"
    status = export_main([repl.session.id, "--html", path, "--store", str(repl.sessions.directory)])
    repl.renderer.line(f"exported to {path}" if status == 0 else repl.style("red", f"export failed ({status})"))
    return True


def _show(repl: Repl, arg: str) -> bool:
    if not arg.isdigit():
        repl.renderer.line("usage: /show N (the number of a tool call line)")
        return True
    repl.renderer.line(repl.renderer.show(int(arg)))
    return True


COMMANDS: dict[str, tuple[Command, str, str]] = {
    "/help": (_help, "", "this list"),
    "/quit": (_quit, "", "save and exit (also /exit, Ctrl+D)"),
    "/clear": (_clear, "", "start a new conversation"),
    "/model": (_model, "[NAME]", "show or switch the model, any service (SERVICE:NAME); the conversation goes on"),
    "/thinking": (_thinking, "[LEVEL|show|hide]", "reasoning effort (off..xhigh); show or hide thinking"),
    "/plan": (_plan, "[TASK]", "plan mode: only reading tools"),
    "/execute": (_execute, "[TASK]", "leave plan mode and carry the plan out"),
    "/approve": (_approve, "[on|smart|off]", "ask before every call / writes and commands / never"),
    "/editor": (_editor, "", "write the input in $VISUAL / $EDITOR (an empty file cancels)"),
    "/tools": (_tools, "", "the tools the model is offered"),
    "/show": (_show, "N", "the whole output of tool call N"),
    "/save": (_save, "", "save the session now"),
    "/sessions": (_sessions, "", "saved sessions"),
    "/resume": (_resume, "ID [LOOP]", "continue a saved session (from one of its runs)"),
    "/export": (_export, "[FILE]", "this session as one HTML file"),
}
ALIASES = {"/exit": "/quit", "/q": "/quit", "/?": "/help"}


def dispatch(repl: Repl, line: str) -> bool:
    """Run the command ``line`` names; False when the program should end."""
    name, _, arg = line.partition(" ")
    name = ALIASES.get(name, name)
    entry = COMMANDS.get(name)
    if entry is None:
        repl.renderer.line(repl.style("red", f"unknown command {name}; /help lists them"))
        return True
    return entry[0](repl, arg.strip())


__all__ = ["COMMANDS", "dispatch", "editor_command"]
