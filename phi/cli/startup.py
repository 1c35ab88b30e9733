"""Loading the interactive ``phi`` behind its first prompt (SPEC §15 CLI-12).

The banner and the prompt need only the options; the providers, the coding layer, the session store
and the MCP servers are loaded by :class:`Loader` on a thread meanwhile (Python releases the GIL
while ``input()`` waits for the person). Whatever needs them — the first input, a command —
:meth:`Loader.wait`\\ s; a failure there is raised again to that caller as :class:`StartupFailed`
(``phi`` then exits 2 with the message, as it would have before the prompt).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import PhiError
from ..ids import random_uuid

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session
    from .repl import Repl
    from .sessions import CliSessions


#: how long the loading thread lets the main thread draw the prompt before it starts importing
PROMPT_FIRST_S = 0.03


class StartupFailed(PhiError):
    """What the start-up thread could not load (the model's profile, the store, a config file)."""


@dataclass
class Loaded:
    profile: ProviderProfile
    sessions: CliSessions
    session: Session = field(init=False)  # made once the profile and the store are there


class Loader:
    """Makes the profile, the store and the first session, on a thread when any is given as a function."""

    def __init__(self, repl: Repl, profile: Any, sessions: Any) -> None:
        self.repl = repl
        self.session_id = random_uuid()  # the banner names it before the session exists
        self._profile = profile
        self._sessions = sessions
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._started = False
        self.state: Loaded  # set by _load before _done is set; read only after

    def start(self, background: bool = True) -> None:
        """Load on a thread (when anything is to be made and ``background``) started as the first
        prompt is shown — so that it does not compete with the banner — else now."""
        if background and (callable(self._profile) or callable(self._sessions)):
            self.repl.term.on_prompt_shown = self._start_thread
        else:
            self._load()
            self.wait()

    def _start_thread(self) -> None:
        if not self._started:
            self._started = True
            threading.Thread(target=self._load, name="phi-startup", daemon=True).start()

    def _load(self) -> None:
        if self.repl.term.tty:
            time.sleep(PROMPT_FIRST_S)  # sleeping releases the GIL: the prompt is drawn first
        try:
            profile = self._profile() if callable(self._profile) else self._profile
            sessions = self._sessions() if callable(self._sessions) else self._sessions
            from .mcp_servers import connect_mcp

            self.repl.mcp = connect_mcp(self.repl)
            self.state = Loaded(profile, sessions)
            self.state.session = self.repl.new_session(session_id=self.session_id)
        except BaseException as error:  # handed to whoever waits
            self._error = error
        finally:
            self._done.set()

    def wait(self) -> Loaded:
        self._start_thread_if_pending()
        self._done.wait()
        if self._error is not None:
            error = self._error
            if isinstance(error, PhiError):
                raise StartupFailed(str(error)) from error
            raise StartupFailed(f"phi could not start: {type(error).__name__}: {error}") from error
        return self.state

    def _start_thread_if_pending(self) -> None:
        """Something needs the session before any prompt was shown (``--resume``, a test)."""
        if not self._done.is_set() and self.repl.term.on_prompt_shown == self._start_thread:
            self.repl.term.on_prompt_shown = None
            self._start_thread()

    def ready(self) -> bool:
        return self._done.is_set() and self._error is None

    def names(self) -> tuple[str, str]:
        """``(service, model)`` for the banner: the profile's when loaded, else from the options."""
        if self.ready():
            return self.state.profile.id, self.state.profile.model
        from .options import describe_choice

        return describe_choice(self.repl.options)


__all__ = ["Loader", "Loaded", "StartupFailed"]
