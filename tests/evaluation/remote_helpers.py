"""Module-level tools, hooks and script pieces for the remote-branch tests (SPEC EVAL-7, EVAL-8).

A remote branch pickles its tools, hooks and script callables by reference, so they live here, in
a module the worker processes import (this directory is on their ``sys.path``: conftest.py puts it
on the parent's, which spawned processes inherit). Also the pieces the tests compare runs with.
"""

from __future__ import annotations

import re
from typing import Any

from phi.loop.config import AgentLoopConfig
from phi.providers.base import StreamConfig
from phi.providers.mock import ScriptedProvider
from phi.providers.retry import RetryConfig
from phi.tools.function_tool import tool


@tool
def shout(text: str) -> str:
    """Say it louder.

    Args:
        text: What to say.
    """
    return text.upper() + "!"


def count_words(text: str) -> int:
    """How many words ``text`` has."""
    return len(text.split())


counter = tool(count_words, name="count", description="Count the words of a text.")


def refuse_turn(messages: list[Any], turn_index: int) -> bool:
    """A before_turn hook that raises: the branch fails with the exception."""
    raise RuntimeError("hook refused")


def echo_last(config: StreamConfig) -> dict[str, Any]:
    """A script callable: answers with the text of the last message it was sent."""
    last = config.messages[-1]
    text = "".join(getattr(block, "text", "") for block in last.content)
    return {"blocks": [{"type": "text", "chunks": [f"you said: {text}"]}], "usage": {"total_tokens": 7}}


def tool_then_answer(i: int, tokens: int) -> list[Any]:
    """A call of ``shout``, then a streamed answer using ``tokens`` tokens."""
    call = {"blocks": [{"type": "text", "chunks": [f"b{i} thinks "]},
                       {"type": "toolCall", "id": f"t{i}", "name": "shout", "arguments": {"text": f"b{i}"}}],
            "usage": {"total_tokens": 1}}
    answer = {"blocks": [{"type": "text", "chunks": [f"b{i} answer {k} " for k in range(5)]}],
              "usage": {"total_tokens": tokens}}
    return [call, answer]


def config(script: list[Any], config_id: str, **settings: Any) -> AgentLoopConfig:
    settings.setdefault("retry_config", RetryConfig(max_retries=0))
    return AgentLoopConfig(provider=ScriptedProvider(script), config_id=config_id, **settings)


def mixed_configs() -> list[AgentLoopConfig]:
    """Five branches: two with tools (different token counts), one whose model fails, one whose
    hook raises, one whose script is a function — the same every time they are made."""
    return [
        config(tool_then_answer(0, 40), "tools-a"),
        config([{"error": {"kind": "auth", "message": "bad key"}}], "broken"),
        config(tool_then_answer(1, 12), "tools-b"),
        config(["never"], "hooked", before_turn=refuse_turn),
        config([echo_last], "echo"),
    ]


HANG = {"blocks": [{"type": "text", "chunks": ["partial", " never"]}], "hang_after_chunks": 1}


def normalise(value: Any, ids: dict[str, str]) -> Any:
    """A recorded session (or event) as JSON with its times dropped and its ids renamed (``ids``:
    found → placeholder), loops sorted by id: what two equal runs have in common."""
    if isinstance(value, dict):
        out = {k: normalise(v, ids) for k, v in value.items()
               if k not in ("timestamp", "created_at", "last_active_at", "started_at", "ended_at")}
        if isinstance(out.get("loops"), list):
            out["loops"].sort(key=lambda loop: loop["loop_id"])
        return out
    if isinstance(value, list):
        return [normalise(v, ids) for v in value]
    if isinstance(value, str):
        for found, placeholder in ids.items():
            value = value.replace(found, placeholder)
        return re.sub(r"\d{4}-\d\d-\d\dT[\d:.]+Z", "<time>", value)
    return value


def die(config: StreamConfig) -> dict[str, Any]:
    """A script callable that ends its worker process at once (a crash, as far as the pool can tell)."""
    import os

    os._exit(3)


def _report_and_block(marker: str) -> None:
    """Write this process's id to the file ``marker``, then block until the process is killed."""
    import os
    import threading

    partial = marker + ".partial"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(str(os.getpid()))
    os.replace(partial, marker)  # the file appears whole
    threading.Event().wait(600)  # a bound, in case the test failed before its kill: never reached otherwise


@tool
def wait_to_be_killed(marker: str) -> str:
    """Write this process's id to the file ``marker``, then block until the process is killed.

    Args:
        marker: Where to write the process id (the test waits for the file, then kills the process).
    """
    _report_and_block(marker)
    return "not killed"


def block_turn(marker: str, messages: list[Any], turn_index: int) -> bool:
    """A before_turn hook (bound to ``marker`` with functools.partial) that reports its process id and
    blocks: the worker dies after the branch was told to go, before it announced its prompt."""
    _report_and_block(marker)
    return True


def block_after_loop(marker: str, messages: list[Any], usage: Any) -> None:
    """An after_loop hook (bound to ``marker``) that reports its process id and blocks: the worker dies
    after the branch's AgentEnd was sent, before its end marker and its report."""
    _report_and_block(marker)
