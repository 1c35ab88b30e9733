"""What the tools of one agent or coding session share (SPEC §9.1, §9.2).

A :class:`ToolSession` holds three things whose lifetime is the session's, not one call's:

* :attr:`ToolSession.files` — the :class:`~phi.tools.file_state.FileRecord` of what the model last
  read or wrote, which ``write_file`` and ``edit_file`` consult before replacing a file;
* a private **output directory** (``mkdtemp``, mode 0700, created on first use) where a tool output
  larger than :data:`~phi.tools._common.FULL_OUTPUT_MAX_CHARS` is saved in full (files mode 0600);
* the **background commands** the shell tools were asked to start (:mod:`phi.tools.background`).

:meth:`ToolSession.close` ends the background commands and removes the directory; it runs when the
coding session closes, when the object is garbage-collected, and at interpreter exit, whichever
comes first. :func:`phi.tools.default_tools` and :func:`phi.tools.coding_tools` make one per call
(read-before-write on); a tool built on its own without one uses a process-wide session in which
read-before-write is off (a lone writing tool has no reading tool to share a record with).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import weakref
from typing import BinaryIO

from ..log import get_logger
from .background import BackgroundJobs
from .file_state import FileRecord

log = get_logger(__name__)

__all__ = ["ToolSession", "tool_session"]


def _cleanup(state: dict[str, str | None], jobs: BackgroundJobs) -> None:
    jobs.stop_all()
    directory = state.get("dir")
    state["dir"] = None
    if directory:
        shutil.rmtree(directory, ignore_errors=True)


class ToolSession:
    """Shared state of the tools of one session; see the module docstring.

    ``require_read_before_write``: refuse to overwrite a file the model has not read (or that changed
    since). ``output_dir``: where the private output directory is made (default: the system's
    temporary directory).
    """

    def __init__(self, *, require_read_before_write: bool = True, output_dir: str | None = None) -> None:
        self.files = FileRecord(require_read_before_write)
        self.background = BackgroundJobs()
        self._parent_dir = output_dir
        self._state: dict[str, str | None] = {"dir": None}
        self._lock = threading.Lock()
        self._counter = 0
        self._closed = False
        self._finalizer = weakref.finalize(self, _cleanup, self._state, self.background)

    def __repr__(self) -> str:
        return (f"ToolSession(require_read_before_write={self.files.enabled}, "
                f"output_dir={self._state['dir']!r}, closed={self._closed})")

    @property
    def require_read_before_write(self) -> bool:
        return self.files.enabled

    @require_read_before_write.setter
    def require_read_before_write(self, value: bool) -> None:
        self.files.enabled = value

    @property
    def closed(self) -> bool:
        return self._closed

    def output_directory(self) -> str:
        """The session's private directory for saved outputs (created on first use, mode 0700)."""
        with self._lock:
            if self._closed:
                raise RuntimeError("the tool session is closed")
            directory = self._state["dir"]
            if directory is None:
                directory = tempfile.mkdtemp(prefix="phi-tool-output-", dir=self._parent_dir)
                self._state["dir"] = directory
            return directory

    def new_output_file(self, stem: str, suffix: str = ".txt") -> tuple[str, BinaryIO]:
        """A new file (mode 0600, created exclusively) in the output directory, open for writing."""
        directory = self.output_directory()
        with self._lock:
            self._counter += 1
            number = self._counter
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in stem)[:60] or "output"
        path = os.path.join(directory, f"{number:04d}-{safe}{suffix}")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        return path, os.fdopen(fd, "wb")

    def close(self) -> None:
        """End the background commands and remove the output directory; idempotent."""
        with self._lock:
            self._closed = True
        self._finalizer()

    def __enter__(self) -> ToolSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_default: ToolSession | None = None
_default_lock = threading.Lock()


def tool_session(given: ToolSession | None) -> ToolSession:
    """``given``, or the process-wide session for tools built without one (read-before-write off)."""
    global _default
    if given is not None:
        return given
    with _default_lock:
        if _default is None or _default.closed:
            _default = ToolSession(require_read_before_write=False)
        return _default
