"""Fixtures for the tracing tests (SPEC §17): an SDK tracer provider with the in-memory exporter, and
helpers that read the finished spans as a tree."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the test extra installs opentelemetry-sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402

from phi.observability import OtelTracer  # noqa: E402


class Spans:
    """The spans one test exported, with tree look-ups."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def tracer(self, **options: Any) -> OtelTracer:
        return OtelTracer(self.provider, **options)

    @property
    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.all if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, f"{len(found)} spans named {name!r}: {[s.name for s in self.all]}"
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        own = parent.context.span_id
        return sorted((s for s in self.all if s.parent is not None and s.parent.span_id == own),
                      key=lambda s: s.start_time or 0)

    def parent_of(self, span: ReadableSpan) -> ReadableSpan | None:
        if span.parent is None:
            return None
        return next((s for s in self.all if s.context.span_id == span.parent.span_id), None)

    def tree(self, root: ReadableSpan, depth: int = 0) -> list[str]:
        """``["invoke_agent", "  chat m", ...]``: the names under ``root``, indented, by start time."""
        lines = ["  " * depth + root.name]
        for child in self.children(root):
            lines += self.tree(child, depth + 1)
        return lines

    def roots(self) -> list[ReadableSpan]:
        return [s for s in self.all if s.parent is None]


@pytest.fixture
def spans() -> Iterator[Spans]:
    found = Spans()
    yield found
    found.provider.shutdown()
