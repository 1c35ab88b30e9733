"""Tool sources: where an Agent's runs get tools beyond its own list (SPEC §12, AGENT-5).

A tool source is any object with ``tools()``; it may also have ``instructions()`` (text the system
prompt of every run ends with) and ``close()`` (called by ``Agent.close()``). The sources phi ships
live in their own packages, which nothing here imports — a vendored copy may delete them:

* :class:`phi.mcp.McpToolset` — an MCP server's tools, listed again when the server says they changed;
* :class:`phi.skills.SkillSet` — the ``<available_skills>`` catalog and the ``read_skill`` tool;
* OpenAPI operations are fixed once the document is read: ``tools=phi.openapi.from_file(path)``.

Sources are asked at the start of every run (AGENT-5): a run's tools and system prompt are fixed
then. A source that fails with a :class:`~phi.errors.PhiError` is left out of that run with a warning.
They are asked on a worker of the shared pool (:func:`start_up`), so that aborting the run — or
``run(timeout=)`` reaching its deadline — ends a start-up that hangs (AGENT-2).
"""

from __future__ import annotations

import queue
from typing import Any, Protocol, Sequence, runtime_checkable

from ..concurrency import sync
from ..concurrency.cancel import CancellationToken, done_working, working_for
from ..concurrency.workers import PoolExhausted, shared_pool
from ..errors import PhiError
from ..log import get_logger
from ..loop.tool import AgentTool

log = get_logger(__name__)


@runtime_checkable
class ToolSource(Protocol):
    """Gives tools when a run starts; optionally ``instructions() -> str`` and ``close()``."""

    def tools(self) -> Sequence[AgentTool]: ...


def tools_for_run(tools: Sequence[AgentTool], sources: Sequence[ToolSource]) -> list[AgentTool]:
    """The agent's own tools, then each source's current tools (a failing source is left out)."""
    found = list(tools)
    for source in sources:
        try:
            found.extend(source.tools())
        except PhiError as error:  # a dead server must not stop the agent: its tools are left out
            log.warning("tools of %r are unavailable for this run: %s", source, error)
    return found


def start_up(tools: Sequence[AgentTool], sources: Sequence[ToolSource], system_prompt: str,
             cancel: CancellationToken) -> tuple[list[AgentTool], str]:
    """A run's tools and system prompt (AGENT-5), asked of the sources on a worker of the shared pool
    while the run's thread waits, so that cancelling the run ends its start-up too (AGENT-2): the
    sources still answering are then left out of the run (which, cancelled, ends at once, CANCEL-4)
    and their call goes on in the background. An exception a source raises (other than a PhiError,
    which leaves that source out) ends the run like any exception from application code (LOOP-5)."""
    if not sources:
        return list(tools), system_prompt
    answers: queue.SimpleQueue[tuple[str, Any]] = sync.SimpleQueue()

    def ask() -> None:
        outer = working_for(cancel)  # a source calling back into its agent is inside the run (AGENT-1)
        try:
            answers.put(("ok", (tools_for_run(tools, sources), system_prompt_for_run(system_prompt, sources))))
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
    if kind == "cancelled":
        if job is not None:
            job.abandon()
        log.warning("the run was cancelled while its tool sources were asked for their tools; they are left out")
        return list(tools), system_prompt
    if kind == "raised":
        raise value
    found: tuple[list[AgentTool], str] = value
    return found


def system_prompt_for_run(system_prompt: str, sources: Sequence[ToolSource]) -> str:
    """The agent's system prompt followed by every source's ``instructions()``, a blank line apart."""
    parts = [system_prompt] if system_prompt else []
    for source in sources:
        instructions = getattr(source, "instructions", None)
        try:
            text = instructions() if callable(instructions) else ""
        except PhiError as error:  # like tools(): a failing source is left out of the run, not fatal
            log.warning("instructions of %r are unavailable for this run: %s", source, error)
            continue
        if text:
            parts.append(str(text))
    return "\n\n".join(parts)


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
