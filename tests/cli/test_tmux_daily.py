"""Issue 26 in a real terminal emulator (tmux): a 200-line block pasted with ``tmux paste-buffer``
is one message, and ``phi`` works with a real local model server (llama.cpp's OpenAI-compatible
server with SmolLM2, from ``scripts/install-local-llm``) — a prompt, a streamed answer, and a tool
call the test forces through a small proxy, shown as a tool line."""

from __future__ import annotations

import json
import shutil
import urllib.request
from typing import Any, Iterator

import pytest
from coding.wire import Turn, user_texts
from providers.conftest import Recorded, ReplayServer, Reply

from cli.test_tmux import Tmux

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

try:  # the fixture module of the local model server (tests/local_llm.py)
    from local_llm import local_llm  # noqa: F401  (a pytest fixture, used by name)

    HAVE_FIXTURE = True
except ImportError:
    HAVE_FIXTURE = False

    @pytest.fixture
    def local_llm() -> Any:
        pytest.skip("no tests/local_llm.py in this tree: the local model server's fixture (scripts/install-local-llm "
                    "builds the server) is not here")


NO_KEYS = {"ANTHROPIC_API_KEY": "", "OPENAI_API_KEY": "", "GEMINI_API_KEY": "", "GOOGLE_API_KEY": ""}


def test_a_200_line_paste_is_one_message(model, project, phi_home, tmp_path):
    block = "".join(f"  File \"app.py\", line {i}, in frame_{i}\n" for i in range(198)) + "ValueError: boom"
    model.script("Traceback (most recent call last):", Turn("One paste, one message."))
    term = Tmux(project, {"ANTHROPIC_API_KEY": "sk-test", "PHI_HOME": str(phi_home)},
                f"--provider anthropic --base-url {model.url}")
    try:
        term.wait_for_prompt()
        source = tmp_path / "paste.txt"
        source.write_text("Traceback (most recent call last):\n" + block)
        term.tmux("load-buffer", str(source))
        term.tmux("paste-buffer", "-p")  # bracketed, as a terminal pastes when the program asks
        term.wait_for("ValueError: boom")
        term.keys("Enter")
        term.wait_for("One paste, one message.")
        term.wait_for_prompt()
        (request,) = model.requests_of("Traceback (most recent call last):")
        (text,) = user_texts("anthropic", request)
        assert len(text.splitlines()) == 200 and text.endswith("ValueError: boom")
        assert "steering" not in term.screen()
    finally:
        term.close()


class ForcingProxy:
    """Forwards Chat Completions requests to the local server; until the conversation holds a tool
    result, a request with tools gets ``tool_choice`` naming a tool (a small model would not call one by
    itself), then ``none``."""

    def __init__(self, upstream: str, tool: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.tool = tool
        self.bodies: list[dict[str, Any]] = []
        self.server = ReplayServer()
        self.server.responder = self.forward
        self.url = f"{self.server.url}/v1"

    def forward(self, request: Recorded) -> Reply:
        body = request.json()
        first = not any(m.get("role") == "tool" for m in body.get("messages", []))
        self.bodies.append(body)
        if body.get("tools"):
            body["tool_choice"] = {"type": "function", "function": {"name": self.tool}} if first else "none"
        # a 135M model answering a tool result can ramble past the window: a few tokens are enough here
        body["max_tokens"] = min(int(body.get("max_tokens") or 64), 64)
        target = self.upstream + request.path[len("/v1"):]
        sent = urllib.request.Request(target, json.dumps(body).encode(), {"content-type": "application/json"})
        with urllib.request.urlopen(sent, timeout=300) as response:
            return Reply(response.read(), status=response.status)

    def close(self) -> None:
        self.server.close()


@pytest.fixture
def forcing(local_llm: Any) -> Iterator[ForcingProxy]:
    proxy = ForcingProxy(local_llm.base_url, "glob")
    yield proxy
    proxy.close()


def test_a_real_local_model_answers_and_a_forced_tool_call_is_a_tool_line(local_llm, forcing, project, phi_home):
    term = Tmux(project, {**NO_KEYS, "PHI_HOME": str(phi_home)},
                f"--provider llamacpp --base-url {local_llm.base_url} --model {local_llm.model} --context-window 4096 "
                "--compact-at 90")
    try:
        term.wait_for_prompt()
        assert "(llamacpp)" in term.screen()
        term.keys("Say hello in five words.", "Enter")
        screen = term.wait_for("context [", timeout=240)
        answer = screen.split("Say hello in five words.", 1)[1].split("smollm2", 1)[0]
        assert answer.strip(), screen  # the model's own words, streamed onto the screen
        term.keys("/quit", "Enter")
        term.wait_for("EXITED 0")
    finally:
        term.close()
    forced = Tmux(project, {**NO_KEYS, "PHI_HOME": str(phi_home)},
                  f"--provider llamacpp --base-url {forcing.url} --model {local_llm.model} --context-window 4096 "
                  "--approve off")
    try:
        forced.wait_for_prompt()
        forced.keys("List the files here.", "Enter")
        forced.wait_for("context [", timeout=300)
        shown = forced.history()  # the tool line may have scrolled off under the reply after it
        assert any(row.startswith("[1] ") and "glob(" in row for row in shown.splitlines()), shown
        assert forcing.bodies[0]["model"] == local_llm.model
    finally:
        forced.close()
