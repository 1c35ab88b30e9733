"""Loading the interactive ``phi`` behind its first prompt (SPEC §15 CLI-12).

The banner and the prompt need only the options; the providers, the coding layer, the session store
and the MCP servers are loaded by :class:`Loader` on a thread meanwhile. The thread starts before
the banner: the banner mostly waits for the sandbox probe (a process) and the prompt for the person,
and Python releases the GIL for both. Whatever needs them — the first input, a command —
:meth:`Loader.wait`\\ s; a failure there is raised again to that caller as :class:`StartupFailed`
(``phi`` then exits 2 with the message, as it would have before the prompt).

The loader is handed what it needs — the options, and the REPL's own function making
the first session (which also connects the MCP servers, whose tools that session offers) — and
imports nothing of the REPL that owns it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from ..errors import PhiError
from ..ids import random_uuid

if TYPE_CHECKING:
    from ..coding import ProviderProfile, Session
    from .options import CliOptions
    from .sessions import CliSessions


class StartupFailed(PhiError):
    """What the start-up thread could not load (the model's profile, the store, a config file)."""


@dataclass
class Loaded:
    profile: ProviderProfile
    sessions: CliSessions
    session: Session = field(init=False)  # made once the profile and the store are there


class Loader:
    """Makes the profile, the store and the first session, on a thread when any is given as a function.
    ``first_session(session_id)`` is called on that thread once the profile and the store are loaded
    (:attr:`state` then has them)."""

    def __init__(self, options: CliOptions, profile: ProviderProfile | Callable[[], ProviderProfile],
                 sessions: CliSessions | Callable[[], CliSessions], first_session: Callable[[str], Session]) -> None:
        self.options = options
        self._first_session = first_session
        self.session_id = random_uuid()  # the banner names it before the session exists
        self._profile = profile
        self._sessions = sessions
        self._done = threading.Event()
        self._error: BaseException | None = None
        self.state: Loaded  # set by _load before _done is set; read only after

    def start(self, background: bool = True) -> None:
        """Load on a thread (when anything is to be made and ``background``), else now."""
        if background and (callable(self._profile) or callable(self._sessions)):
            threading.Thread(target=self._load, name="phi-startup", daemon=True).start()
        else:
            self._load()
            self.wait()

    def _load(self) -> None:
        try:
            profile = self._profile() if callable(self._profile) else self._profile
            sessions = self._sessions() if callable(self._sessions) else self._sessions
            self.state = Loaded(profile, sessions)
            self.state.session = self._first_session(self.session_id)
        except BaseException as error:  # handed to whoever waits
            self._error = error
        finally:
            self._done.set()

    def wait(self) -> Loaded:
        self._done.wait()
        if self._error is not None:
            error = self._error
            if isinstance(error, PhiError):
                raise StartupFailed(str(error)) from error
            raise StartupFailed(f"phi could not start: {type(error).__name__}: {error}") from error
        return self.state

    def ready(self) -> bool:
        return self._done.is_set() and self._error is None

    def names(self) -> tuple[str, str]:
        """``(service, model)`` for the banner: the profile's when loaded, else from the options."""
        if self.ready():
            from .options import service_name

            return service_name(self.state.profile, self.options), self.state.profile.model
        from .options import describe_choice

        return describe_choice(self.options)


__all__ = ["Loader", "Loaded", "StartupFailed"]
