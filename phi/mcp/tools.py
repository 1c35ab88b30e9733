"""MCP tools as phi tools (SPEC §12.1, MCP-6 to MCP-8, MCP-16, MCP-17).

:class:`McpToolAdapter` is an :class:`~phi.loop.tool.AgentTool` that calls one MCP tool: its
``parameters`` are the tool's ``inputSchema`` made usable by the loop's JSON Schema validation
(:func:`tool_parameters`), its name is the MCP name or ``{prefix}__{name}`` made valid for model
APIs (:func:`tool_name`). A result with ``isError`` and every :class:`McpError` become a
:class:`~phi.errors.ToolError` (the model sees an error result, the run goes on); a cancelled call
raises :class:`~phi.errors.ToolCancelled` at once.

:class:`McpToolset` is an Agent tool source (SPEC AGENT-5; ``Agent(tool_sources=[...])``):
``tools()`` gives the current adapters, listing the server's tools again only after it announced
``notifications/tools/list_changed``, and ``close()`` (called by ``Agent.close()``) ends the session.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from ..errors import ConfigError, ToolCancelled, ToolError
from ..json_values import is_object
from ..log import get_logger
from ..loop.tool import ToolContext
from ..types import ToolResult
from ..tools.trace_context import outgoing
from .client import McpClient

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from typing_extensions import Unpack

    from .client import HttpOptions, StdioOptions
from .errors import McpCancelled, McpError
from .results import McpToolInfo

log = get_logger(__name__)

_VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_VALID_PREFIX = re.compile(r"[A-Za-z0-9_-]+")


@dataclass
class McpToolAdapter:
    """One MCP tool of one client, as an AgentTool."""

    client: McpClient = field(repr=False)
    info: McpToolInfo = field(repr=False)
    name: str
    description: str
    parameters: dict[str, Any] = field(repr=False)
    label: str = ""

    @classmethod
    def from_client(cls, client: McpClient, prefix: str | None = None) -> list[McpToolAdapter]:
        """One adapter per tool the server lists now."""
        return adapters_for(client, client.list_tools(), prefix)

    @classmethod
    def for_tool(cls, client: McpClient, info: McpToolInfo, prefix: str | None = None) -> McpToolAdapter:
        description = info.description or info.title or f"The {info.name} tool of MCP server {client.label}."
        return cls(client, info, tool_name(info.name, prefix), description, tool_parameters(info.input_schema, info.name),
                   info.title or info.name)

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        def progress(done: float, total: float | None, message: str | None) -> None:
            ctx.progress(message or (f"{done:g}/{total:g}" if total else f"{done:g}"))

        try:
            result = self.client.call_tool(self.info.name, args, cancel=ctx.cancel, on_progress=progress,
                                           meta=outgoing(ctx.loop_id, ctx.tool_call_id))
        except McpCancelled:
            raise ToolCancelled(f"Cancelled; MCP server {self.client.label} was asked to stop {self.info.name}.") from None
        except McpError as error:
            raise ToolError(str(error)) from None
        if result.is_error:
            raise ToolError(result.text or f"MCP tool {self.info.name} reported an error without a message")
        return result.to_tool_result()


def adapters_for(client: McpClient, infos: list[McpToolInfo], prefix: str | None) -> list[McpToolAdapter]:
    """Adapters for ``infos``; a second tool that ends up with the same name is left out (logged)."""
    adapters: dict[str, McpToolAdapter] = {}
    for info in infos:
        adapter = McpToolAdapter.for_tool(client, info, prefix)
        if adapter.name in adapters:
            log.warning("MCP server %s: tool %r is left out, its name %r is already taken", client.label,
                        info.name, adapter.name)
            continue
        adapters[adapter.name] = adapter
    return list(adapters.values())


def _check_prefix(prefix: str | None) -> None:
    """Refuse a bad prefix now, not at the first run (and before a server is started for it)."""
    if prefix is not None:
        tool_name("x", prefix)


def tool_name(name: str, prefix: str | None = None) -> str:
    """``{prefix}__{name}``, or ``name``; characters model APIs refuse become ``_``, cut to 64 (MCP-16)."""
    if prefix is not None and not _VALID_PREFIX.fullmatch(prefix):
        raise ConfigError(f"an MCP tool prefix may only use letters, digits, '_' and '-', got {prefix!r}")
    full = f"{prefix}__{name}" if prefix else name
    if _VALID_NAME.fullmatch(full):
        return full
    fixed = _INVALID_CHARS.sub("_", full)[:64]
    log.info("MCP tool %r is offered to the model as %r", full, fixed)
    return fixed


def tool_parameters(schema: object, name: str = "?") -> dict[str, Any]:
    """The tool's ``inputSchema`` as a schema the loop can validate with (MCP-17).

    Not an object schema (missing, not a dict, another type) → ``{"type": "object"}``: the server
    checks the arguments itself. A ``$schema`` jsonschema knows (draft-07, 2020-12, ...) is kept
    and picks the validator; an unknown one is dropped. A schema that is invalid under its
    metaschema is replaced by ``{"type": "object"}``, so calls still reach the server.
    """
    if not is_object(schema):
        return {"type": "object"}
    checked: dict[str, Any] = dict(schema)
    kind = checked.setdefault("type", "object")
    if kind != "object":
        log.warning("MCP tool %s has an input schema of type %r; using an open object schema", name, kind)
        return {"type": "object"}
    import jsonschema  # lazy: only MCP users pay for it here

    validator = _dialect(checked)
    if validator is None and "$schema" in checked:
        log.info("MCP tool %s: unknown $schema %r dropped", name, checked.pop("$schema"))
    validator = validator or jsonschema.Draft202012Validator
    try:
        validator.check_schema(checked)
    except jsonschema.SchemaError as error:
        log.warning("MCP tool %s has an invalid input schema (%s); using an open object schema", name, error.message)
        return {"type": "object"}
    return checked


def _dialect(schema: dict[str, Any]) -> type[Validator] | None:
    """The validator of the schema's ``$schema``; None without one, or when jsonschema does not know it."""
    from jsonschema import Draft7Validator, Draft202012Validator
    from jsonschema.validators import validator_for

    if "$schema" not in schema:
        return None
    # validator_for answers its `default` for a $schema it does not know: two defaults tell that apart
    found = validator_for(schema, default=Draft7Validator)
    return found if found is validator_for(schema, default=Draft202012Validator) else None


class McpToolset:
    """The tools of one MCP client, re-listed when the server says they changed (MCP-8).

    ``tools()`` lists on first use (an error is raised), then returns the same adapters until the
    client's ``tools_version`` moves. If re-listing fails later (e.g. the server died), the last
    list is kept and logged: calls then fail as tool errors, the agent keeps running.
    """

    def __init__(self, client: McpClient, prefix: str | None = None) -> None:
        _check_prefix(prefix)
        self.client = client
        self.prefix = prefix
        self._lock = threading.Lock()
        self._tools: list[McpToolAdapter] | None = None
        self._version = -1

    @classmethod
    def stdio(cls, command: str, args: Sequence[str] = (), env: Mapping[str, str] | None = None, *,
              prefix: str | None = None, **options: Unpack[StdioOptions]) -> McpToolset:
        """Start an MCP server as a child process and offer its tools (named ``{prefix}__{name}`` when
        ``prefix`` is given): ``Agent(tool_sources=[McpToolset.stdio("npx", [...])])``. Connects now:
        a server that cannot start raises ``McpError``. ``options`` go to :meth:`McpClient.connect_stdio`.
        A bad ``prefix`` is refused before the server is started."""
        _check_prefix(prefix)
        return cls(McpClient.connect_stdio(command, list(args), env, **options), prefix=prefix)

    @classmethod
    def http(cls, url: str, headers: Mapping[str, str] | None = None, *, prefix: str | None = None,
             **options: Unpack[HttpOptions]) -> McpToolset:
        """Connect to an MCP server over Streamable HTTP and offer its tools. Connects now;
        ``options`` go to :meth:`McpClient.connect_http`. A bad ``prefix`` is refused before connecting."""
        _check_prefix(prefix)
        return cls(McpClient.connect_http(url, headers, **options), prefix=prefix)

    @property
    def label(self) -> str:
        """How warnings name this source (``MCP server <name>``, SPEC AGENT-5, AGENT-9)."""
        return f"MCP server {self.client.label}"

    def tools(self) -> list[McpToolAdapter]:
        with self._lock:
            version = self.client.tools_version
            if self._tools is not None and version == self._version:
                return list(self._tools)
            try:
                infos = self.client.list_tools()
            except McpError as error:
                if self._tools is None:
                    raise
                log.warning("MCP server %s: could not list tools again (%s); keeping the last list", self.client.label, error)
                return list(self._tools)
            self._tools = adapters_for(self.client, infos, self.prefix)
            self._version = version
            return list(self._tools)

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> McpToolset:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"McpToolset({self.client!r}, prefix={self.prefix!r})"
