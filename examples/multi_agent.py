"""A multi-agent pipeline: an editor agent delegates to a researcher and a writer (SubAgentTool).

    python examples/multi_agent.py "the history of the golden ratio"            # real models
    python examples/multi_agent.py --offline "the history of the golden ratio"   # scripted, no network

The editor's tools are two sub-agents. Each runs its own loop, with its own system prompt, tools and
model, and sees only the task the editor writes for it; its final text is the tool result. The
researcher has a tool of its own (a tiny in-memory library). Each delegation is printed when it
starts and ends, with the child's loop id (``{session}.sub.1``) and how many turns it took; the
children's own text also streams to the parent as ToolExecutionUpdate events while they work.

Real models: ``PHI_MODEL`` (default claude-sonnet-4-5) and its API key. Offline: ``--offline``,
``PHI_OFFLINE=1``, or no API key variable set — every agent then plays a script, so the pipeline
runs end to end anywhere (the test suite runs it this way).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

from phi import Agent, ScriptedProvider, ScriptedResponse, SubAgentTool, ToolExecutionEnd, ToolExecutionStart, tool
from phi.providers.model_names import model_config_for

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
LIBRARY = {
    "golden ratio": "φ = (1 + √5) / 2 ≈ 1.618; Euclid called it the extreme and mean ratio (c. 300 BC).",
    "fibonacci": "Ratios of consecutive Fibonacci numbers tend to φ (Kepler noticed it in 1611).",
}


@tool
def lookup(topic: str) -> str:
    """Look a topic up in the library.

    Args:
        topic: A short topic, e.g. "golden ratio".
    """
    hits = [text for key, text in LIBRARY.items() if key in topic.lower() or topic.lower() in key]
    return "\n".join(hits) or f"nothing on {topic!r}"


def scripts() -> dict[str, ScriptedProvider]:
    """What each agent says when offline: the calls a real model would make, in order."""
    return {
        "researcher": ScriptedProvider([
            ScriptedResponse.tool_call("lookup", {"topic": "golden ratio"}, call_id="r1"),
            ScriptedResponse.tool_call("lookup", {"topic": "fibonacci"}, call_id="r2"),
            "Facts: φ ≈ 1.618 (Euclid, c. 300 BC, 'extreme and mean ratio'); Fibonacci ratios tend to φ (Kepler, 1611).",
        ]),
        "writer": ScriptedProvider([
            "The golden ratio, φ ≈ 1.618, was described by Euclid around 300 BC; in 1611 Kepler saw "
            "that ratios of Fibonacci numbers approach it.",
        ]),
        "editor": ScriptedProvider([
            ScriptedResponse.tool_call("researcher", {"task": "Collect dated facts on the golden ratio."}, call_id="e1"),
            ScriptedResponse.tool_call("writer", {"task": "Write two sentences from these facts: φ ≈ 1.618 "
                                                          "(Euclid, c. 300 BC); Fibonacci ratios tend to φ (Kepler, 1611)."},
                                       call_id="e2"),
            lambda request: "Final text:\n" + request.messages[-1].text,
        ]),
    }


def build(model: str, offline: bool) -> Agent:
    played = scripts() if offline else {}

    def model_args(role: str) -> dict[str, Any]:
        return {"provider": played[role]} if offline else {"model_config": model_config_for(model)}

    researcher = SubAgentTool("researcher", system_prompt="Find facts with the lookup tool; answer with dated facts.",
                              tools=[lookup], description="Researches a topic and returns facts.",
                              **model_args("researcher"))
    writer = SubAgentTool("writer", system_prompt="Write clear, short prose from the facts you are given.",
                          description="Turns facts into two polished sentences.", **model_args("writer"))
    return Agent(system_prompt="You are an editor: get facts from the researcher, then text from the writer.",
                 tools=[researcher, writer], provider=played["editor"] if offline else None,
                 model=None if offline else model)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("topic", nargs="?", default="the golden ratio")
    parser.add_argument("--model", default=os.environ.get("PHI_MODEL", "claude-sonnet-4-5"))
    parser.add_argument("--offline", action="store_true", help="scripted models (no network)")
    args = parser.parse_args(argv)
    offline = args.offline or os.environ.get("PHI_OFFLINE") == "1" or not any(os.environ.get(k) for k in KEYS)
    agent = build(args.model, offline)
    stream = agent.prompt(f"Write a short note on {args.topic}.")
    for event in stream:
        if isinstance(event, ToolExecutionStart):
            print(f"→ {event.tool_name}: {event.args['task']}")
        elif isinstance(event, ToolExecutionEnd):
            print(f"← {event.tool_name} (loop {event.child_loop_id}, {event.result.details['turns']} turns)")
    result = stream.result()
    print(result.text)
    return 0 if result.error is None else 1


if __name__ == "__main__":
    sys.exit(main())
