"""What the slash commands, ``@``/``!`` inputs and ``/compact`` may use of the interactive ``phi``
(SPEC §15 CLI-4, CLI-9, CLI-10, CLI-13): the :class:`ReplState` protocol.

The REPL (:class:`phi.cli.repl.Repl`) owns this state. The modules that act on it —
:mod:`.commands`, :mod:`.compact`, :mod:`.extras` — are typed against this protocol instead of
importing the REPL, so imports inside ``phi/cli/`` go one way only: from ``repl`` down to them
(issue 33). A command that needs more of the REPL adds a member here; the type checker then holds
:class:`~phi.cli.repl.Repl` to it wherever the REPL hands itself to a command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Protocol

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session, SubmitResult
    from .approval import ApprovalGate
    from .mcp_servers import McpConnector, McpServers
    from .options import CliOptions
    from .render import Renderer, Style
    from .session_setup import SessionSetup
    from .sessions import CliSessions
    from .terminal import Terminal


class ReplState(Protocol):
    """One interactive ``phi`` process as its commands see it."""

    options: CliOptions
    renderer: Renderer
    style: Style
    gate: ApprovalGate
    term: Terminal
    setup: SessionSetup  # what every session is made with (shared with -p and --json)
    connector: McpConnector | None  # the MCP servers connecting in the background (None: none configured)
    next_profile: ProviderProfile | None  # /model typed while a run streamed: used from the next input
    quit_requested: bool  # /quit typed while a run streamed
    after_reply: list[str]  # commands typed while a run streamed, run when it ends
    pending_context: list[str]  # ``!`` outputs that go with the next message

    @property
    def mcp(self) -> McpServers | None: ...  # None: no servers configured

    @property
    def plan_mode(self) -> bool: ...

    # the three below wait for start-up (CLI-12), hence properties
    @property
    def profile(self) -> ProviderProfile: ...

    @property
    def session(self) -> Session: ...

    @property
    def sessions(self) -> CliSessions: ...

    def replace_session(self, carry: bool, profile: ProviderProfile | None = None) -> None: ...

    def resume(self, session_id: str, at: str | None = None) -> int: ...

    def set_plan_mode(self, on: bool) -> None: ...

    def between_inputs(self, wait_for_mcp: float = 0.0) -> None: ...

    def context_window(self, profile: ProviderProfile | None = None) -> int: ...

    def run_input(self, text: str, retried: bool = False, arrived_at: float | None = None) -> SubmitResult | None: ...

    def save(self, quiet: bool = False) -> list[str]: ...

    def kept_paste(self, question: str) -> Callable[[str], None]: ...


__all__ = ["ReplState"]
