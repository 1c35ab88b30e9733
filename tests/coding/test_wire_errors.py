"""Session-level errors over each real wire protocol (seed 004 §9.11, Appendix B "Session-Level
Errors"): an authentication failure or a context overflow is surfaced at once as a fatal ``ERROR``
and closes the session; a rate limit or a 503 is retried by the core and never reaches the host."""

from __future__ import annotations

import json

import pytest

from phi.coding import EventKind, SessionState
from phi.providers.retry import RetryConfig

from .dialects import PROFILES, Dialect, session_for
from .helpers import collect, of_kind
from .wire import Call, Turn, anthropic_sse, gemini_sse, protocol_of, responses_sse, server, tool_outputs  # noqa: F401
from providers.conftest import Reply

OVERFLOW = {
    "openai": {"error": {"type": "invalid_request_error", "code": "context_length_exceeded",
                         "message": "Your input exceeds the context window of this model."}},
    "anthropic": {"type": "error", "error": {"type": "invalid_request_error",
                                             "message": "prompt is too long: 210000 tokens > 200000 maximum"}},
    "gemini": {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": (
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).")}},
}
AUTH = {"error": {"type": "authentication_error", "message": "invalid x-api-key"}}


def json_reply(payload, status):
    return Reply(json.dumps(payload).encode(), status=status, content_type="application/json")


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("failure", ["auth", "context_overflow"])
def test_fatal_errors_close_the_session(profile, failure, server, tmp_path):
    server.responder = lambda request: (json_reply(AUTH, 401) if failure == "auth"
                                        else json_reply(OVERFLOW[profile], 400))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "hi")
    (error,) = of_kind(events, EventKind.ERROR)
    assert error.data["kind"] == failure and error.data["fatal"] is True
    assert result.outcome == "error" and session.state == SessionState.CLOSED
    assert events[-1].kind == EventKind.SESSION_END and events[-1].data["reason"] == "error"
    assert len(server.requests) == 1  # surfaced at once, no retry
    assert "test-key" not in json.dumps([e.to_json() for e in events])


@pytest.mark.parametrize("profile", PROFILES)
def test_rate_limits_and_server_errors_are_retried_without_an_error_event(profile, server, tmp_path):
    encode = {"openai": responses_sse, "anthropic": anthropic_sse, "gemini": gemini_sse}[profile]
    replies = [json_reply({"error": {"message": "slow down"}}, 429), json_reply({"error": {"message": "busy"}}, 503)]
    server.responder = lambda request: replies.pop(0) if replies else Reply(encode(Turn("recovered")))
    session = session_for(profile, server, str(tmp_path))
    session.agent.config.retry_config = RetryConfig(initial_delay_ms=1, jitter=False)
    events, result = collect(session, "hi")
    assert result.text == "recovered" and session.state == SessionState.IDLE
    assert not of_kind(events, EventKind.ERROR) and len(server.requests) == 3
    assert protocol_of(server.requests[-1].path) == profile
    session.close()


@pytest.mark.parametrize("profile", ["openai", "anthropic"])  # Gemini sends arguments as a JSON object
def test_tool_arguments_that_are_not_json_are_an_error_result_the_model_recovers_from(profile, server, tmp_path):
    """Seed 004 §9.3 / Appendix B "ValidationError": a tool call whose streamed arguments are not JSON
    runs nothing and gives the model an error result naming the problem; its corrected call runs."""
    (tmp_path / "a.py").write_text("A = 1\n")
    d = Dialect(profile)
    good = d.read("a.py")
    broken = Call(good.name, '{"' + next(iter(good.args)) + '": "a.py"')  # the closing brace is missing
    server.script("Read", Turn(calls=[broken]), Turn(calls=[good]), Turn("A is 1."))
    session = session_for(profile, server, str(tmp_path))
    events, result = collect(session, "Read a.py")
    first, second = of_kind(events, EventKind.TOOL_CALL_END)
    assert first.data["is_error"] and "not valid JSON" in first.data["error"]
    assert not second.data["is_error"] and "A = 1" in second.data["output"]
    protocol, body = server.seen["Read"][1]
    assert "not valid JSON" in tool_outputs(protocol, body)[0]
    assert result.text == "A is 1." and session.state == SessionState.IDLE
    session.close()
