"""phi: a synchronous, thread-based, dependency-light LLM agent loop.

A map of the API (SPEC.md gives the rules; each module's docstring names the ones it implements):

Run an agent
    Agent(model="claude-sonnet-4-5" | model_config=ModelConfig.<preset>(...) | provider=..., tools=[...])
    agent.prompt(text) -> EventStream (iterate for live events; .result() -> AgentResult)
    agent.run(text, timeout=None) -> AgentResult(messages, outcome, usage, stop_reason, error, ...)
    agent.steer(text) / agent.follow_up(text) / agent.abort() / agent.reset()
    agent.subscribe(callback); agent.with_<setting>(value) for every AgentLoopConfig setting
    agent.run_structured(prompt, schema) -> a validated value

Tools
    @tool (typed function -> tool), FunctionTool, AgentTool (protocol), ToolContext, ToolResult,
    ToolError; built-ins: default_tools(), coding_tools(); SubAgentTool (delegate to a child loop)

Tool sources (SPEC §12), imported only when used
    agent.with_skills(dirs) / with_mcp_server_stdio(cmd, args) / with_mcp_server_http(url) /
    with_openapi_file(path) / with_openapi_url(url) / with_openapi_spec(text); agent.close()
    phi.skills (SkillSet), phi.mcp (McpClient, McpToolset, McpError), phi.openapi (from_file, from_url,
    from_str, OpenApiConfig)

Resuming (SPEC AGENT-6, AGENT-7)
    agent.checkpoint() -> AgentSnapshot (.save(path) / AgentSnapshot.load(path)); agent.restore(s);
    agent.resume("rerun" | "branch"); agent.send(message=None)

The loop itself (SPEC §4)
    agent_loop(prompts, context, config, sink, cancel) / agent_loop_continue(context, config, sink, cancel)
    AgentContext, AgentLoopConfig, ToolExecution, CancellationToken, MessageQueue, default_convert_to_llm

Data (SPEC §2) and events (SPEC §3)
    UserMessage, AssistantMessage, ToolResultMessage, ExtensionMessage; TextContent, ImageContent,
    ThinkingContent, ToolCall; Usage, StopReason, RunOutcome; message_to_json / messages_from_json
    AgentStart, TurnStart, MessageStart, MessageUpdate, MessageEnd, ToolExecutionStart/Update/End,
    ProgressMessage, TurnEnd, AgentEnd, InputRejected; event_to_json / event_from_json

Models (SPEC §7)
    ModelConfig (anthropic, openai, openai_responses, google, vertex, bedrock, preset, ...),
    ScriptedProvider / ScriptedResponse (offline), RetryConfig, ProviderError, ErrorKind

Context (SPEC §8)
    ContextConfig, compact_messages, ExecutionLimits, ExecutionTracker, ContextTracker

Names are loaded on first use (PEP 562), so ``import phi`` stays fast and never imports
``requests``, ``jsonschema`` or ``yaml``. Errors derive from :class:`PhiError`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    # the loop (SPEC §4)
    "agent_loop": "phi.loop",
    "agent_loop_continue": "phi.loop",
    "default_convert_to_llm": "phi.loop",
    "AgentContext": "phi.loop_config",
    "AgentLoopConfig": "phi.loop_config",
    "ToolExecution": "phi.loop_config",
    # the application API
    "Agent": "phi.agent",
    "AgentResult": "phi.agent",
    "MessageQueue": "phi.queues",
    "tool": "phi.function_tool",
    # data model (SPEC §2)
    "TextContent": "phi.types",
    "ImageContent": "phi.types",
    "ThinkingContent": "phi.types",
    "ToolCall": "phi.types",
    "UserMessage": "phi.types",
    "AssistantMessage": "phi.types",
    "ToolResultMessage": "phi.types",
    "ExtensionMessage": "phi.types",
    "Usage": "phi.types",
    "StopReason": "phi.types",
    "ThinkingLevel": "phi.types",
    "QueueMode": "phi.types",
    "TurnTrigger": "phi.types",
    "ContinuationKind": "phi.types",
    "ToolDefinition": "phi.types",
    "ToolResult": "phi.types",
    "message_to_json": "phi.types",
    "message_from_json": "phi.types",
    "messages_from_json": "phi.types",
    # events (SPEC §3)
    "AgentStart": "phi.events",
    "AgentEnd": "phi.events",
    "TurnStart": "phi.events",
    "TurnEnd": "phi.events",
    "MessageStart": "phi.events",
    "MessageUpdate": "phi.events",
    "MessageEnd": "phi.events",
    "ToolExecutionStart": "phi.events",
    "ToolExecutionUpdate": "phi.events",
    "ToolExecutionEnd": "phi.events",
    "ProgressMessage": "phi.events",
    "InputRejected": "phi.events",
    "ParallelLoopStart": "phi.events",
    "ParallelLoopEnd": "phi.events",
    "StreamDelta": "phi.events",
    "event_to_json": "phi.events",
    "event_from_json": "phi.events",
    # concurrency (SPEC §6)
    "CancellationToken": "phi.cancel",
    "EventChannel": "phi.channel",
    "EventStream": "phi.channel",
    # tools (SPEC §5)
    "AgentTool": "phi.agent_tool",
    "ToolContext": "phi.agent_tool",
    "SubAgentTool": "phi.subagent",
    "SkillSet": "phi.skills",
    "OpenApiConfig": "phi.openapi",
    "McpClient": "phi.mcp",
    "McpToolset": "phi.mcp",
    "McpError": "phi.mcp",
    "AgentSnapshot": "phi.agent_snapshot",
    "FunctionTool": "phi.agent_tool",
    "FilterResult": "phi.filters",
    "InputFilter": "phi.filters",
    # providers (SPEC §7)
    "ModelConfig": "phi.providers.model_config",
    "StreamConfig": "phi.providers.base",
    "StreamProvider": "phi.providers.base",
    "CacheConfig": "phi.providers.base",
    "CacheStrategy": "phi.providers.base",
    "ProviderError": "phi.providers.base",
    "ErrorKind": "phi.providers.base",
    "RetryConfig": "phi.providers.retry",
    "ScriptedProvider": "phi.providers.mock",
    "ScriptedResponse": "phi.providers.mock",
    # context management (SPEC §8)
    "ContextConfig": "phi.context.config",
    "ExecutionLimits": "phi.context.config",
    "ExecutionTracker": "phi.context.tracker",
    "ContextTracker": "phi.context.tracker",
    "compact_messages": "phi.context.compaction",
    "final_answer_tool": "phi.structured",
    # built-in tools (SPEC §9)
    "default_tools": "phi.tools",
    "coding_tools": "phi.tools",
    # errors
    "PhiError": "phi.errors",
    "DecodeError": "phi.errors",
    "InvalidContinue": "phi.errors",
    "InvalidPrompt": "phi.errors",
    "RunOutcome": "phi.types",
    "AlreadyRunning": "phi.errors",
    "ConfigError": "phi.errors",
    "ToolError": "phi.errors",
    "InvalidArgs": "phi.errors",
    "ToolCancelled": "phi.errors",
    "StructuredOutputFailed": "phi.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'phi' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs
    from .agent import Agent, AgentResult
    from .agent_snapshot import AgentSnapshot
    from .agent_tool import AgentTool, FunctionTool, ToolContext
    from .cancel import CancellationToken
    from .subagent import SubAgentTool
    from .channel import EventChannel, EventStream
    from .loop import agent_loop, agent_loop_continue
    from .loop_config import AgentContext, AgentLoopConfig, ToolExecution
    from .providers.base import StreamConfig, StreamProvider, ProviderError
    from .providers.mock import ScriptedProvider, ScriptedResponse
    from .providers.model_config import ModelConfig
    from .types import *  # noqa: F401,F403
