"""CancellationToken, EventChannel and EventStream (DESIGN §3)."""

from __future__ import annotations

import gc
import queue
import threading
import time
import weakref

import pytest
from loop_helpers import call, text_tool, tool_turn

from phi.concurrency.cancel import CancellationToken
from phi.concurrency.channel import EventChannel, EventStream
from phi.loop import agent_loop
from phi.loop.config import AgentContext, AgentLoopConfig
from phi.providers.mock import ScriptedProvider
from phi.types import UserMessage

# --------------------------------------------------------------------------- CancellationToken


def test_cancel_is_one_way_and_runs_callbacks_once():
    token = CancellationToken()
    fired = []
    token.on_cancel(lambda: fired.append("a"))
    token.on_cancel(lambda: fired.append("b"))
    assert not token.is_cancelled() and not token.cancelled
    token.cancel()
    token.cancel()
    assert token.is_cancelled() and token.cancelled
    assert fired == ["a", "b"]


def test_on_cancel_after_cancel_runs_at_once():
    token = CancellationToken()
    token.cancel()
    fired = []
    unregister = token.on_cancel(lambda: fired.append(1))
    assert fired == [1]
    unregister()  # harmless


def test_unregistered_callback_does_not_run():
    token = CancellationToken()
    fired = []
    unregister = token.on_cancel(lambda: fired.append(1))
    unregister()
    token.cancel()
    assert fired == []


def test_failing_callback_does_not_stop_the_others():
    token = CancellationToken()
    fired = []

    def broken():
        raise RuntimeError("boom")

    token.on_cancel(broken)
    token.on_cancel(lambda: fired.append(1))
    token.cancel()
    assert fired == [1]


def test_child_tokens_are_cancelled_with_their_parent_but_not_the_other_way():
    parent = CancellationToken()
    child = parent.child_token()
    grandchild = child.child_token()
    sibling = parent.child_token()
    child.cancel()
    assert child.is_cancelled() and grandchild.is_cancelled()
    assert not parent.is_cancelled() and not sibling.is_cancelled()
    parent.cancel()
    assert sibling.is_cancelled()


def test_cancelled_child_is_released_by_its_parent():
    parent = CancellationToken()
    child = parent.child_token()
    ref = weakref.ref(child)
    child.cancel()
    del child
    gc.collect()
    assert ref() is None


def test_child_of_a_cancelled_token_starts_cancelled():
    parent = CancellationToken()
    parent.cancel()
    assert parent.child_token().is_cancelled()


def test_wait_returns_on_cancel_or_timeout():
    token = CancellationToken()
    started = time.monotonic()
    assert token.wait(0.02) is False
    assert time.monotonic() - started >= 0.015
    threading.Timer(0.02, token.cancel).start()
    started = time.monotonic()
    assert token.wait(5) is True
    assert time.monotonic() - started < 1


def test_cancel_from_many_threads_runs_callbacks_once():
    token = CancellationToken()
    fired = []
    token.on_cancel(lambda: fired.append(1))
    threads = [threading.Thread(target=token.cancel) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert fired == [1]


# --------------------------------------------------------------------------- EventChannel


def test_send_never_blocks_and_iteration_ends_after_close():
    channel = EventChannel()
    started = time.monotonic()
    for i in range(50_000):
        channel.send(i)
    assert time.monotonic() - started < 2
    channel.close()
    channel.send("after close is dropped")
    assert channel.closed
    assert sum(1 for _ in channel) == 50_000
    assert list(channel) == []  # a second reader does not block
    assert channel.get() is None


def test_get_with_timeout_raises_empty():
    channel = EventChannel()
    with pytest.raises(queue.Empty):
        channel.get(timeout=0.01)
    channel("via __call__")
    assert channel.get(timeout=1) == "via __call__"


def _start(provider_script, tools=(), fail=False):
    """Run agent_loop on a thread the way Agent.prompt does; return the stream."""
    channel = EventChannel()
    done = threading.Event()
    cancel = CancellationToken()
    stream: EventStream = EventStream(channel, done, abort=cancel.cancel)
    provider = ScriptedProvider(provider_script)
    context = AgentContext(messages=[], tools=list(tools))

    def sink(event):
        if fail and event.type == "TurnEnd":
            raise RuntimeError("consumer-side sink failure")
        channel.send(event)

    def worker():
        try:
            result = agent_loop([UserMessage.from_text("hi")], context, AgentLoopConfig(provider=provider), sink, cancel)
        except BaseException as error:
            stream.finish(None, error)
        else:
            stream.finish(result, None)

    threading.Thread(target=worker, daemon=True).start()
    return stream, cancel


def test_event_stream_delivers_live_events_then_the_result():
    gate = threading.Event()

    def waits(args, ctx):
        gate.wait(5)
        return "ok"

    stream, _ = _start([tool_turn(call("t1", "waits")), "done"], [text_tool("waits", waits)])
    seen = []
    for event in stream:
        seen.append(event.type)
        if event.type == "ToolExecutionStart":
            assert not stream.done  # we see the event while the tool is still running
            gate.set()
    assert seen[0] == "AgentStart" and seen[-1] == "AgentEnd"
    messages = stream.result(timeout=5)
    assert [m.role for m in messages] == ["user", "assistant", "toolResult", "assistant"]
    assert stream.done


def test_event_stream_re_raises_the_loop_exception():
    stream, _ = _start(["a"], fail=True)
    with pytest.raises(RuntimeError, match="consumer-side sink failure"):
        for _ in stream:
            pass
    with pytest.raises(RuntimeError, match="consumer-side sink failure"):
        stream.result(timeout=5)


def test_event_stream_close_aborts_the_run():
    stream, cancel = _start([{"blocks": [{"type": "text", "chunks": ["a", "b"]}], "hang_after_chunks": 1}])
    for event in stream:
        if event.type == "MessageUpdate":
            stream.close()
    assert cancel.is_cancelled()
    messages = stream.result(timeout=5)
    assert messages[-1].stop_reason.value == "aborted"


def test_result_timeout():
    channel, done = EventChannel(), threading.Event()
    stream: EventStream = EventStream(channel, done)
    with pytest.raises(TimeoutError):
        stream.result(timeout=0.01)
    with stream:  # close without an abort function is fine
        assert not stream.done
    assert not stream.done


def test_a_chain_of_any_depth_is_cancelled_and_every_callback_runs():
    """issue 30 (fresh review): marking the tree was recursive; a deep chain raised RecursionError."""
    root = CancellationToken()
    token, fired = root, []
    for _ in range(5000):
        token = token.child_token()
    token.on_cancel(lambda: fired.append(1))
    root.cancel()
    assert token.is_cancelled()
    deadline = time.monotonic() + 5
    while not fired and time.monotonic() < deadline:
        time.sleep(0.01)
    assert fired == [1]
