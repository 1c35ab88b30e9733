"""Tool sources: where an Agent's runs get tools beyond its own list (SPEC §12, AGENT-5).

A tool source is any object with ``tools()``; it may also have ``instructions()`` (text the system
prompt of every run ends with) and ``close()`` (called by ``Agent.close()``). The sources phi ships
live in their own packages, which nothing here imports — a vendored copy may delete them:

* :class:`phi.mcp.McpToolset` — an MCP server's tools, listed again when the server says they changed;
* :class:`phi.skills.SkillSet` — the ``<available_skills>`` catalog and the ``read_skill`` tool;
* OpenAPI operations are fixed once the document is read: ``tools=phi.openapi.from_file(path)``.

Sources are asked at the start of every run (AGENT-5): a run's tools and system prompt are fixed
then. A source that fails with a :class:`~phi.errors.PhiError` is left out of that run with a warning.
"""

from __future__ import annotations

from typing import Protocol, Sequence, runtime_checkable

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


def system_prompt_for_run(system_prompt: str, sources: Sequence[ToolSource]) -> str:
    """The agent's system prompt followed by every source's ``instructions()``, a blank line apart."""
    parts = [system_prompt] if system_prompt else []
    for source in sources:
        instructions = getattr(source, "instructions", None)
        text = instructions() if callable(instructions) else ""
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
