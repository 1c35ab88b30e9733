"""The tracer calls span processors and exporters — user code — without holding a lock another
thread waits on (SPEC §17, AGENT "phi never calls user code while holding one of its own locks"):
a processor that blocks, or one that feeds the tracer again, stalls no other run."""

from __future__ import annotations

import threading
import time
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from phi import Agent, ScriptedProvider
from phi.events import AgentStart
from phi.observability import OtelTracer


def reply(text: str) -> dict[str, Any]:
    return {"blocks": [{"type": "text", "chunks": [text]}], "usage": {"input": 3, "output": 1}}


class Gate(SpanProcessor):
    """Blocks the thread ending the first ``chat`` span until the test opens the gate."""

    def __init__(self) -> None:
        self.entered, self.opened = threading.Event(), threading.Event()

    def on_end(self, span: ReadableSpan) -> None:
        if span.name.startswith("chat") and not self.entered.is_set():
            self.entered.set()
            self.opened.wait(10)


def test_a_blocked_span_processor_does_not_stall_another_threads_run() -> None:
    exporter, gate = InMemorySpanExporter(), Gate()
    provider = TracerProvider()
    provider.add_span_processor(gate)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OtelTracer(provider)
    slow = Agent(model="m", provider=ScriptedProvider([reply("slow")]), agent_id="slow")
    quick = Agent(model="m", provider=ScriptedProvider([reply("quick")]), agent_id="quick")
    slow.subscribe(tracer)
    quick.subscribe(tracer)

    first = threading.Thread(target=slow.run, args=("go",), daemon=True)
    first.start()
    assert gate.entered.wait(10), "the first chat span never ended"
    # The processor now holds the first thread. Before, the tracer's lock was held with it and the
    # second run blocked on its very first event; now it runs through to its AgentEnd, which alone waits (5 s at most).
    seen: list[str] = []
    quick.subscribe(lambda event: seen.append(event.type))
    second = threading.Thread(target=quick.run, args=("go",), daemon=True)
    second.start()
    deadline = time.monotonic() + 3
    while "TurnEnd" not in seen and time.monotonic() < deadline:
        time.sleep(0.01)
    reached_its_end = "TurnEnd" in seen
    gate.opened.set()
    first.join(10)
    second.join(10)
    assert reached_its_end, f"the second run stalled behind the processor after {seen}"
    assert tracer.flush(5)
    names = sorted(s.name for s in exporter.get_finished_spans())
    assert names == ["chat m", "chat m", "invoke_agent", "invoke_agent"]


def test_the_second_run_s_spans_are_finished_when_its_run_returns() -> None:
    """Its AgentEnd waits (bounded) until the thread that was writing spans has written them."""
    exporter, gate = InMemorySpanExporter(), Gate()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    provider.add_span_processor(gate)
    tracer = OtelTracer(provider)
    slow = Agent(model="m", provider=ScriptedProvider([reply("slow")]), agent_id="slow")
    quick = Agent(model="m", provider=ScriptedProvider([reply("quick")]), agent_id="quick", session_id="q")
    slow.subscribe(tracer)
    quick.subscribe(tracer)
    first = threading.Thread(target=slow.run, args=("go",), daemon=True)
    first.start()
    assert gate.entered.wait(10)
    threading.Timer(0.3, gate.opened.set).start()
    quick.run("go")  # its AgentEnd is handled by the first thread once the gate opens
    mine = [s for s in exporter.get_finished_spans()
            if s.name == "invoke_agent" and s.attributes and s.attributes.get("gen_ai.conversation.id") == "q"]
    assert len(mine) == 1
    first.join(10)


def test_a_processor_that_feeds_the_tracer_again_does_not_deadlock() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    tracer_box: list[OtelTracer] = []

    class Echo(SpanProcessor):
        def on_end(self, span: ReadableSpan) -> None:
            if span.name == "chat m":  # re-enter from inside the drain, on the same thread
                tracer_box[0](AgentStart(agent_id="echo", session_id="e", loop_id="echo-loop"))

    provider.add_span_processor(Echo())
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = OtelTracer(provider)
    tracer_box.append(tracer)
    agent = Agent(model="m", provider=ScriptedProvider([reply("hi")]))
    agent.subscribe(tracer)
    finished = threading.Event()
    threading.Thread(target=lambda: (agent.run("go"), finished.set()), daemon=True).start()
    assert finished.wait(10), "the run deadlocked in its own span processor"
    tracer.close()  # the echoed run never ended: close() ends it with an error status
    assert sorted(s.name for s in exporter.get_finished_spans()) == ["chat m", "invoke_agent", "invoke_agent"]


def test_the_serial_queue_runs_every_item_once_in_order_from_many_threads() -> None:
    """The queue under the tracer: nothing stranded, nothing run twice or concurrently, each
    thread's items in the order it gave them, and a waiting submitter sees its item done."""
    from phi.observability.otel import _Serial

    serial, ran, running = _Serial(), [], []
    lock = threading.Lock()

    def item(thread: int, n: int) -> None:
        running.append(1)
        assert len(running) == 1, "two items ran at once"
        with lock:
            ran.append((thread, n))
        running.pop()

    def submitter(thread: int) -> None:
        for n in range(300):
            if n % 50 == 49:
                assert serial.submit(lambda t=thread, k=n: item(t, k), wait=5)
                assert (thread, n) in ran
            else:
                serial.submit(lambda t=thread, k=n: item(t, k))

    threads = [threading.Thread(target=submitter, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert serial.submit(lambda: None, wait=5)
    assert len(ran) == 8 * 300 and len(set(ran)) == len(ran)
    for thread in range(8):
        assert [n for t, n in ran if t == thread] == list(range(300))


def test_an_attached_agent_that_is_gone_is_forgotten() -> None:
    """``phi --otel`` attaches every spawned child; the tracer must not keep one entry per child forever."""
    import gc

    tracer = OtelTracer(TracerProvider())
    for n in range(5):
        child = Agent(model="m", provider=ScriptedProvider([reply("x")]), agent_id=f"child-{n}")
        tracer.attach(child, parent_loop_id="parent-loop")
        child.run("go")
        del child
    gc.collect()
    assert tracer._attached == {} and tracer._adopted == {}


def test_a_tracer_nobody_keeps_stops_listening_process_wide() -> None:
    """Its retry observer and trace-context carrier hold it weakly and unregister at their next call."""
    import gc

    from phi.providers import retry
    from phi.tools import trace_context

    gc.collect()
    trace_context.outgoing("some-loop", "some-call")  # earlier tests' dead tracers' carriers go now
    observers, carriers = len(retry._observers), len(trace_context._carriers)
    tracer = OtelTracer(TracerProvider())
    assert (len(retry._observers), len(trace_context._carriers)) == (observers + 1, carriers + 1)
    del tracer
    gc.collect()
    assert trace_context.outgoing("some-loop", "some-call") == {}
    assert len(trace_context._carriers) == carriers
    before = (len(retry._observers), len(trace_context._carriers))
    kept = OtelTracer(TracerProvider())
    kept.close()  # an explicit close unregisters both at once
    assert (len(retry._observers), len(trace_context._carriers)) == before
