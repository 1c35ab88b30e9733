"""The stdio transport: an MCP server as a child process (SPEC §12.1, MCP-1, MCP-9, MCP-10, MCP-11).

The server is spawned in its own process group with three pipes. One JSON-RPC message per line
goes each way (UTF-8, ``\\n``-terminated). Three daemon threads keep the pipes moving:

* the **reader** decodes stdout line by line and hands each message to the session; a line that is
  not JSON is logged, counted and skipped (servers that print a banner keep working), and the last
  one is named in later timeout errors; a line longer than :data:`MAX_MESSAGE_BYTES` ends the session;
* the **stderr drain** reads stderr continuously, so a chatty server never blocks on a full pipe,
  and keeps only a bounded tail (:data:`STDERR_TAIL_BYTES`) for error messages;
* the **writer** owns stdin, so sending (a request, a cancellation, a reply to ``ping``) only queues
  bytes and never blocks the caller, even when the server stops reading.

When stdout ends, the session fails every waiting request at once with the exit status and the
stderr tail. :meth:`StdioTransport.close` ends the session politely, then firmly: EOF on stdin, a
grace period, SIGTERM to the process group, SIGKILL; the process is always reaped.
"""

from __future__ import annotations

import io
import json
import os
import queue
import signal
import subprocess
import threading
from typing import IO, Any, Mapping, Sequence

from ..concurrency.cancel import CancellationToken
from ..log import get_logger
from ..providers.secret_registry import SECRETS
from ..providers.secrets import scrub
from .errors import McpConnectionClosed, McpConnectionError, McpError, McpProtocolError
from .session import Session

log = get_logger(__name__)

MAX_MESSAGE_BYTES = 64 << 20  # one line of stdout; an image result of tens of MB still fits
STDERR_TAIL_BYTES = 8192
_SHOWN_TAIL_CHARS = 2000  # how much of the tail an error message repeats


class StdioTransport:
    """One spawned MCP server speaking line-framed JSON-RPC on its stdin/stdout."""

    blocking = False

    def __init__(self, command: str, args: Sequence[str], env: Mapping[str, str] | None, cwd: str | None,
                 label: str, close_grace: float = 2.0, secrets: Sequence[str] = ()) -> None:
        self.command = command
        self.args = list(args)
        self.label = label
        self._env = dict(env) if env is not None else None
        self._cwd = cwd
        self._close_grace = close_grace
        self._secrets = list(secrets)  # scrubbed from what the server writes, before it is shown
        SECRETS.register_all(self._secrets)  # and from everything phi lets out (OTEL-11)
        self._proc: subprocess.Popen[bytes] | None = None
        self._session: Session | None = None
        self._outbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
        self._threads: list[threading.Thread] = []
        self._stderr_thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._closing = False
        self._write_error: str | None = None
        self._stderr_tail = bytearray()
        self._noise = 0  # stdout lines that were not JSON-RPC messages
        self._last_noise = ""

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    # ----------------------------------------------------------------- start

    def start(self, session: Session) -> None:
        self._session = session
        try:
            self._proc = subprocess.Popen(
                [self.command, *self.args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                env=self._env, cwd=self._cwd, start_new_session=True)
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "strerror", None) or str(exc)
            raise McpConnectionError(f"could not start MCP server {self.label} ({self.command!r}): {reason}") from None
        pid = self._proc.pid
        self._stderr_thread = threading.Thread(target=self._drain_stderr, name=f"phi-mcp-stderr-{pid}", daemon=True)
        self._threads = [self._stderr_thread,  # made before the reader, which joins it when stdout ends
                         threading.Thread(target=self._write_stdin, name=f"phi-mcp-stdin-{pid}", daemon=True),
                         threading.Thread(target=self._read_stdout, name=f"phi-mcp-stdout-{pid}", daemon=True)]
        for thread in self._threads:
            thread.start()

    def negotiated(self, version: str) -> None:
        """Nothing to do: stdio messages carry no protocol version."""

    def handshake_done(self) -> None:
        """Nothing to do: the server writes notifications to stdout whenever it likes."""

    # ----------------------------------------------------------------- sending

    def send_request(self, message: dict[str, Any], stop: CancellationToken) -> None:
        self.send(message)

    def send(self, message: dict[str, Any], wait: bool = False) -> None:
        """Queue one message for the writer thread (``wait`` changes nothing: the order is kept)."""
        if self._write_error is not None:
            raise McpConnectionClosed(f"cannot write to MCP server {self.label}: {self._write_error}"
                                      f"{self.diagnostics()}", self.exit_code(), self.stderr_tail())
        self._outbox.put(encode_line(message))

    def _running(self) -> subprocess.Popen[bytes]:
        """The server process: the pipe threads start only once it was spawned with three pipes."""
        assert self._proc is not None
        return self._proc

    def _write_stdin(self) -> None:
        stdin = self._running().stdin
        assert stdin is not None
        while True:
            data = self._outbox.get()
            if data is None:
                break
            try:
                stdin.write(data)
                stdin.flush()
            except (OSError, ValueError) as exc:  # the server closed stdin or exited
                self._write_error = getattr(exc, "strerror", None) or str(exc)
                log.debug("writing to MCP server %s failed: %s", self.label, exc)
                break
        _close_quietly(stdin)

    # ----------------------------------------------------------------- reading

    def _read_stdout(self) -> None:
        stdout = self._running().stdout
        assert stdout is not None and self._session is not None
        session = self._session
        try:
            while True:
                line = stdout.readline(MAX_MESSAGE_BYTES + 1)
                if not line:
                    break
                if len(line) > MAX_MESSAGE_BYTES:
                    error = McpProtocolError(f"MCP server {self.label} wrote a line longer than "
                                             f"{MAX_MESSAGE_BYTES} bytes; the session was ended")
                    session.connection_lost(error)
                    self._stop_process()
                    return
                if not line.strip():
                    continue
                try:
                    message = json.loads(line)
                except ValueError:
                    self._note_noise(line)
                    continue
                session.receive(message)
        except (OSError, ValueError) as exc:  # the pipe was closed under us (close() raced the read)
            log.debug("reading from MCP server %s stopped: %s", self.label, exc)
        session.connection_lost(self._ended())

    def _note_noise(self, line: bytes) -> None:
        self._noise += 1
        self._last_noise = scrub(line.decode("utf-8", "replace").strip()[:200], self._secrets)
        log.warning("MCP server %s wrote a line that is not JSON: %r", self.label, self._last_noise)

    def _drain_stderr(self) -> None:
        stderr = self._running().stderr
        assert isinstance(stderr, io.BufferedReader)  # Popen's default buffering: read1 returns what is there
        tail = self._stderr_tail
        debug = log.isEnabledFor(10)
        try:
            while True:
                chunk = stderr.read1(65536)
                if not chunk:
                    break
                if debug:
                    log.debug("%s stderr: %s", self.label, chunk.decode("utf-8", "replace").rstrip())
                with self._lock:
                    tail += chunk
                    if len(tail) > 2 * STDERR_TAIL_BYTES:
                        del tail[:-STDERR_TAIL_BYTES]
        except (OSError, ValueError) as exc:
            log.debug("reading the stderr of MCP server %s stopped: %s", self.label, exc)

    def _ended(self) -> McpError:
        """Why stdout ended: the exit status and the stderr tail (MCP-10)."""
        if self._closing:
            return McpConnectionClosed(f"the connection to MCP server {self.label} was closed")
        proc = self._proc
        assert proc is not None
        try:
            proc.wait(timeout=2.0)
        except subprocess.TimeoutExpired:
            pass
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout=1.0)  # let the drain catch the server's last words
        code = proc.returncode
        if code is None:
            what = "closed its stdout"
        elif code < 0:
            what = f"was killed by signal {-code} ({_signal_name(-code)})"
        else:
            what = f"exited with code {code}"
        tail = self.stderr_tail()
        shown = f"; stderr: {tail[-_SHOWN_TAIL_CHARS:]}" if tail else "; it wrote nothing to stderr"
        noise = f"; it also wrote {self._noise} non-JSON line(s) to stdout" if self._noise else ""
        return McpConnectionClosed(f"MCP server {self.label} {what}{shown}{noise}", code, tail)

    # ----------------------------------------------------------------- diagnostics

    def stderr_tail(self) -> str:
        with self._lock:
            data = bytes(self._stderr_tail[-STDERR_TAIL_BYTES:])
        return scrub(data.decode("utf-8", "replace").strip(), self._secrets)

    def exit_code(self) -> int | None:
        return self._proc.poll() if self._proc is not None else None

    def diagnostics(self) -> str:
        """What to add to a timeout message: stray stdout lines, a write failure, the stderr tail."""
        parts: list[str] = []
        if self._noise:
            parts.append(f"it wrote {self._noise} line(s) to stdout that are not JSON-RPC "
                         f"(last: {self._last_noise[:120]!r})")
        if self._write_error:
            parts.append(f"writing to its stdin failed ({self._write_error})")
        tail = self.stderr_tail()
        if tail:
            parts.append(f"stderr: {tail[-500:]}")
        return "; " + "; ".join(parts) if parts else ""

    # ----------------------------------------------------------------- close

    def close(self) -> None:
        """EOF on stdin, ``close_grace``, SIGTERM to the group, ``close_grace``, SIGKILL; reap; the
        threads end (MCP-11)."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        proc = self._proc
        if proc is None:
            return
        self._outbox.put(None)  # the writer closes stdin once everything queued before is written
        try:
            proc.wait(timeout=self._close_grace)
        except subprocess.TimeoutExpired:
            self._stop_process()
        _signal_group(proc.pid, signal.SIGKILL)  # anything the server left behind in its group
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=2.0)
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            _close_quietly(pipe)

    def _stop_process(self) -> None:
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=self._close_grace)
        except subprocess.TimeoutExpired:
            _signal_group(proc.pid, signal.SIGKILL)
            try:
                proc.wait(timeout=5.0)
            except subprocess.TimeoutExpired:
                log.error("MCP server %s (pid %d) survived SIGKILL", self.label, proc.pid)


def encode_line(message: dict[str, Any]) -> bytes:
    """One message as a line: compact JSON (never a raw newline inside), UTF-8, ``\\n``."""
    try:
        text = json.dumps(message, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise McpProtocolError(f"cannot send {message.get('method', 'a reply')}: its parameters are not JSON ({exc})") from None
    try:
        return text.encode("utf-8") + b"\n"
    except UnicodeEncodeError:  # a lone surrogate: let JSON escape it
        return json.dumps(message, separators=(",", ":")).encode("ascii") + b"\n"


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _close_quietly(pipe: IO[bytes] | None) -> None:
    if pipe is None:
        return
    try:
        pipe.close()
    except (OSError, ValueError):
        pass
