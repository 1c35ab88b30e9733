"""A terminal chat with phi in under 100 lines: streaming replies, /quit, /clear, /model NAME.

    python examples/repl.py                  # a real model: PHI_MODEL (default claude-sonnet-4-5) + its API key
    python examples/repl.py --model gpt-5    # any name phi knows (see docs/providers.md)
    python examples/repl.py --offline        # a scripted model: no key, no network

Offline: with ``--offline``, with ``PHI_OFFLINE=1``, or when none of the usual API key variables is
set, a scripted model answers (it repeats what you said and names the model), so the REPL can be
tried, and tested, anywhere: ``printf 'hi\\n/model m2\\nhi\\n/quit\\n' | python examples/repl.py --offline``.
Ctrl+C aborts the reply being streamed; Ctrl+D or /quit leaves.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace

from phi import Agent, MessageUpdate, ModelConfig, ScriptedProvider, StreamConfig
from phi.errors import PhiError
from phi.providers.model_names import model_config_for

KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")
HELP = "commands: /quit, /clear (forget the conversation), /model NAME (switch model), /help"


def offline_reply(request: StreamConfig) -> str:
    """The scripted model: echoes the last user message and says which model it plays."""
    said = next(m.text for m in reversed(request.messages) if m.role == "user")
    return f"[{request.model_config.id}] You said: {said} (history: {len(request.messages)} messages)"


def make_agent(model: str, offline: bool) -> Agent:
    prompt = "You are a helpful assistant in a terminal. Be brief."
    if offline:  # the scripted model plays the named one
        return Agent(system_prompt=prompt, provider=ScriptedProvider(default=offline_reply), model_config=replace(ModelConfig.mock(), id=model))
    return Agent(system_prompt=prompt, model_config=model_config_for(model))


def switch_model(agent: Agent, name: str, offline: bool) -> None:
    if offline:
        agent.model_config = replace(agent.model_config, id=name)
    else:
        agent.model_config = model_config_for(name)  # may change protocol: claude-* -> gpt-*
    print(f"model: {name}")


def stream_reply(agent: Agent, text: str) -> None:
    stream = agent.prompt(text)
    try:
        for event in stream:
            if isinstance(event, MessageUpdate) and event.delta.kind == "text":
                print(event.delta.delta, end="", flush=True)
    except KeyboardInterrupt:
        agent.abort()
    result = stream.result()
    if result.error:
        print(f"\n(error: {result.error})", end="")
    print()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").partition("\n")[0])
    parser.add_argument("--model", default=os.environ.get("PHI_MODEL", "claude-sonnet-4-5"))
    parser.add_argument("--offline", action="store_true", help="use a scripted model (no network)")
    args = parser.parse_args(argv)
    offline = args.offline or os.environ.get("PHI_OFFLINE") == "1" or not any(os.environ.get(k) for k in KEYS)
    try:
        agent = make_agent(args.model, offline)
    except PhiError as error:
        print(f"phi REPL: {error}", file=sys.stderr)
        return 2
    print(f"phi REPL — model {args.model}{' (offline, scripted)' if offline else ''}. {HELP}")
    while True:
        try:
            line = input("> ").strip()
        except (EOFError, KeyboardInterrupt):
            print()
            return 0
        command, _, rest = line.partition(" ")
        if command == "/quit":
            return 0
        try:  # a bad model name or a failed call is reported; the REPL goes on
            if command == "/clear":
                agent.reset()
                print("conversation cleared")
            elif command == "/model":
                switch_model(agent, rest.strip(), offline) if rest.strip() else print(f"model: {agent.model_config.id}")
            elif command == "/help" or line.startswith("/"):
                print(HELP)
            elif line:
                stream_reply(agent, line)
        except PhiError as error:
            print(f"(error: {error})")


if __name__ == "__main__":
    sys.exit(main())
