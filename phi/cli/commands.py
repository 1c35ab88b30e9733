"""The slash commands of the interactive ``phi`` (SPEC §15 CLI-1, CLI-4, CLI-9; seed 002 §16.8,
§16.9, §16.11).

Each command is a function ``(repl, argument) -> bool`` (False ends the program) listed in
:data:`COMMANDS` with its one-line help; :func:`dispatch` runs the one a line names. ``repl`` is
typed as :class:`~phi.cli.repl_state.ReplState`, not as the REPL class: the REPL imports this
module, and this module does not import it back. A line naming none (:func:`is_command` false) is
not a command at all: the caller offers it as a message.

While a run streams, :func:`dispatch_running` takes a line starting with ``/``: the commands of
:data:`WHILE_RUNNING` act at once (``/quit`` and ``/abort`` stop the run, ``/model`` switches for
the next input, ``/show``, ``/tools``, ``/help`` and ``/mcp`` only show); any other runs when the
reply ends, and says so.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import tempfile
import time
from typing import TYPE_CHECKING, Callable

from .compact import compact_now
from .options import APPROVAL_MODES, THINKING_LEVELS, make_profile, service_name
from .session_setup import apply_auto_compaction

if TYPE_CHECKING:
    from .repl_state import ReplState

Command = Callable[["ReplState", str], bool]
EXECUTE_PROMPT = "Carry out the plan you just made."


def _help(repl: ReplState, arg: str) -> bool:
    width = max(len(name) + len(usage) for name, (_, usage, _) in COMMANDS.items()) + 2
    for name, (_, usage, text) in COMMANDS.items():
        repl.renderer.line(f"  {(name + ' ' + usage).ljust(width)} {text}")
    repl.renderer.line("  @PATH attaches a file (Tab completes). !COMMAND runs a shell command here. A line ending "
                       "in \\ continues the input; a paste is one input, and a message even when it starts with /.")
    repl.renderer.line("  Text typed while phi works steers it; /quit, /abort, /model, /show act at once then. "
                       "Ctrl+C aborts a run; twice at the prompt exits.")
    return True


def _quit(repl: ReplState, arg: str) -> bool:
    return False


def _clear(repl: ReplState, arg: str) -> bool:
    repl.replace_session(carry=False)
    repl.renderer.calls.clear()
    trusted = ", ".join(rule.text for rule in repl.gate.session_rules())
    kept = f" (still always allowed: {trusted}; /approve reset forgets)" if trusted else ""
    repl.renderer.line(f"new conversation: session {repl.session.id}{kept}")
    return True


def _model(repl: ReplState, arg: str) -> bool:
    if not arg:
        repl.renderer.line(f"model: {repl.profile.model} ({service_name(repl.profile, repl.options)})")
        return True
    try:
        profile = make_profile(repl.options, model=arg)
    except Exception as error:
        repl.renderer.line(repl.style("red", str(error)))
        return True
    repl.replace_session(carry=True, profile=profile)
    repl.renderer.line(f"model: {profile.model} ({service_name(profile, repl.options)}); the conversation goes on")
    return True


def _thinking(repl: ReplState, arg: str) -> bool:
    if arg in ("show", "hide"):
        repl.renderer.show_thinking = arg == "show"
    elif arg in THINKING_LEVELS:
        repl.setup.reasoning_effort = None if arg == "off" else arg
        repl.session.config.reasoning_effort = repl.setup.reasoning_effort
    elif arg:
        repl.renderer.line(repl.style("red", f"/thinking takes one of {', '.join(THINKING_LEVELS)}, show, hide"))
        return True
    shown = "shown" if repl.renderer.show_thinking else "hidden"
    repl.renderer.line(f"reasoning effort: {repl.setup.reasoning_effort or 'off'} · thinking {shown}")
    return True


def _plan(repl: ReplState, arg: str) -> bool:
    repl.set_plan_mode(True)
    message = "PLAN mode: only reading tools are offered; /execute carries the plan out"
    repl.renderer.line(repl.style("magenta", message))
    if arg:
        repl.run_input(arg)
    return True


def _execute(repl: ReplState, arg: str) -> bool:
    was_planning = repl.plan_mode
    repl.set_plan_mode(False)
    repl.renderer.line("EXECUTE mode: every tool is offered again")
    if arg or (was_planning and repl.session.agent.messages):
        repl.run_input(arg or EXECUTE_PROMPT)
    return True


def _approve(repl: ReplState, arg: str) -> bool:
    word, _, rest = arg.partition(" ")
    if word in ("allow", "ask", "deny"):
        return _add_rule(repl, word, rest.strip())
    if word == "remove":
        return _remove_rule(repl, rest.strip())
    if arg and arg not in (*APPROVAL_MODES, "reset"):
        repl.renderer.line(repl.style("red", f"/approve takes one of {', '.join(APPROVAL_MODES)}, reset, remove N, "
                                             "or allow|ask|deny RULE"))
        return True
    if arg == "reset":
        repl.gate.forget_session_rules()
    elif arg:
        repl.gate.mode = arg
    _list_rules(repl)
    return True


def _list_rules(repl: ReplState) -> None:
    """The approval mode and the permission rules, numbered for ``/approve remove N``."""
    from .approval import settings_paths

    rules = repl.gate.rules
    if not rules:
        files = ", ".join(label.split(" file ", 1)[-1] for label, _ in settings_paths(repl.options))
        repl.renderer.line(f"approval: {repl.gate.mode} (no permission rules; put them in {files}, or add one: "
                           "/approve allow|ask|deny RULE)")
        return
    repl.renderer.line(f"approval: {repl.gate.mode}; permission rules first — deny beats ask beats allow:")
    width = max(len(rule.text) for rule in rules)
    for number, rule in enumerate(rules, 1):
        repl.renderer.line(f"  {number:>2}. {rule.effect:<5} {rule.text:<{width}}  {rule.source or 'code'}")
    repl.renderer.line(repl.style("grey", "/approve remove N drops a rule for this process (its file stays as it "
                                          "is); /approve allow|ask|deny RULE adds one"))


def _add_rule(repl: ReplState, effect: str, text: str) -> bool:
    from ..coding.permissions import PermissionRule, PermissionRuleError
    from .approval import SESSION

    try:
        rule = PermissionRule.parse(effect, text, SESSION)
    except PermissionRuleError as error:
        repl.renderer.line(repl.style("red", f"{error} (a rule is TOOL or TOOL \"PATTERN\", e.g. "
                                             "shell \"npm test *\")"))
        return True
    added = repl.gate.add(rule)
    repl.renderer.line(f"added {rule} for this process" if added else f"{rule} is there already")
    return True


def _remove_rule(repl: ReplState, arg: str) -> bool:
    try:
        rule = repl.gate.remove(int(arg))
    except (ValueError, IndexError):
        repl.renderer.line(repl.style("red", f"/approve remove takes the number of a rule (1 to "
                                             f"{len(repl.gate.rules)}; /approve lists them)"))
        return True
    kept = f"; it stays in the {rule.source}, and comes back when phi starts again" if " file " in rule.source \
        else ""
    repl.renderer.line(f"removed {rule} for this process{kept}")
    return True


def editor_command() -> list[str]:
    """``$VISUAL``, else ``$EDITOR``, else ``vi`` (split like a shell would)."""
    return shlex.split(os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi")


def _editor(repl: ReplState, arg: str) -> bool:
    fd, path = tempfile.mkstemp(prefix="phi-", suffix=".md")
    os.close(fd)
    try:
        repl.term.paste_mode(False)  # the editor's own way with pastes
        try:
            status = subprocess.call([*editor_command(), path])
        except OSError as error:
            repl.renderer.line(repl.style("red", f"could not start the editor: {error}"))
            return True
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
    finally:
        repl.term.paste_mode(True)
        os.unlink(path)
    if status != 0:
        repl.renderer.line(repl.style("yellow", f"the editor exited with status {status}; nothing sent"))
    elif not text.strip():
        repl.renderer.line(repl.style("grey", "empty file: cancelled"))
    else:
        repl.renderer.line(repl.style("grey", f"sending {len(text.splitlines())} lines from the editor"))
        repl.run_input(text.strip())
    return True


def _tools(repl: ReplState, arg: str) -> bool:
    offered = {t.name for t in repl.session.agent.tools}
    if repl.plan_mode:
        repl.renderer.line(repl.style("magenta", "plan mode offers only these (/execute offers every tool):"))
    for registered in repl.profile.tool_registry.tools():
        if registered.name not in offered:
            continue
        first = registered.definition.description.split(". ")[0]
        repl.renderer.line(f"  {registered.name:<16} {registered.kind:<8} {first[:70]}")
    return True


def _compact(repl: ReplState, arg: str) -> bool:
    if arg.startswith("auto"):
        return _compact_auto(repl, arg[4:].strip())
    compact_now(repl, arg)
    return True


def _compact_auto(repl: ReplState, arg: str) -> bool:
    if arg:
        try:
            value = float(arg.rstrip("%"))
        except ValueError:
            value = -1
        if not 0 <= value <= 100:
            repl.renderer.line(repl.style("red", "/compact auto takes a percentage from 0 (never) to 100"))
            return True
        repl.setup.compact_at = value / 100
        apply_auto_compaction(repl.session, repl.setup.compact_at, repl.context_window())
    at = f"at {round(repl.setup.compact_at * 100)}% of the context window" if repl.setup.compact_at > 0 else "off"
    repl.renderer.line(f"automatic compaction: {at}")
    return True


MCP_WAIT_S = 60.0  # /mcp waits this long for servers still starting (each start has its own bounds)


def _mcp(repl: ReplState, arg: str) -> bool:
    repl.session  # noqa: B018  (waits for start-up, which starts connecting the servers)
    if repl.connector is not None and repl.connector.connecting:
        repl.renderer.line(repl.style("grey", "MCP servers still starting…"))
    repl.between_inputs(wait_for_mcp=MCP_WAIT_S)
    if repl.mcp is None:
        repl.renderer.line("no MCP servers (put them in ./.mcp.json or pass --mcp CONFIG)")
        return True
    for row in repl.mcp.lines():
        repl.renderer.line(row)
    return True


def _save(repl: ReplState, arg: str) -> bool:
    repl.save()
    return True


def _sessions(repl: ReplState, arg: str) -> bool:
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
        for text in row.dangling:
            repl.renderer.line(repl.style("yellow", f"      ! {text}"))
    return True


def _resume(repl: ReplState, arg: str) -> bool:
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


def _export(repl: ReplState, arg: str) -> bool:
    from ..export.command import main as export_main

    repl.save(quiet=True)
    path = arg or f"phi-session-{repl.session.id[:8]}.html"
    said = io.StringIO()  # the export command's own line would repeat ours
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        status = export_main([repl.session.id, "--html", path, "--store", str(repl.sessions.directory)])
    if status == 0:
        repl.renderer.line(f"exported to {path}")
    else:
        repl.renderer.line(repl.style("red", f"export failed: {said.getvalue().strip() or f'status {status}'}"))
    return True


def _show(repl: ReplState, arg: str) -> bool:
    if not arg.isdigit():
        repl.renderer.line("usage: /show N (the number of a tool call line)")
        return True
    repl.renderer.line(repl.renderer.show(int(arg)))
    return True


COMMANDS: dict[str, tuple[Command, str, str]] = {
    "/help": (_help, "", "this list"),
    "/quit": (_quit, "", "save and exit (also /exit, Ctrl+D)"),
    "/clear": (_clear, "", "start a new conversation (the permission rules stay)"),
    "/compact": (_compact, "[FOCUS|auto PCT]", "summarise the conversation to free the context (FOCUS: what "
                 "to keep); auto PCT: compact by itself at PCT% of the window"),
    "/model": (_model, "[NAME]", "show or switch the model, any service (SERVICE:NAME); the conversation goes on"),
    "/thinking": (_thinking, "[LEVEL|show|hide]", "reasoning effort (off..xhigh); show or hide thinking"),
    "/plan": (_plan, "[TASK]", "plan mode: only reading tools"),
    "/execute": (_execute, "[TASK]", "leave plan mode and carry the plan out"),
    "/approve": (_approve, "[MODE|remove N|RULE]", "on|smart|off: ask before every call / writes and commands "
                 "/ never; alone: the permission rules; remove N drops one, RULE (allow|ask|deny TOOL \"PATTERN\") "
                 "adds one; reset forgets the rules added since phi started"),
    "/editor": (_editor, "", "write the input in $VISUAL / $EDITOR (an empty file cancels)"),
    "/tools": (_tools, "", "the tools the model is offered (in plan mode, only those)"),
    "/mcp": (_mcp, "", "the MCP servers and their tools"),
    "/show": (_show, "N", "the whole output of tool call N"),
    "/save": (_save, "", "save the session now"),
    "/sessions": (_sessions, "", "saved sessions"),
    "/resume": (_resume, "ID [LOOP]", "continue a saved session (from one of its runs)"),
    "/export": (_export, "[FILE]", "this session as one HTML file"),
    "/abort": (lambda repl, arg: True, "", "while phi works: stop the run (like Ctrl+C)"),
}
ALIASES = {"/exit": "/quit", "/q": "/quit", "/?": "/help"}
#: commands that act while a run streams (the others wait for the reply to end)
WHILE_RUNNING = ("/quit", "/abort", "/model", "/show", "/tools", "/help", "/mcp")


def _split(line: str) -> tuple[str, str]:
    """The command a line names (aliases resolved) and the rest of the line."""
    name, arg = (line.strip().split(maxsplit=1) + ["", ""])[:2]
    return ALIASES.get(name, name), arg.strip()


def is_command(line: str) -> bool:
    """Whether ``line`` names a command (else, though it starts with ``/``, it is text: a path,
    compiler output, a typo)."""
    return _split(line)[0] in COMMANDS


def dispatch(repl: ReplState, line: str) -> bool:
    """Run the command ``line`` names; False when the program should end."""
    name, arg = _split(line)
    entry = COMMANDS.get(name)
    if entry is None:
        repl.renderer.line(repl.style("red", f"unknown command {name}; /help lists them"))
        return True
    return entry[0](repl, arg)


def dispatch_running(repl: ReplState, line: str) -> str:
    """A command typed while a run streams (see the module docstring): ``"stop"`` when the run is to
    be stopped (``/abort``, ``/quit``), else ``""``."""
    name, arg = _split(line)
    if name not in COMMANDS:
        repl.renderer.line(repl.style("red", f"unknown command {name}; /help lists them"))
        return ""
    if name in ("/quit", "/abort"):
        repl.quit_requested = name == "/quit"
        return "stop"
    if name == "/model" and arg:
        return _model_next(repl, arg)
    if name in WHILE_RUNNING:
        COMMANDS[name][0](repl, arg)
        return ""
    repl.after_reply.append(line)
    repl.renderer.line(repl.style("grey", f"{name}: after this reply"))
    return ""


def _model_next(repl: ReplState, arg: str) -> str:
    try:
        repl.next_profile = make_profile(repl.options, model=arg)
    except Exception as error:
        repl.renderer.line(repl.style("red", str(error)))
        return ""
    profile = repl.next_profile
    service = service_name(profile, repl.options)
    repl.renderer.line(f"model: {profile.model} ({service}) from the next input; this reply finishes on "
                       f"{repl.profile.model}")
    return ""


__all__ = ["COMMANDS", "WHILE_RUNNING", "dispatch", "dispatch_running", "editor_command", "is_command"]
