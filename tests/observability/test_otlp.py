"""End to end over OTLP/HTTP (SPEC §17 OTEL-3, OTEL-6): a sub-agent run exported by the exporter
``phi --otel`` uses, to a receiver on 127.0.0.1 that decodes the protobuf payload; and the canary —
a key in the provider config, the tool arguments and the environment — in no exported byte."""

from __future__ import annotations

import json

import pytest

from phi import Agent, ScriptedProvider
from phi.loop.tool import FunctionTool
from phi.observability import OtelTracer
from phi.observability.export import start_otlp
from phi.providers.mock import ScriptedResponse
from phi.providers.model_config import ModelConfig
from phi.subagent import SubAgentTool

from .receiver import Receiver, attributes

pytestmark = pytest.mark.timeout(60)
INTERNAL, CLIENT = 1, 3  # opentelemetry.proto.trace.v1.Span.SpanKind
CANARY = "phicanary_7Hq2Lx9Vb4Nc8Mw1Rt5"


def call(name: str, call_id: str, **args: object) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": args}]}


def echo_tool() -> FunctionTool:
    return FunctionTool("lookup", "Look a fact up.", {"type": "object", "properties": {}},
                        lambda args, ctx: f"looked up {json.dumps(args)}")


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Receiver:
    with Receiver() as found:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", found.endpoint)
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
        monkeypatch.delenv("OTEL_SERVICE_NAME", raising=False)
        yield found


def test_a_sub_agent_trace_arrives_whole_over_otlp_http(receiver: Receiver) -> None:
    provider, shutdown = start_otlp()
    child = SubAgentTool("researcher", model_config=ModelConfig.openai("gpt-5"), tools=[echo_tool()],
                         provider=ScriptedProvider([call("lookup", "k1", q="x"), "The answer is 42."]))
    agent = Agent(model="claude-sonnet-4-5", tools=[child], provider=ScriptedProvider(
        [call("researcher", "r1", task="find it"), "It is 42."], provider_id="anthropic"))
    OtelTracer(provider, agent_name="lead").attach(agent)
    agent.run("go")
    shutdown()

    assert receiver.paths and set(receiver.paths) == {"/v1/traces"}
    request = receiver.requests()[0]
    resource = {a.key: a.value.string_value for a in request.resource_spans[0].resource.attributes}
    assert resource["service.name"] == "phi"
    scope = request.resource_spans[0].scope_spans[0]
    assert scope.scope.name == "phi" and scope.schema_url == "https://opentelemetry.io/schemas/1.41.0"

    spans = receiver.spans()
    by_id = {s.span_id: s for s in spans}

    def path(span: object) -> list[str]:
        names = []
        while span is not None:
            names.append(span.name)  # type: ignore[attr-defined]
            span = by_id.get(span.parent_span_id)  # type: ignore[attr-defined]
        return names

    assert sorted(" < ".join(path(s)) for s in spans) == sorted([
        "invoke_agent lead",
        "chat claude-sonnet-4-5 < invoke_agent lead",
        "execute_tool researcher < invoke_agent lead",
        "chat claude-sonnet-4-5 < invoke_agent lead",
        "invoke_agent researcher < execute_tool researcher < invoke_agent lead",
        "chat gpt-5 < invoke_agent researcher < execute_tool researcher < invoke_agent lead",
        "execute_tool lookup < invoke_agent researcher < execute_tool researcher < invoke_agent lead",
        "chat gpt-5 < invoke_agent researcher < execute_tool researcher < invoke_agent lead",
    ])
    assert len({s.trace_id for s in spans}) == 1
    kinds = {s.name.split()[0]: s.kind for s in spans}
    assert kinds == {"invoke_agent": INTERNAL, "chat": CLIENT, "execute_tool": INTERNAL}
    lead_chat = next(s for s in spans if s.name == "chat claude-sonnet-4-5")
    assert attributes(lead_chat)["gen_ai.provider.name"] == "anthropic"
    assert attributes(lead_chat)["gen_ai.response.finish_reasons"] == ["tool_call"]


@pytest.mark.parametrize("capture", [False, True], ids=["content-off", "content-on"])
def test_the_canary_is_in_no_exported_byte(receiver: Receiver, monkeypatch: pytest.MonkeyPatch,
                                           capture: bool) -> None:
    monkeypatch.setenv("PHI_TEST_API_KEY", CANARY)
    provider, shutdown = start_otlp()
    script = [call("lookup", "c1", api_key=CANARY, query=f"look up {CANARY}"),
              ScriptedResponse.failure("auth", f"HTTP 401: invalid x-api-key {CANARY}", status=401)]
    agent = Agent(model="claude-sonnet-4-5", api_key=CANARY, tools=[echo_tool()],
                  provider=ScriptedProvider(script, provider_id="anthropic"))
    OtelTracer(provider, capture_content=capture).attach(agent)
    assert agent.run(f"my key is {CANARY}").outcome.value == "error"
    shutdown()

    everything = b"".join(receiver.bodies)
    assert len(receiver.spans()) == 4  # invoke_agent, two chats, execute_tool: something was sent
    assert CANARY.encode() not in everything
    assert CANARY[3:-3].encode() not in everything
    tool = next(s for s in receiver.spans() if s.name == "execute_tool lookup")
    if capture:  # the arguments are there, cleaned — not left out
        arguments = json.loads(attributes(tool)["gen_ai.tool.call.arguments"])
        assert arguments == {"api_key": "***", "query": "look up ***"}
    else:
        assert "gen_ai.tool.call.arguments" not in attributes(tool)
