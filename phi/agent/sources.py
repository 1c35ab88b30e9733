"""Tool sources: where an Agent's runs get tools beyond its own list (SPEC §12, AGENT-5).

A tool source is any object with ``tools()``; it may also have ``instructions()`` (text the system
prompt of every run ends with) and ``close()`` (called by ``Agent.close()``). The sources phi ships
live in their own packages, which nothing here imports — a vendored copy may delete them:

* :class:`phi.mcp.McpToolset` — an MCP server's tools, listed again when the server says they changed;
* :class:`phi.skills.SkillSet` — the ``<available_skills>`` catalog and the ``read_skill`` tool;
* OpenAPI operations are fixed once the document is read: ``tools=phi.openapi.from_file(path)``.

Sources are asked at the start of every run (AGENT-5): a run's tools and system prompt are fixed
then. A source whose ``tools()`` or ``instructions()`` raises (any ``Exception``: a dead server, a
bug in application code) is left out of that run with a logged warning; a ``BaseException`` such as
``KeyboardInterrupt`` ends the run. Every name a run offers is one tool's (AGENT-9): the agent's own
tools come first, then each source's in the order of ``tool_sources``, and a tool whose name is
already taken is left out of the run, with a warning naming both. They are asked on a worker of the
shared pool (:func:`start_up`), so that aborting the run — or ``run(timeout=)`` reaching its
deadline — ends a start-up that hangs (AGENT-2).
"""

from __future__ import annotations

import queue
from typing import Any, Protocol, Sequence, runtime_checkable

from ..concurrency import sync
from ..concurrency.cancel import CancellationToken, done_working, working_for
from ..concurrency.workers import PoolExhausted, shared_pool
from ..errors import ConfigError
from ..log import get_logger
from ..loop.tool import AgentTool

log = get_logger(__name__)

OWN_TOOLS = "the agent's own tools"


@runtime_checkable
class ToolSource(Protocol):
    """Gives tools when a run starts; optionally ``instructions() -> str`` and ``close()``."""

    def tools(self) -> Sequence[AgentTool]: ...


def check_own_tools(tools: Sequence[AgentTool]) -> None:
    """Refuse an agent's own tool list in which two tools have one name (AGENT-9): which of them a
    call would run cannot be told, so it is the application's mistake, said before anything starts."""
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        name = getattr(tool, "name", None)
        if not isinstance(name, str):
            raise ConfigError(f"tools[{index}] ({type(tool).__name__}) has no name: a tool needs name, "
                              "description, parameters and execute (phi.loop.tool.AgentTool)")
        if name in seen:
            raise ConfigError(f"tools[{seen[name]}] and tools[{index}] are both named {name!r}: every tool an "
                              "agent offers needs a name of its own (rename one, or give an MCP toolset a prefix)")
        seen[name] = index


def tools_for_run(tools: Sequence[AgentTool], sources: Sequence[ToolSource]) -> list[AgentTool]:
    """The run's tools (AGENT-5, AGENT-9): the agent's own, then each source's current tools in the
    order of ``sources``. A source whose ``tools()`` (or one of its tools' name, description or
    parameters) raises an ``Exception`` is left out; a tool whose
    name an earlier one took is left out — both with a logged warning — so each name is offered once
    and a call runs the tool whose schema the model was shown."""
    found: dict[str, AgentTool] = {}
    origin: dict[str, str] = {}
    for tool in tools:  # own tools are checked when the run is started: their names are distinct
        found.setdefault(tool.name, tool)
        origin.setdefault(tool.name, OWN_TOOLS)
    for index, source in enumerate(sources):
        where = source_label(source, index)
        try:
            given = [(tool, _described(tool)) for tool in source.tools()]
        except Exception as error:  # a dead server or a bug in a source must not stop the agent
            _left_out(where, "tools()", error)
            continue
        taken: dict[str, list[str]] = {}  # where the name was found first -> this source's names left out
        for tool, name in given:
            # application code: a source may give anything
            if not isinstance(name, str) or not name:  # pyright: ignore[reportUnnecessaryIsInstance]
                log.warning("%s gave a tool without a name (%s); it is left out of this run", where,
                            type(tool).__name__)
            elif name in found:
                taken.setdefault(origin[name], []).append(name)
            else:
                found[name] = tool
                origin[name] = where
        for owner, names in taken.items():  # one line per clash of two sources, however many names
            one = len(names) == 1
            log.warning("%s %s of %s %s left out of this run: %s taken by %s (rename the tools, or give the MCP "
                        "toolset a prefix)", "tool" if one else "tools", ", ".join(map(repr, names)), where,
                        "is" if one else "are", "its name is" if one else "their names are", owner)
    return list(found.values())


def start_up(tools: Sequence[AgentTool], sources: Sequence[ToolSource], system_prompt: str,
             cancel: CancellationToken) -> tuple[list[AgentTool], str]:
    """A run's tools and system prompt (AGENT-5), asked of the sources on a worker of the shared pool
    while the run's thread waits, so that cancelling the run ends its start-up too (AGENT-2): the
    sources still answering are then left out of the run (which, cancelled, ends at once, CANCEL-4)
    and their call goes on in the background. A source that raises an ``Exception`` is left out of
    the run; a ``BaseException`` (``KeyboardInterrupt``, ``SystemExit``) is raised on the run's thread
    and ends the run like any exception from application code (LOOP-5)."""
    if not sources:
        return list(tools), system_prompt
    answers: queue.SimpleQueue[tuple[str, Any]] = sync.SimpleQueue()
    # what the worker needs, dropped once answered: a pool thread may keep its last job for a while,
    # and a job holding the sources would keep an agent's MCP servers alive after the agent is gone
    asked: list[tuple[Sequence[AgentTool], Sequence[ToolSource]]] = [(tools, sources)]

    def ask() -> None:
        if not asked:  # cancelled before a worker took it
            return
        own, given = asked[0]
        outer = working_for(cancel)  # a source calling back into its agent is inside the run (AGENT-1)
        try:
            answers.put(("ok", (tools_for_run(own, given), system_prompt_for_run(system_prompt, given))))
        except BaseException as error:  # re-raised on the run's thread
            answers.put(("raised", error))
        finally:
            done_working(outer)

    unregister = cancel.on_cancel(lambda: answers.put(("cancelled", None)))
    try:
        try:
            job = shared_pool().submit(ask)
        except PoolExhausted:  # no thread to spare: ask here, unbounded
            job = None
            ask()
        kind, value = answers.get()
    finally:
        unregister()
        asked.clear()
    if kind == "cancelled":
        if job is not None:
            job.abandon()
        log.warning("the run was cancelled while its tool sources were asked for their tools; they are left out")
        return list(tools), system_prompt
    if kind == "raised":
        raise value
    found: tuple[list[AgentTool], str] = value
    return found


def _described(tool: AgentTool) -> str:
    """``tool``'s name, its description and parameters read once here: a source tool whose
    definition raises (a property of application code) leaves its source out now, with the
    warning, instead of failing the request being built."""
    tool.description  # noqa: B018
    tool.parameters  # noqa: B018
    return tool.name


def system_prompt_for_run(system_prompt: str, sources: Sequence[ToolSource]) -> str:
    """The agent's system prompt followed by every source's ``instructions()``, a blank line apart; a
    source whose ``instructions()`` raises an ``Exception`` adds nothing (logged), as with ``tools()``."""
    parts = [system_prompt] if system_prompt else []
    for index, source in enumerate(sources):
        try:
            instructions = getattr(source, "instructions", None)
            text = str(instructions() or "") if callable(instructions) else ""
        except Exception as error:  # like tools(): a failing source is left out of the run, not fatal
            _left_out(source_label(source, index), "instructions()", error)
            continue
        if text:
            parts.append(text)
    return "\n\n".join(parts)


def source_label(source: object, index: int) -> str:
    """How warnings name a source: its ``label`` when it has one (an MCP server's name), else its
    place and class — never its ``repr``, which application code may fill with a credential."""
    try:
        label = getattr(source, "label", None)
    except Exception:  # a property of application code that fails: the place and class still tell it
        label = None
    return f"tool_sources[{index}] ({label if isinstance(label, str) and label else type(source).__name__})"


def _left_out(where: str, what: str, error: Exception) -> None:
    """The warning for a source left out of a run: the exception's type and message (which phi's log
    filter clears of known secrets, OTEL-11); the traceback only at debug level."""
    try:
        message = str(error)
    except Exception:  # an exception whose __str__ fails still leaves its source out
        message = "(its message could not be read)"
    log.warning("%s is left out of this run: %s raised %s%s", where, what, type(error).__name__,
                f": {message}" if message else "")
    log.debug("%s: %s raised", where, what, exc_info=error)


def close_sources(sources: Sequence[ToolSource]) -> None:
    """Close every source that can be closed; one failure does not keep the others open."""
    for source in sources:
        close = getattr(source, "close", None)
        if not callable(close):
            continue
        try:
            close()
        except Exception:  # closing the others matters more than one failure
            log.warning("closing %r failed", source, exc_info=True)
