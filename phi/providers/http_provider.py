"""The one provider shell every HTTP wire protocol shares (SPEC §7, PROV-1).

A built-in protocol differs from the others only in how it turns a :class:`StreamConfig` into an
:class:`HttpRequest` and in which parser reads the reply; :class:`WireProtocol` holds exactly
those, and :class:`HttpStreamProvider` does the rest the same way for all of them: its own
connection pool, the builder that assembles the message, and :func:`~phi.providers.http.run_stream`.

The public provider classes (``OpenAIProvider``, ``AnthropicProvider``, ``AzureOpenAIProvider``,
...) are this class with their protocol attached, so ``AnthropicProvider()`` still makes a
provider with its own pool, and ``provider.build_request(config)`` shows the exact request a call
would send. Another protocol needs no subclass: ``HttpStreamProvider(WireProtocol(...))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..concurrency.cancel import CancellationToken
from ..types import AssistantMessage
from .base import AssistantBuilder, StreamConfig, StreamEventSink
from .http import DEFAULT_IDLE_TIMEOUT, HttpRequest, StreamParser, make_builder, run_stream
from .model_config import ModelConfig
from .transport import HttpClient

RequestBuilder = Callable[[StreamConfig], HttpRequest]
ParserFactory = Callable[[AssistantBuilder, ModelConfig], StreamParser]


@dataclass(frozen=True, slots=True)
class WireProtocol:
    """What sets one HTTP wire protocol apart: the ``provider_id`` of its providers, how a call's
    request is built, and the parser that reads the reply into a builder. ``service`` is the
    provider name replies carry when ``ModelConfig.provider`` is empty (default: ``provider_id``);
    ``idle_timeout`` the longest gap between two complete events it tolerates by default (a
    service that sends keep-alive events can afford a shorter one)."""

    provider_id: str
    build_request: RequestBuilder
    make_parser: ParserFactory
    service: str = ""
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT  # default of ModelConfig.options["idle_timeout"] (SPEC PROV-4)


class HttpStreamProvider:
    """A :class:`~phi.providers.base.StreamProvider` speaking one :class:`WireProtocol` over its
    own :class:`~phi.providers.transport.HttpClient` (session and connection pool, no cookies).

    The built-in providers set ``protocol`` on the class; otherwise pass one to the constructor.
    """

    protocol: WireProtocol

    def __init__(self, protocol: WireProtocol | None = None) -> None:
        if protocol is not None:
            self.protocol = protocol
        elif not hasattr(self, "protocol"):
            raise TypeError(f"{type(self).__name__} needs a WireProtocol")
        self.provider_id = self.protocol.provider_id
        self.http = HttpClient()  # one pool per provider instance, shared by its calls

    def build_request(self, config: StreamConfig) -> HttpRequest:
        """The request a call with ``config`` sends (nothing is sent)."""
        return self.protocol.build_request(config)

    def stream(self, config: StreamConfig, on_event: StreamEventSink, cancel: CancellationToken) -> AssistantMessage:
        request = self.build_request(config)
        mc = config.model_config
        builder = make_builder(on_event, mc.id, mc.provider or self.protocol.service or self.protocol.provider_id)
        return run_stream(request, mc, cancel, self.protocol.make_parser(builder, mc), self.http,
                          self.protocol.idle_timeout)
