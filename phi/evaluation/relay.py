"""The relay: how a branch running in another process streams its events home and hears a cancel
(SPEC §13.3, EVAL-7, EVAL-8).

The caller of :func:`~phi.evaluation.parallel.agent_loop_parallel` listens on a TCP port (one
:class:`Relay` per parallel run, served by one thread). A remote branch connects with
:func:`open_link`, proves it knows the run's random key (HMAC-SHA256 of a nonce the relay sends)
and names its branch; the relay answers *go* or *stop* (the branch was cancelled before it started,
or it is a second run of a branch that started already — the executor ran the task again — which the
owner is told of, whether the first run's connection is still open or not).
After *go* the branch sends its events as length-prefixed pickles, in order, and the relay sends one
byte, *cancel*, when the branch is to abort. When its run is over the branch sends the end marker (an
empty frame) and closes the connection: end of file without the marker means the branch was cut off
— its process died — and never ended (SPEC EVAL-8).

Only frames from a peer that proved the key are unpickled. Frames: 4-byte big-endian length, then
the pickle.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import pickle
import queue
import selectors
import socket
import struct
import threading
from typing import Protocol

from ..concurrency.cancel import CancellationToken
from ..events import AgentEvent
from ..log import get_logger

log = get_logger(__name__)

__all__ = ["Relay", "RelayHandler", "RelayLink", "open_link"]

GO, STOP, CANCEL = b"g", b"s", b"c"
_NONCE = 32
_HELLO = struct.Struct("!32sI")  # HMAC of the nonce, branch index
_LENGTH = struct.Struct("!I")
_END = _LENGTH.pack(0)  # the empty frame: the branch's run is over and every event was sent


class RelayHandler(Protocol):
    """What the relay tells its owner; called on the relay's thread, never while it holds a lock."""

    def hello(self, index: int) -> bool:
        """Branch ``index`` connected: may it start?"""
        ...

    def frame(self, index: int, payload: bytes) -> None:
        """Branch ``index`` sent an event (a pickle)."""

    def end(self, index: int) -> None:
        """Branch ``index`` sent its end marker: its run is over, every event was sent."""

    def eof(self, index: int) -> None:
        """Branch ``index``'s connection closed: it sends nothing more (without :meth:`end` first,
        the branch was cut off before its run ended)."""


class _Peer:
    """One connection: the nonce it must answer, what it sent so far, and its branch once known."""

    def __init__(self, sock: socket.socket, nonce: bytes) -> None:
        self.sock = sock
        self.nonce = nonce
        self.buffer = bytearray()
        self.index: int | None = None


class Relay:
    """The caller's end: listens on ``(host, port)`` (port 0: any free one) for one parallel run."""

    def __init__(self, host: str, port: int, handler: RelayHandler) -> None:
        self.key = os.urandom(32)
        self._handler = handler
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self._server = socket.create_server((host, port), family=family)
        self._server.setblocking(False)
        self.address = (host, int(self._server.getsockname()[1]))
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._commands: queue.SimpleQueue[tuple[str, int]] = queue.SimpleQueue()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._server, selectors.EVENT_READ)
        self._selector.register(self._wake_r, selectors.EVENT_READ)
        self._by_index: dict[int, _Peer] = {}
        self._thread = threading.Thread(target=self._serve, name=f"phi-relay-{self.address[1]}", daemon=True)
        self._thread.start()

    # ----------------------------------------------------------------- commands (any thread)

    def cancel(self, index: int) -> None:
        """Tell branch ``index`` to abort (if it is connected)."""
        self._command("cancel", index)

    def drop(self, index: int) -> None:
        """Close branch ``index``'s connection; nothing more of it is read."""
        self._command("drop", index)

    def stop(self) -> None:
        """Close every connection and the port; returns when the relay's thread has ended."""
        self._command("stop", -1)
        self._thread.join()

    def _command(self, name: str, index: int) -> None:
        self._commands.put((name, index))
        try:
            self._wake_w.send(b"!")
        except OSError:  # stopped already, or the wake-up buffer is full (it will be read anyway)
            pass

    # ----------------------------------------------------------------- the relay's thread

    def _serve(self) -> None:
        try:
            while self._serve_once():
                pass
        except Exception:
            log.exception("the parallel-evaluation relay on port %s failed", self.address[1])
        finally:
            self._close_all()

    def _serve_once(self) -> bool:
        for key, _ in self._selector.select():
            if key.fileobj is self._server:
                self._accept()
            elif key.fileobj is self._wake_r:
                if not self._run_commands():
                    return False
            else:
                self._read(key.data)
        return True

    def _accept(self) -> None:
        try:
            sock, _ = self._server.accept()
        except OSError:
            return
        nonce = os.urandom(_NONCE)
        try:
            sock.setblocking(False)
            sock.send(nonce)  # a new socket's buffer takes 32 bytes at once
        except OSError:
            sock.close()
            return
        self._selector.register(sock, selectors.EVENT_READ, _Peer(sock, nonce))

    def _run_commands(self) -> bool:
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass
        while True:
            try:
                name, index = self._commands.get_nowait()
            except queue.Empty:
                return True
            if name == "stop":
                return False
            peer = self._by_index.get(index)
            if peer is not None and name == "cancel":
                self._send(peer, CANCEL)
            elif peer is not None:
                self._close(peer)

    def _read(self, peer: _Peer) -> None:
        try:
            data = peer.sock.recv(1 << 16)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._close(peer)
            if peer.index is not None:
                self._handler.eof(peer.index)
            return
        peer.buffer += data
        if peer.index is None and not self._greet(peer):
            return
        self._frames(peer)

    def _greet(self, peer: _Peer) -> bool:
        """The first 36 bytes: the key's proof and the branch. Returns whether to read on."""
        if len(peer.buffer) < _HELLO.size:
            return False
        proof, index = _HELLO.unpack_from(peer.buffer)
        del peer.buffer[:_HELLO.size]
        valid = hmac.compare_digest(proof, hmac.new(self.key, peer.nonce, hashlib.sha256).digest())
        if not valid:
            log.warning("the parallel-evaluation relay refused a connection (wrong key)")
            self._close(peer)
            return False
        # a second run of a branch whose first connection is still open (the executor took a frozen or
        # unreachable worker for lost and runs the task again): the handler hears it too, as that is the
        # executor's account that the first worker is gone, and the second run is told not to start
        go = self._handler.hello(index) and index not in self._by_index
        self._send(peer, GO if go else STOP)
        if not go:
            self._close(peer)
            return False
        peer.index = index
        self._by_index[index] = peer
        return True

    def _frames(self, peer: _Peer) -> None:
        buffer, start = peer.buffer, 0
        while len(buffer) - start >= _LENGTH.size:
            (length,) = _LENGTH.unpack_from(buffer, start)
            end = start + _LENGTH.size + length
            if len(buffer) < end:
                break
            assert peer.index is not None
            if length:
                self._handler.frame(peer.index, bytes(buffer[start + _LENGTH.size:end]))
            else:
                self._handler.end(peer.index)
            start = end
        del buffer[:start]

    def _send(self, peer: _Peer, byte: bytes) -> None:
        try:
            peer.sock.send(byte)
        except OSError:  # the branch has gone; its end of file will tell
            pass

    def _close(self, peer: _Peer) -> None:
        if peer.index is not None and self._by_index.get(peer.index) is peer:
            del self._by_index[peer.index]
        try:
            self._selector.unregister(peer.sock)
        except (KeyError, ValueError):
            pass
        peer.sock.close()

    def _close_all(self) -> None:
        """The relay is done (stopped, or failed): every connection closes, and a branch still
        streaming is told it sends nothing more (so nobody waits for it)."""
        for key in list(self._selector.get_map().values()):
            if isinstance(key.data, _Peer):
                self._close(key.data)
                if key.data.index is not None:
                    self._handler.eof(key.data.index)
        self._selector.close()
        for sock in (self._server, self._wake_r, self._wake_w):
            sock.close()


# --------------------------------------------------------------------------- the branch's end


class RelayRefused(ConnectionError):
    """The relay closed the connection during the greeting (a wrong key, or the run is over)."""


class RelayLink:
    """A remote branch's connection to its caller: ``send`` is the branch's sink; a watcher thread
    cancels the branch's token when the caller says so."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None
        self._closing = False
        self.sent = 0

    def send(self, event: AgentEvent) -> None:
        """Pickle ``event`` and send it; raises if it does not pickle or the caller is gone."""
        data = pickle.dumps(event, protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._sock.sendall(_LENGTH.pack(len(data)) + data)
            self.sent += 1

    def watch(self, cancel: CancellationToken) -> None:
        """Cancel ``cancel`` when the caller sends *cancel* (or vanishes), until :meth:`close`."""
        def body() -> None:
            try:
                while True:
                    byte = self._sock.recv(1)
                    if byte == CANCEL:
                        cancel.cancel()
                    elif not byte:
                        break
            except OSError:
                pass
            if not self._closing:  # the caller is gone (or gave up on this branch): nobody reads the run
                cancel.cancel()

        self._watcher = threading.Thread(target=body, name="phi-relay-watch", daemon=True)
        self._watcher.start()

    def close(self) -> None:
        """The branch's run is over: send the end marker after the last event, end the connection
        and the watcher."""
        self._closing = True
        try:
            with self._lock:
                self._sock.sendall(_END)
        except OSError:  # the caller is gone: it sees end of file, as for a branch cut off
            pass
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self._watcher is not None:
            self._watcher.join()
        self._sock.close()


def open_link(address: tuple[str, int], key: bytes, index: int, timeout: float) -> RelayLink | None:
    """Connect branch ``index`` to the relay at ``address``; None when it is told not to start.

    Raises ``OSError`` (:class:`RelayRefused` among them) when the relay cannot be reached or
    refuses the greeting.
    """
    sock = socket.create_connection(address, timeout)
    try:
        nonce = _receive(sock, _NONCE)
        sock.sendall(_HELLO.pack(hmac.new(key, nonce, hashlib.sha256).digest(), index))
        answer = _receive(sock, 1)
    except BaseException:
        sock.close()
        raise
    if answer != GO:
        sock.close()
        return None
    sock.settimeout(None)
    return RelayLink(sock)


def _receive(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise RelayRefused("the parallel-evaluation relay closed the connection during the greeting")
        data += chunk
    return data

