"""An Agent's tool sources: skills, MCP servers and OpenAPI specs (seed 001 §1 and §5; SPEC §12, AGENT-5).

Each source package (:mod:`phi.skills`, :mod:`phi.mcp`, :mod:`phi.openapi`) is imported by the
builder that uses it, never by ``import phi``. What a source gives is looked at when a run starts:

* OpenAPI tools are fixed once the spec is read, so they join ``agent.tools`` at once;
* an MCP server's tool list can change (``notifications/tools/list_changed``), so the agent keeps
  the connection (a :class:`~phi.mcp.McpToolset`) and asks it for the current tools at every run;
* skills add their ``<available_skills>`` catalog to the system prompt of every run, and a
  ``read_skill`` tool with which the model loads a skill on demand (SPEC §12.3).

``agent.close()`` (or leaving ``with Agent(...) as agent:``) aborts a run in progress and closes
the MCP connections: their servers are stopped, their HTTP sessions deleted.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence, TypeVar

from ..errors import PhiError
from ..log import get_logger

if TYPE_CHECKING:
    from ..openapi import OpenApiConfig, OperationFilter
    from ..skills import SkillSet

A = TypeVar("A", bound="AgentToolSources")

log = get_logger(__name__)

SKILLS_INSTRUCTION = ("When a task matches a skill's description below, call read_skill with its name before you "
                      "start, then follow its instructions.")


class AgentToolSources:
    """The tool-source builders of :class:`~phi.agent.Agent` and its ``close()``."""

    tools: list[Any]
    system_prompt: str

    def _sources_init(self) -> None:
        self._toolsets: list[Any] = []  # McpToolset-like: .tools() and .close()
        self._skills: SkillSet | None = None
        self._skill_tool = True
        self._skill_tool_cache: tuple[Any, Any] | None = None  # (skill set, its read_skill tool)

    # ----------------------------------------------------------------- skills

    def with_skills(self: A, skills: SkillSet | str | os.PathLike[str] | Iterable[str | os.PathLike[str]],
                    *, read_tool: bool = True) -> A:
        """Offer skills to the model: their catalog joins the system prompt of every run and, unless
        ``read_tool=False``, a ``read_skill`` tool lets the model load one. ``skills`` is a
        :class:`~phi.skills.SkillSet` or skill directories (later ones override earlier ones). Called
        again, the new skills are merged over the old."""
        from ..skills import SkillSet

        if not isinstance(skills, SkillSet):
            dirs = [skills] if isinstance(skills, (str, os.PathLike)) else list(skills)
            skills = SkillSet.load([Path(d) for d in dirs])
        self._skills = skills if self._skills is None else self._skills.merge(skills)
        self._skill_tool = read_tool
        return self

    # ----------------------------------------------------------------- MCP

    def with_mcp_server_stdio(self: A, cmd: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None,
                              prefix: str | None = None, **options: Any) -> A:
        """Start an MCP server as a child process and offer its tools (named ``{prefix}__{name}``
        when ``prefix`` is given). Connects now: a server that cannot start raises ``McpError``.
        ``options`` go to :meth:`phi.mcp.McpClient.connect_stdio` (``cwd``, ``timeout``, ...)."""
        from ..mcp import McpClient, McpToolset

        client = McpClient.connect_stdio(cmd, list(args), env, **options)
        self._toolsets.append(McpToolset(client, prefix=prefix))
        return self

    def with_mcp_server_http(self: A, url: str, headers: Mapping[str, str] | None = None,
                             prefix: str | None = None, **options: Any) -> A:
        """Connect to an MCP server over Streamable HTTP and offer its tools. Connects now."""
        from ..mcp import McpClient, McpToolset

        client = McpClient.connect_http(url, headers, **options)
        self._toolsets.append(McpToolset(client, prefix=prefix))
        return self

    def with_toolset(self: A, toolset: Any) -> A:
        """Offer the tools of any object with ``tools()`` (asked at every run) and ``close()``
        (called by ``agent.close()``), e.g. an :class:`~phi.mcp.McpToolset` made by hand."""
        self._toolsets.append(toolset)
        return self

    # ----------------------------------------------------------------- OpenAPI

    def with_openapi_file(self: A, path: str | os.PathLike[str], config: OpenApiConfig | None = None,
                          filter: OperationFilter | None = None) -> A:
        """Add one tool per operation of the OpenAPI 3.x spec in ``path`` (JSON or YAML)."""
        from ..openapi import from_file

        self.tools.extend(from_file(path, config, filter))
        return self

    def with_openapi_url(self: A, url: str, config: OpenApiConfig | None = None,
                         filter: OperationFilter | None = None) -> A:
        """Fetch an OpenAPI 3.x spec and add one tool per operation."""
        from ..openapi import from_url

        self.tools.extend(from_url(url, config, filter))
        return self

    def with_openapi_spec(self: A, spec: str, config: OpenApiConfig | None = None,
                          filter: OperationFilter | None = None) -> A:
        """Add one tool per operation of an OpenAPI 3.x spec given as a JSON or YAML string."""
        from ..openapi import from_str

        self.tools.extend(from_str(spec, config, filter))
        return self

    # ----------------------------------------------------------------- what a run gets

    @property
    def skills(self) -> SkillSet | None:
        return self._skills

    def _run_system_prompt(self) -> str:
        if self._skills is None or not len(self._skills):
            return self.system_prompt
        catalog = self._skills.format_for_prompt()
        if self._skill_tool:
            catalog = f"{SKILLS_INSTRUCTION}\n{catalog}"
        return f"{self.system_prompt}\n\n{catalog}" if self.system_prompt else catalog

    def _run_tools(self) -> list[Any]:
        tools = list(self.tools)
        if self._skills is not None and len(self._skills) and self._skill_tool:
            if self._skill_tool_cache is None or self._skill_tool_cache[0] is not self._skills:
                from ..skills import read_skill_tool

                self._skill_tool_cache = (self._skills, read_skill_tool(self._skills))
            tools.append(self._skill_tool_cache[1])
        for toolset in self._toolsets:
            try:
                tools.extend(toolset.tools())
            except PhiError as exc:  # a dead server must not stop the agent: its tools are left out
                log.warning("tools of %r are unavailable for this run: %s", toolset, exc)
        return tools

    # ----------------------------------------------------------------- closing

    def close(self) -> None:
        """Abort a run in progress and close the MCP connections. Safe to call twice."""
        self.abort()  # type: ignore[attr-defined]
        if threading.current_thread() is not self._worker:  # type: ignore[attr-defined]
            self.wait_for_idle(5.0)  # type: ignore[attr-defined]
        toolsets, self._toolsets = self._toolsets, []
        for toolset in toolsets:
            try:
                toolset.close()
            except Exception:  # closing the others matters more than one failure
                log.warning("closing %r failed", toolset, exc_info=True)

    def __enter__(self: A) -> A:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
