"""Real recorded sessions for the export tests: an Agent with real tools (write, edit, apply_patch,
bash, a SubAgentTool child) and a parallel run, scripted with ScriptedProvider, recorded with
Agent(store=...) into a JsonDirStore."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from phi import Agent, ScriptedProvider, SubAgentTool
from phi.evaluation import TokenEfficientEvaluation
from phi.session import JsonDirStore
from phi.tools import ApplyPatchTool, BashTool, EditFileTool, LocalExecutionEnvironment, ReadFileTool, WriteFileTool

HOSTILE = '</script><img src=x onerror="document.body.setAttribute(\'data-pwned\',\'1\')"><script>alert(1)</script>'
SECRET = "sk-export-test-secret-0123456789abcdef"

PATCH = """*** Begin Patch
*** Update File: notes.txt
@@
 alpha
-beta changed
+beta patched
*** Add File: extra.txt
+fresh line
*** End Patch"""


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"blocks": [{"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}],
            "usage": {"input": 100, "output": 20, "total_tokens": 120}}


def reply(text: str, thinking: str | None = None, tokens: int = 50) -> dict:
    blocks = [{"type": "thinking", "text": thinking}] if thinking else []
    blocks.append({"type": "text", "text": text})
    return {"blocks": blocks, "usage": {"input": tokens, "output": 10, "cache_read": 7, "total_tokens": tokens + 17}}


@dataclass
class Recorded:
    store: JsonDirStore
    session_id: str
    agent: Agent
    workdir: Path


def record_session(tmp_path: Path) -> Recorded:
    """One session: a tool-using run with a sub-agent, then a parallel run of two configs."""
    work = tmp_path / "work"
    work.mkdir()
    env = LocalExecutionEnvironment(str(work))
    child_script = ScriptedProvider([
        {"blocks": [{"type": "thinking", "text": "child plans " + HOSTILE},
                    {"type": "toolCall", "id": "child_read", "name": "read_file", "arguments": {"path": "notes.txt"}}]},
        reply("child found: beta patched"),
    ])
    researcher = SubAgentTool("researcher", provider=child_script, tools=[ReadFileTool(env)])
    script = ScriptedProvider([
        {"blocks": [{"type": "thinking", "text": "I should write notes first " + HOSTILE},
                    {"type": "text", "text": "Writing notes."},
                    {"type": "toolCall", "id": "c_write", "name": "write_file",
                     "arguments": {"path": "notes.txt", "content": "alpha\nbeta\ngamma " + HOSTILE + "\n"}}],
         "usage": {"input": 100, "output": 20, "total_tokens": 120}},
        call("c_edit", "edit_file", {"path": "notes.txt", "old_text": "beta", "new_text": "beta changed"}),
        call("c_patch", "apply_patch", {"patch": PATCH}),
        call("c_bash", "bash", {"command": f"cat notes.txt; echo key={SECRET}"}),
        call("c_sub", "researcher", {"task": "check notes.txt " + HOSTILE}),
        reply("All done " + HOSTILE + " with " + SECRET, thinking="wrap up"),
    ])
    store = JsonDirStore(tmp_path / "sessions")
    tools = [WriteFileTool(env), EditFileTool(env), ApplyPatchTool(env), BashTool(env), researcher]
    agent = Agent(provider=script, tools=tools, store=store)
    result = agent.run("Please update the notes " + HOSTILE)
    assert result.text.startswith("All done"), result
    variants = [{"provider": ScriptedProvider([reply("Long answer with many words.", tokens=300)]), "config_id": "wordy"},
                {"provider": ScriptedProvider([reply("Short.", tokens=30)]), "config_id": "terse"}]
    agent.tools = []
    agent.run_parallel("Summarise " + HOSTILE, variants, TokenEfficientEvaluation())
    return Recorded(store, agent.session_id, agent, work)
