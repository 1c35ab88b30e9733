"""An input sent while ``phi`` still loads behind its first prompt (issue 35 item 5, SPEC CLI-12,
CODE-5): the session start-up makes its system prompt after the input came, so the first
run uses that prompt instead of taking the git snapshot a second time; an input sent once loading is
done gets a prompt of its own, and so does one whose session changed meanwhile."""

from __future__ import annotations

import io
import threading

import pytest

from phi.cli.options import CliOptions, make_profile
from phi.cli.repl import Repl
from phi.cli.sessions import CliSessions


def repl_loading_until_read(tmp_path, typed: str, **options_given):
    """A REPL whose start-up waits until the person's first input was read (as when Enter comes
    the moment the prompt appears)."""
    options = CliOptions(offline=True, cwd=str(tmp_path), color="never", **options_given)
    holder: list[Repl] = []
    read = threading.Event()

    def profile():
        read.wait(30)
        return make_profile(options)

    instance = Repl(options, profile, lambda: CliSessions(tmp_path / "sessions"), stdin=io.StringIO(typed),
                    out=io.StringIO())
    holder.append(instance)
    real_read = instance.read_input

    def read_input():
        try:
            return real_read()
        finally:
            read.set()

    instance.read_input = read_input  # type: ignore[method-assign]
    return instance


def test_the_first_input_typed_while_loading_takes_one_git_snapshot(tmp_path, prompt_builds):
    repl = repl_loading_until_read(tmp_path, "what is here?\nand now?\n")
    assert repl.run() == 0
    out = repl.out.getvalue()
    assert out.count("I am phi's offline model") == 2
    # one prompt for the session and its first input, one for the second input (typed after loading)
    assert prompt_builds[0] == 2


def test_append_system_prompt_is_in_the_prompt_the_first_input_reuses(tmp_path, prompt_builds):
    repl = repl_loading_until_read(tmp_path, "what is here?\n", append_system_prompt="Answer in French.")
    seen: list[str] = []
    original = repl.setup.new_session

    def recording(*args, **kwargs):
        session = original(*args, **kwargs)
        session.agent.subscribe(lambda event: seen.append(session.agent.system_prompt)
                                if type(event).__name__ == "AgentStart" else None)
        return session

    repl.setup.new_session = recording  # type: ignore[method-assign]
    assert repl.run() == 0
    assert prompt_builds[0] == 1
    assert seen and all("Answer in French." in prompt for prompt in seen)


def test_an_input_after_loading_gets_its_own_prompt(tmp_path, prompt_builds):
    options = CliOptions(offline=True, cwd=str(tmp_path), color="never")
    repl = Repl(options, make_profile(options), CliSessions(tmp_path / "sessions"), stdin=io.StringIO(),
                out=io.StringIO())
    try:
        assert prompt_builds[0] == 1  # made before any prompt: nothing was typed yet
        (tmp_path / "AGENTS.md").write_text("Reply in haiku.\n")
        repl._message("what is here?")
        assert prompt_builds[0] == 2 and "Reply in haiku." in repl.session.agent.system_prompt
    finally:
        repl.close()


class RecordingToken:
    """A cancellation token that records the waits asked of it (a scripted reply's pauses)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout if timeout is not None else -1)
        return False

    def is_cancelled(self) -> bool:
        return False


@pytest.mark.parametrize("first, expected", [(None, [0.005] * 3), (0, [0.005] * 2), (50, [0.05, 0.005, 0.005])])
def test_a_scripted_reply_waits_its_first_delay_before_the_first_chunk(first, expected):
    from phi.providers.base import StreamConfig
    from phi.providers.mock import ScriptedProvider
    from phi.providers.model_config import ModelConfig
    from phi.types import UserMessage

    reply = {"blocks": [{"type": "text", "chunks": ["a", "b"]}], "chunk_delay_ms": 5}
    if first is not None:
        reply["first_chunk_delay_ms"] = first
    token = RecordingToken()
    model = ModelConfig.openai("scripted", api_key="unused")
    message = ScriptedProvider([reply]).stream(StreamConfig(model, messages=[UserMessage.from_text("hi")]),
                                               lambda event: None, token)  # type: ignore[arg-type]
    assert message.text == "ab"
    assert token.waits == pytest.approx(expected)


def test_the_offline_model_starts_its_reply_at_once(tmp_path):
    from phi.cli.offline import OfflineModel
    from phi.providers.base import StreamConfig
    from phi.providers.model_config import ModelConfig
    from phi.types import UserMessage

    from phi.providers.mock import ScriptedResponse

    token = RecordingToken()
    model = ModelConfig.openai("offline", api_key="unused")
    config = StreamConfig(model, messages=[UserMessage.from_text("hi")])
    offline = OfflineModel(chunk_delay_ms=12)
    OfflineModel(chunk_delay_ms=12).stream(config, lambda event: None, token)  # type: ignore[arg-type]
    reply = ScriptedResponse.from_json(offline._reply(config))
    # a pause before each chunk, each tool call's start and the end — but the first
    chunks = sum(max(1, len(b.chunks)) + (b.type == "toolCall") for b in reply.blocks)  # arguments: one chunk
    pauses = chunks + 1 - 1
    assert token.waits == [pytest.approx(0.012)] * pauses


def test_phi_p_takes_one_git_snapshot_for_its_prompt(tmp_path, prompt_builds):
    from phi.cli.batch import run_print

    options = CliOptions(offline=True, cwd=str(tmp_path), color="never", prompt="what is here?")
    out, err = io.StringIO(), io.StringIO()
    assert run_print(options, make_profile(options), CliSessions(tmp_path / "sessions"), out, err) == 0
    assert "I am phi's offline model" in out.getvalue()
    assert prompt_builds[0] == 1  # the session's own, made after the prompt came with the command line


@pytest.mark.parametrize("key", ["chunk_delay_ms", "first_chunk_delay_ms"])
@pytest.mark.parametrize("value", [-5, float("nan"), float("inf"), "20", True, 10 ** 12])
def test_a_scripted_pause_that_is_no_duration_is_refused(key, value):
    from phi.errors import ConfigError
    from phi.providers.mock import ScriptedResponse

    with pytest.raises(ConfigError, match=key):
        ScriptedResponse.from_json({"blocks": [], key: value})
    with pytest.raises(ConfigError, match=key):
        ScriptedResponse(**{key: value})  # type: ignore[arg-type]
