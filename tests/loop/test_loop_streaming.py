"""Linear streaming (SPEC EVT-6; issue 9 item 7).

Assembling a reply costs O(total bytes) and an unread or abandoned EventStream holds memory in
proportion to the reply, not to its square; the snapshot carried by each MessageUpdate is still
exactly the message up to that delta. ``EventStream.close()`` stops delivery.
"""

from __future__ import annotations

import gc
import threading
import tracemalloc

from loop_helpers import run

from phi import Agent
from phi.concurrency.cancel import CancellationToken
from phi.events import MessageUpdate, StreamDelta, event_from_json, event_to_json
from phi.providers.base import AssistantBuilder, StreamConfig
from phi.types import AssistantMessage, StopReason, TextContent, ThinkingContent


class ChunkProvider:
    """Streams ``size`` bytes of text in ``chunk``-byte deltas through an AssistantBuilder."""

    provider_id = "chunks"

    def __init__(self, size: int, chunk: int = 16) -> None:
        self.size, self.chunk = size, chunk

    def stream(self, config: StreamConfig, on_event, cancel: CancellationToken) -> AssistantMessage:
        builder = AssistantBuilder(on_event, "m", self.provider_id)
        piece = "x" * (self.chunk - 1)
        for i in range(self.size // self.chunk):
            builder.text(piece + "0123456789"[i % 10])
        return builder.finish(StopReason.STOP)


def test_each_update_carries_the_message_up_to_its_delta():
    script = [{"blocks": [{"type": "thinking", "chunks": ["th", "ink"], "signature": "sig"},
                          {"type": "text", "chunks": ["Hel", "lo", " you"]},
                          {"type": "toolCall", "id": "t1", "name": "x", "chunks": ['{"a"', ": 1}"]},
                          {"type": "text", "chunks": ["af", "ter"]}]}]
    out = run(script)
    updates = out.of("MessageUpdate")
    snapshots = [(u.delta.kind, u.delta.index, [getattr(b, "text", getattr(b, "thinking", b.type)) for b in u.message.content])
                 for u in updates]
    assert snapshots == [
        ("thinking", 0, ["th"]),
        ("thinking", 0, ["think"]),
        ("text", 1, ["think", "Hel"]),
        ("text", 1, ["think", "Hello"]),
        ("text", 1, ["think", "Hello you"]),
        ("toolCall", 2, ["think", "Hello you", "toolCall"]),
        ("toolCall", 2, ["think", "Hello you", "toolCall"]),
        ("text", 3, ["think", "Hello you", "toolCall", "af"]),
        ("text", 3, ["think", "Hello you", "toolCall", "after"]),
    ]
    # reading an old event after the run still gives the snapshot of its moment
    assert updates[2].message.content[1].text == "Hel"
    assert isinstance(updates[0].message.content[0], ThinkingContent)
    final = out.replies[0]
    assert final.content[0].signature == "sig" and final.content[3].text == "after"


def test_updates_round_trip_through_json():
    out = run([{"blocks": [{"type": "text", "chunks": ["a", "b", "c"]}]}])
    for update in out.of("MessageUpdate"):
        back = event_from_json(event_to_json(update))
        assert back == update and back.message.content == update.message.content


def test_an_update_built_from_a_message_keeps_it():
    message = AssistantMessage([TextContent("so far")])
    update = MessageUpdate("l", message, StreamDelta("text", "far", 0))
    assert update.message is message and update.loop_id == "l" and update.delta.delta == "far"


def test_assembly_is_linear_in_the_reply_size():
    # 16-byte deltas: quadratic assembly copies ~n^2/32 bytes, linear about n
    def allocated(size: int) -> int:
        gc.collect()
        tracemalloc.start()
        events: list = []
        builder = AssistantBuilder(events.append, "m", "p")
        for _ in range(size // 16):
            builder.text("y" * 16)
        message = builder.finish(StopReason.STOP)
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert len(message.text) == size
        return peak

    small, large = allocated(64 * 1024), allocated(512 * 1024)
    assert large < 12 * small, (small, large)  # 8x the size: about 8x the memory, not 64x


def test_an_unread_stream_holds_memory_in_proportion_to_the_reply():
    size = 256 * 1024
    agent = Agent(provider=ChunkProvider(size))
    gc.collect()
    tracemalloc.start()
    stream = agent.prompt("go")
    result = stream.result(timeout=60)  # nobody reads the events
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(result.text) == size
    assert peak < 12 * size, f"peak {peak / size:.1f}x the reply"
    events = list(stream)  # still all there, in order, and complete
    assert sum(len(e.delta.delta) for e in events if e.type == "MessageUpdate") == size


def test_close_drops_the_events_and_ends_iteration():
    gate = threading.Event()
    agent = Agent(provider=ChunkProvider(64 * 1024))
    agent.subscribe(lambda e: gate.wait(5) if e.type == "AgentEnd" else None)
    stream = agent.prompt("go")
    first = next(iter(stream))
    stream.close()
    gate.set()
    assert first.type == "AgentStart"
    assert list(stream) == []
    assert stream.result(timeout=5).outcome.value in ("aborted", "completed")
    assert stream._channel._queue.qsize() <= 1
