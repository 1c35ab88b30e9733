"""Background commands: the ones a shell tool was asked to leave running (SPEC §9.1 "Commands").

An ordinary command ends with everything it started (:mod:`phi.tools.process`). A model that needs a
server or a watcher to keep running asks for it (``run_in_background``); the command is then started
by the environment's ``start_background`` under the subreaper in its ``keep`` mode, with stdin
``/dev/null`` and stdout and stderr going to a file in the session's output directory, and it is
recorded here. :meth:`BackgroundJobs.stop_all` — called when the tool session closes — ends every
one still running, with all its descendants (SIGTERM, grace period, SIGKILL).
"""

from __future__ import annotations

import subprocess
import threading
from dataclasses import dataclass

from .process import stop_background

__all__ = ["BackgroundJob", "BackgroundJobs"]


@dataclass
class BackgroundJob:
    """One background command: its ``command``, the process that keeps its tree (``pid``) and the
    file its output goes to."""

    command: str
    process: subprocess.Popen[bytes]
    output_path: str

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process.poll() is None


class BackgroundJobs:
    """The background commands of one tool session (thread-safe)."""

    def __init__(self) -> None:
        self._jobs: list[BackgroundJob] = []
        self._lock = threading.Lock()
        self._stopped = False

    def add(self, job: BackgroundJob) -> None:
        with self._lock:
            stopped = self._stopped
            if not stopped:
                self._jobs.append(job)
        if stopped:  # the session closed while the job started: it must not outlive it
            stop_background([job.process])
            raise RuntimeError("the tool session is closed")

    def jobs(self) -> list[BackgroundJob]:
        with self._lock:
            return list(self._jobs)

    def stop_all(self) -> None:
        """End every job still running (with its descendants) and reap them all; idempotent."""
        with self._lock:
            self._stopped = True
            jobs, self._jobs = self._jobs, []
        stop_background([job.process for job in jobs])
