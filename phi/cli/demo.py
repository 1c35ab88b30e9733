"""``phi demo``: a real agent run, its events printed as they stream (a ``phi`` subcommand, SPEC §15).

Offline by default: the built-in :class:`~phi.providers.mock.ScriptedProvider` plays the model, and
its script reads the real tool results, so the numbers in the final answer are computed, not
canned. With ``ANTHROPIC_API_KEY`` or ``OPENAI_API_KEY`` in the environment (or ``--provider``),
the same agent talks to that service instead.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, TextIO

from .. import Agent, ScriptedProvider, tool
from ..events import AgentEvent
from ..loop.tool import AgentTool
from ..providers.base import StreamConfig
from ..providers.model_config import ModelConfig
from ..types import AssistantMessage, TextContent, ToolResultMessage, UserMessage

QUESTION = "How many lines and words are in the text files of this folder? Which file is longest?"


def make_workspace() -> Path:
    folder = Path(tempfile.mkdtemp(prefix="phi-demo-"))
    (folder / "poem.txt").write_text("The loop streams a reply,\ntools run, results return,\n"
                                     "and round it goes again.\n")
    (folder / "notes.txt").write_text("phi is synchronous and thread-based.\n"
                                      "It depends on requests, jsonschema and pyyaml.\n")
    (folder / "todo.txt").write_text("write the spec\nship the conformance suite\n")
    return folder


def make_tools(folder: Path) -> list[AgentTool]:
    @tool
    def list_text_files() -> list[str]:
        """List the .txt files of the workspace folder."""
        return sorted(p.name for p in folder.glob("*.txt"))

    @tool
    def count_file(name: str) -> dict[str, int]:
        """Count the lines and words of one file of the workspace.

        Args:
            name: The file name, as returned by list_text_files.
        """
        text = (folder / name).read_text()
        return {"lines": len(text.splitlines()), "words": len(text.split())}

    return [list_text_files, count_file]


def scripted_model(config: StreamConfig) -> dict[str, Any]:
    """The offline 'model': decides its next step from the conversation so far, like a real one."""
    results = [m for m in config.messages if isinstance(m, ToolResultMessage)]
    if not results:
        return {"blocks": [
            {"type": "thinking", "chunks": ["I should ", "find the files first."]},
            {"type": "text", "chunks": ["Let me look ", "at the folder."]},
            {"type": "toolCall", "id": "call_list", "name": "list_text_files", "arguments": {}},
        ], "usage": {"input": 120, "output": 30}}
    if len(results) == 1:
        import json

        names = json.loads(results[0].text)
        return {"blocks": [{"type": "text", "chunks": [f"Counting {len(names)} files in parallel."]}] + [
            {"type": "toolCall", "id": f"call_{i}", "name": "count_file", "arguments": {"name": n}}
            for i, n in enumerate(names)
        ], "usage": {"input": 180, "output": 40}}
    import json

    counts = {m.tool_call_id: json.loads(m.text) for m in results[1:] if not m.is_error}
    calls = [b for m in config.messages if isinstance(m, AssistantMessage)
             for b in m.tool_calls if b.name == "count_file"]
    rows = [(c.arguments["name"], counts[c.id]) for c in calls if c.id in counts]
    lines = sum(r["lines"] for _, r in rows)
    words = sum(r["words"] for _, r in rows)
    longest = max(rows, key=lambda row: row[1]["words"])[0]
    answer = f"The {len(rows)} files hold {lines} lines and {words} words in all; the longest is {longest}."
    return {"blocks": [{"type": "text", "chunks": [w + " " for w in answer.split(" ")]}],
            "usage": {"input": 260, "output": 35}}


def live_provider(choice: str | None) -> tuple[ModelConfig | None, str]:
    """A real model's config when asked for (or when an API key is set), else None; and its label."""
    if choice == "anthropic" or (choice is None and os.environ.get("ANTHROPIC_API_KEY")):
        return ModelConfig.anthropic(os.environ.get("PHI_DEMO_MODEL", "claude-sonnet-4-5")), "anthropic"
    if choice == "openai" or (choice is None and os.environ.get("OPENAI_API_KEY")):
        return ModelConfig.openai(os.environ.get("PHI_DEMO_MODEL", "gpt-4.1-mini")), "openai"
    return None, "scripted (offline)"


class Printer:
    """Prints events readably as they arrive."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.streaming = ""
        self.calls: dict[str, str] = {}

    def __call__(self, event: AgentEvent) -> None:
        w = self.out.write
        if event.type == "AgentStart":
            w(f"▶ run {event.loop_id}\n")
        elif event.type == "TurnStart":
            w(f"\n── turn {event.turn_index} ({event.triggered_by.value})\n")
        elif event.type == "MessageUpdate":
            kind = event.delta.kind
            if kind != self.streaming:
                label = {"text": "  assistant: ", "thinking": "  thinking: ", "toolCall": "  tool call args: "}[kind]
                w(("\n" if self.streaming else "") + label)
                self.streaming = kind
            w(event.delta.delta)
        elif event.type == "MessageEnd":
            if self.streaming:
                w("\n")
                self.streaming = ""
            if isinstance(event.message, UserMessage):
                w(f"  user: {event.message.text}\n")
        elif event.type == "ToolExecutionStart":
            self.calls[event.tool_call_id] = f"{event.tool_name}({event.args})"
            w(f"  ⚙ {self.calls[event.tool_call_id]} …\n")
        elif event.type == "ToolExecutionEnd":
            text = "".join(b.text for b in event.result.content if isinstance(b, TextContent))
            failed = "  (error)" if event.is_error else ""
            w(f"  ✓ {self.calls.get(event.tool_call_id, event.tool_name)} → {text}{failed}\n")
        elif event.type == "AgentEnd":
            u = event.usage
            w(f"\n■ done: {len(event.messages)} new messages, tokens in/out {u.input}/{u.output}\n")
        self.out.flush()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="phi demo", description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--provider", choices=["scripted", "anthropic", "openai"], default=None)
    parser.add_argument("question", nargs="?", default=QUESTION)
    args = parser.parse_args(argv)
    folder = make_workspace()
    model_config, label = (None, "scripted (offline)") if args.provider == "scripted" else live_provider(args.provider)
    if model_config is None:
        agent = Agent(provider=ScriptedProvider([scripted_model] * 3), tools=make_tools(folder))
    else:
        agent = Agent(model_config=model_config, tools=make_tools(folder))
    agent.system_prompt = "You answer questions about the files of a folder, using the tools. Be brief."
    sys.stdout.write(f"phi demo — model: {label}; workspace: {folder}\n")
    printer = Printer(sys.stdout)
    for event in agent.prompt(args.question):
        printer(event)
    last = agent.messages[-1]
    if isinstance(last, AssistantMessage) and last.error_message:
        sys.stderr.write(f"error: {last.error_message}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
