"""The complete output of a tool call, however large (SPEC §9.2 "Full output").

The model sees a truncated view; the application gets the whole output. Up to
:data:`FULL_OUTPUT_MAX_CHARS` characters it travels in the result's ``details["full_output"]``;
beyond that it is saved to a file (mode 0600) in the tool session's private directory and
``details["full_output_path"]`` (with ``full_output_bytes`` and ``full_output_lines``) names it. The
file lives until the session closes.

A command's output is not built as one string: :class:`StreamRecorder` keeps each stream complete
while the command runs — in memory while it is small, then in a file of the session's directory —
next to the environment's bounded capture (which keeps only head and tail). :func:`file_parts` reads
a saved output back as head, an exact :class:`~phi.tools.truncation.Omitted` hole and tail, so any
later truncation (a session's own limits) reports exactly what it removed.
"""

from __future__ import annotations

import codecs
import os
import shutil
from typing import TYPE_CHECKING, BinaryIO, Sequence, Union

from .truncation import Omitted, Part

if TYPE_CHECKING:
    from .tool_session import ToolSession

__all__ = ["FULL_OUTPUT_MAX_CHARS", "StreamRecorder", "Piece", "save_full_output", "file_parts", "pieces_size",
           "pieces_error"]

#: ``details["full_output"]`` holds at most this many characters; a larger output goes to a file.
FULL_OUTPUT_MAX_CHARS = 1_000_000
_MEMORY_LIMIT = 2 << 20  # bytes a recorder keeps in memory before it moves to a file
_COPY_CHUNK = 1 << 20


class StreamRecorder:
    """Everything one output stream produced: :meth:`feed` it the bytes as they arrive."""

    def __init__(self, session: ToolSession, stem: str, memory_limit: int = _MEMORY_LIMIT) -> None:
        self.session = session
        self.stem = stem
        self.memory_limit = memory_limit
        self.size = 0
        self._chunks: list[bytes] = []
        self._file: BinaryIO | None = None
        self.path: str | None = None
        self.error: str | None = None  # why the stream could not be kept (it is then only counted)

    def feed(self, data: bytes) -> None:
        self.size += len(data)
        if self.error is not None:
            return
        if self._file is None and self.size <= self.memory_limit:
            self._chunks.append(data)
            return
        try:
            if self._file is None:
                self.path, self._file = self.session.new_output_file(self.stem, ".part")
                for chunk in self._chunks:
                    self._file.write(chunk)
                self._chunks = []
            self._file.write(data)
        except (OSError, RuntimeError) as exc:  # disk full, or the session closed meanwhile
            self.error = str(exc)
            self.discard()

    def text(self) -> str:
        """The stream as text (invalid UTF-8 replaced); only for one kept in memory."""
        if self._file is not None:
            raise ValueError("the stream is in a file; copy it with copy_to")
        return b"".join(self._chunks).decode("utf-8", errors="replace")

    @property
    def in_file(self) -> bool:
        return self._file is not None

    def copy_to(self, out: BinaryIO) -> None:
        if self._file is None:
            for chunk in self._chunks:
                out.write(chunk)
            return
        self._file.flush()
        assert self.path is not None
        with open(self.path, "rb") as source:
            shutil.copyfileobj(source, out, _COPY_CHUNK)

    def discard(self) -> None:
        """Drop what was kept (the temporary file too)."""
        self._chunks = []
        if self._file is not None:
            self._file.close()
            self._file = None
        if self.path is not None:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            self.path = None


#: A piece of a complete output: text, or a recorded stream.
Piece = Union[str, StreamRecorder]


def pieces_size(pieces: Sequence[Piece]) -> tuple[int, bool]:
    """(characters of the text pieces + bytes of the streams, whether a stream is in a file)."""
    size = sum(len(p) if isinstance(p, str) else p.size for p in pieces)
    return size, any(isinstance(p, StreamRecorder) and p.in_file for p in pieces)


def pieces_error(pieces: Sequence[Piece]) -> str | None:
    """Why a recorded stream among ``pieces`` could not be kept, if one could not."""
    return next((p.error for p in pieces if isinstance(p, StreamRecorder) and p.error), None)


def save_full_output(session: ToolSession, tool_name: str, pieces: Sequence[Piece]) -> tuple[str, int, int]:
    """Write ``pieces`` to a new file of the session (mode 0600); (path, bytes, newlines)."""
    path, out = session.new_output_file(tool_name)
    with out:
        for piece in pieces:
            if isinstance(piece, str):
                out.write(piece.encode("utf-8", errors="replace"))
            else:
                piece.copy_to(out)
    size, newlines = _count(path)
    return path, size, newlines


def _count(path: str, start: int = 0, end: int | None = None) -> tuple[int, int]:
    """(bytes, newlines) of ``path`` between ``start`` and ``end``."""
    total = newlines = 0
    with open(path, "rb") as fh:
        fh.seek(start)
        left = (end - start) if end is not None else None
        while left is None or left > 0:
            chunk = fh.read(_COPY_CHUNK if left is None else min(_COPY_CHUNK, left))
            if not chunk:
                break
            total += len(chunk)
            newlines += chunk.count(b"\n")
            if left is not None:
                left -= len(chunk)
    return total, newlines


def file_parts(path: str, keep_chars: int) -> list[Part]:
    """The text of the file ``path`` as parts: all of it when it is small, else its first and its last
    ``keep_chars`` characters (at least) around an :class:`Omitted` hole with the exact bytes and
    newlines in between — enough for any truncation to at most ``keep_chars`` characters."""
    size = os.path.getsize(path)
    window = max(4 * keep_chars, 4096)  # a character is at most 4 bytes
    with open(path, "rb") as fh:
        if size <= 2 * window:
            return [fh.read().decode("utf-8", errors="replace")]
        head_bytes = fh.read(window)
        fh.seek(size - window)
        tail_bytes = fh.read(window)
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    head = decoder.decode(head_bytes, final=False)
    head_end = len(head_bytes) - len(decoder.getstate()[0])
    skip = 0
    while skip < 3 and skip < len(tail_bytes) and tail_bytes[skip] & 0xC0 == 0x80:  # continuation bytes
        skip += 1
    tail_start = size - window + skip
    middle_bytes, middle_lines = _count(path, head_end, tail_start)
    return [head, Omitted(middle_bytes, middle_lines), tail_bytes[skip:].decode("utf-8", errors="replace")]
