"""MCP servers for the interactive ``phi`` (SPEC §15 CLI-10; SPEC §12.1).

Servers come from ``.mcp.json`` in the working directory and from each ``--mcp CONFIG`` (a file, or
the JSON text itself), all in the shape other coding tools read::

    {"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}},
                    "OTHER": {"url": "https://...", "headers": {...}}}}

``${VAR}`` and ``${VAR:-default}`` in strings are taken from the environment. A file that is not
in that shape stops ``phi`` at start (exit 2, naming the file and the entry); a server that does not
start is reported on screen and the others are used. A stdio server gets this process's
environment without credential-like variables, plus its entry's ``env``. Each server's tools are offered as
``NAME__TOOL`` and registered in the profile's tool registry with the kind ``execute``, so they go
through the approval gate like the built-in commands; ``/mcp`` lists the servers and their tools.
"""

from __future__ import annotations

import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ..errors import ConfigError
from ..json_values import is_array, is_object
from ..log import get_logger
from .trust import is_trusted_content, read_project_file, say_untrusted

if TYPE_CHECKING:
    from ..coding.registry import ToolRegistry
    from ..mcp import McpToolset
    from .options import CliOptions

log = get_logger(__name__)

PROJECT_FILE = ".mcp.json"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


@dataclass
class ServerSpec:
    name: str
    source: str  # the file (or "--mcp") it came from
    command: str | None = None
    args: list[str] = field(default_factory=list[str])
    env: dict[str, str] = field(default_factory=dict[str, str])
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict[str, str])

    @property
    def where(self) -> str:
        return self.url or " ".join([self.command or "", *self.args]).strip()


def _expand(value: str, env: Mapping[str, str]) -> str:
    return _VARIABLE.sub(lambda m: env.get(m.group(1), m.group(2) or ""), value)


def _strings(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not is_object(value) or not all(isinstance(v, str) for v in value.values()):  # decoded JSON: keys are str
        raise ConfigError(f"{what} must be an object of strings")
    return dict(value)


def _spec(name: str, entry: Any, source: str, env: Mapping[str, str]) -> ServerSpec:
    where = f"{source}: mcpServers.{name}"
    if not is_object(entry):
        raise ConfigError(f"{where} must be an object with command (and args, env) or url (and headers)")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None) or not isinstance(command or url, str):
        raise ConfigError(f"{where} needs either a command or a url (a string)")
    args = entry.get("args", [])
    if not is_array(args) or not all(isinstance(a, str) for a in args):
        raise ConfigError(f"{where}.args must be a list of strings")
    spec = ServerSpec(name, source, command=command, args=list(args), url=url,
                      env=_strings(entry.get("env"), f"{where}.env"),
                      headers=_strings(entry.get("headers"), f"{where}.headers"))
    spec.command = _expand(spec.command, env) if spec.command else None
    spec.url = _expand(spec.url, env) if spec.url else None
    spec.args = [_expand(a, env) for a in spec.args]
    spec.env = {k: _expand(v, env) for k, v in spec.env.items()}
    spec.headers = {k: _expand(v, env) for k, v in spec.headers.items()}
    return spec


def parse_config(text: str, source: str, env: Mapping[str, str] | None = None) -> list[ServerSpec]:
    """The servers of one config text; :class:`ConfigError` naming ``source`` when it is malformed."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"{source} is not JSON: {error}") from None
    servers = data.get("mcpServers") if is_object(data) else None
    if not is_object(servers):
        raise ConfigError(f'{source} must be an object with "mcpServers": {{NAME: {{...}}}}')
    for name in servers:
        if not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise ConfigError(f"{source}: server name {name!r} may only have letters, digits, _ and -")
    return [_spec(name, entry, source, os.environ if env is None else env) for name, entry in servers.items()]


def load_specs(options: CliOptions) -> list[ServerSpec]:
    """``./.mcp.json`` then every ``--mcp``; a later server of the same name replaces an earlier one."""
    found: dict[str, ServerSpec] = {}
    project = Path(options.cwd) / PROJECT_FILE
    configs: list[tuple[str, str]] = []
    from .options import home_dir

    project_trusted = False
    content = read_project_file(str(project))  # read once: what is parsed is what is checked
    if content is not None:
        configs.append((content.decode("utf-8", errors="replace"), str(project)))
        project_trusted = is_trusted_content(str(project), content, home_dir())
    for given in options.mcp or []:
        if given.lstrip().startswith("{"):
            configs.append((given, "--mcp"))
            continue
        try:
            configs.append((Path(given).expanduser().read_text(encoding="utf-8", errors="replace"), given))
        except OSError as error:
            raise ConfigError(f"--mcp {given}: {error.strerror or error}") from None
    for text, source in configs:
        specs = parse_config(text, source)  # checked even when not trusted: a broken file is said at once
        if source == str(project) and specs and not project_trusted:
            say_untrusted(PROJECT_FILE, f"its {len(specs)} server(s) are not started")
            continue
        for spec in specs:
            found[spec.name] = spec
    return list(found.values())



@dataclass
class Server:
    spec: ServerSpec
    toolset: McpToolset | None = None
    error: str = ""


class McpServers:
    """The connected servers of one ``phi`` process."""

    def __init__(self, servers: list[Server]) -> None:
        self.servers = servers

    def register(self, registry: ToolRegistry) -> None:
        """Offer every connected server's tools through ``registry`` (kind ``execute``)."""
        for server in self.servers:
            if server.toolset is None:
                continue
            try:
                for tool in server.toolset.tools():
                    registry.register(tool, kind="execute")
            except Exception as error:  # a server that died: its tools are gone, the others stay
                server.error = f"could not list its tools: {error}"

    def lines(self) -> list[str]:
        """``/mcp``: one line per server, then its tools."""
        rows: list[str] = []
        for server in self.servers:
            spec = server.spec
            if server.toolset is None:
                rows.append(f"  {spec.name}  ✗ {server.error}  ({spec.where}; from {spec.source})")
                continue
            names = [t.name for t in server.toolset.tools()] if not server.error else []
            rows.append(f"  {spec.name}  ✓ {len(names)} tools  ({spec.where}; from {spec.source})")
            rows += [f"      {name}" for name in names]
        return rows

    def close(self) -> None:
        for server in self.servers:
            if server.toolset is not None:
                try:
                    server.toolset.close()
                except Exception:  # closing one server must not keep the others running
                    log.debug("closing MCP server %s failed", server.spec.name, exc_info=True)


def _connect(spec: ServerSpec, environment: Mapping[str, str]) -> McpToolset:
    from ..mcp import McpToolset

    if spec.url:
        return McpToolset.http(spec.url, spec.headers, prefix=spec.name)
    assert spec.command is not None
    return McpToolset.stdio(spec.command, spec.args, {**environment, **spec.env}, prefix=spec.name)


def connect_mcp(options: CliOptions, environment: Mapping[str, str],
                report: Callable[[str], None]) -> McpServers | None:
    """Start (or connect to) the configured servers; None when there are none. A stdio server gets
    ``environment`` (the user's without credential-like variables: the caller's to make, as for
    ``!`` commands) plus its entry's ``env``; a server that does not start is passed to ``report``
    as one sentence, and the others are used."""
    specs = load_specs(options)
    if not specs:
        return None
    servers: list[Server] = []
    try:
        for spec in specs:
            toolset = None
            try:
                toolset = _connect(spec, environment)
                toolset.tools()
                servers.append(Server(spec, toolset))
            except Exception as error:  # reported, and phi goes on without it
                if toolset is not None:
                    toolset.close()
                servers.append(Server(spec, None, f"{type(error).__name__}: {error}"))
                report(f"MCP server {spec.name} did not start: {error}")
    except BaseException:  # Ctrl+C or SIGTERM while one starts: none of them outlives phi
        McpServers(servers).close()
        raise
    return McpServers(servers)


class McpConnector:
    """The interactive ``phi``'s servers, connected on a thread of their own so that neither the
    prompt nor the first input waits for them (a stdio server takes a second or more to start).
    What happened — each server's tools arriving, or a server that did not start — is kept as
    lines for the REPL to show between inputs, where the tools join the session too (a run's tools
    are fixed when it starts, SPEC AGENT-5)."""

    def __init__(self, options: CliOptions, environment: Mapping[str, str]) -> None:
        self.options = options
        self.environment = environment
        self.servers: McpServers | None = None
        self._lines: list[str] = []  # "! ..." for a failure, else news
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._closed = False
        self._taken = False

    def start(self) -> None:
        threading.Thread(target=self._connect, name="phi-mcp-connect", daemon=True).start()

    def _connect(self) -> None:
        failed: list[str] = []
        try:
            servers = connect_mcp(self.options, self.environment, failed.append)
        except Exception as error:  # the config was checked at start: a file changed since, or a bug
            servers, failed = None, [f"MCP servers not started: {error}"]
        news = [f"! {text}" for text in failed]
        for server in servers.servers if servers is not None else []:
            if server.toolset is not None and not server.error:
                count = len(server.toolset.tools())
                news.append(f"MCP server {server.spec.name}: {count} tool{'s' if count != 1 else ''} ready")
        with self._lock:
            closed = self._closed
            if not closed:
                self.servers = servers
                self._lines += news
        if closed and servers is not None:
            servers.close()  # phi exited while they started
        self._done.set()

    def take(self, wait: float = 0.0) -> tuple[McpServers | None, list[str]]:
        """``(servers, lines)`` once connected and not taken before (else ``(None, lines so far)``);
        waits up to ``wait`` seconds for the connections."""
        if wait > 0:
            self._done.wait(wait)
        with self._lock:
            lines, self._lines = self._lines, []
            if not self._done.is_set() or self._taken:
                return None, lines
            self._taken = True
            servers, self.servers = self.servers, None  # the caller's to close from now on
            return servers, lines

    @property
    def connecting(self) -> bool:
        return not self._done.is_set()

    def close(self) -> None:
        """Stop the connected servers; servers still starting are stopped as they come up."""
        with self._lock:
            self._closed = True
            servers, self.servers = self.servers, None
        if servers is not None:
            servers.close()


__all__ = ["McpServers", "McpConnector", "ServerSpec", "parse_config", "load_specs", "connect_mcp", "PROJECT_FILE"]
