"""phi: a synchronous, thread-based, dependency-light LLM agent loop.

A map of the API (SPEC.md gives the rules; each module's docstring names the ones it implements;
docs/architecture.md maps the tree):

Run an agent (SPEC §11)
    Agent(model="claude-sonnet-4-5" | model_config=ModelConfig.<preset>(...) | provider=..., tools=[...],
          system_prompt=..., any AgentLoopConfig setting as a keyword: max_tokens=, before_turn=, ...)
    agent.prompt(text) -> EventStream (iterate for live events; .result() -> AgentResult)
    agent.run(text, timeout=None) -> AgentResult(messages, outcome, usage, stop_reason, error, ...)
    agent.steer(text) / agent.follow_up(text) / agent.abort() / agent.reset()
    agent.subscribe(callback); agent.clone(**changes) -> a new Agent; agent.config.<setting> = value
    agent.run_structured(prompt, schema) -> a validated value

Tools (SPEC §5, §9)
    @tool (typed function -> tool), FunctionTool, AgentTool (protocol), ToolContext, ToolResult,
    ToolError; built-ins: default_tools(), coding_tools(); SubAgentTool (delegate to a child loop)

Tool sources (SPEC §12), imported only when used
    Agent(tool_sources=[phi.mcp.McpToolset.stdio(cmd, args) | .http(url), phi.skills.SkillSet.load(dirs)],
          tools=phi.openapi.from_file(path) | from_url(url) | from_str(text)); agent.close()

Resuming (SPEC AGENT-6, AGENT-7)
    agent.checkpoint() -> AgentSnapshot (.save(path) / AgentSnapshot.load(path)); agent.restore(s);
    agent.resume("rerun" | "branch"); agent.send(message=None)

The loop itself (SPEC §4)
    agent_loop(prompts, context, config, sink, cancel) / agent_loop_continue(context, config, sink, cancel)
    AgentContext, AgentLoopConfig, ToolExecution, CancellationToken, MessageQueue, default_convert_to_llm
    configure_tool_pool(max_workers=..., max_threads=...): the process's pool tool calls run on

Data (SPEC §2) and events (SPEC §3)
    UserMessage, AssistantMessage, ToolResultMessage, ExtensionMessage; TextContent, ImageContent,
    ThinkingContent, ToolCall; Usage, StopReason, RunOutcome; message_to_json / messages_from_json
    AgentEvent (a union that narrows on event.type): AgentStart, TurnStart, MessageStart, MessageUpdate,
    MessageEnd, ToolExecutionStart/Update/End, ProgressMessage, TurnEnd, AgentEnd, InputRejected;
    event_to_json / event_from_json

Models (SPEC §7)
    ModelConfig (anthropic, openai, openai_responses, google, vertex, bedrock, preset, ...),
    ScriptedProvider / ScriptedResponse (offline), RetryConfig, ProviderError, ErrorKind

Context (SPEC §8)
    ContextConfig, compact_messages, ExecutionLimits, ExecutionTracker, ContextTracker

Names are loaded on first use (PEP 562), so ``import phi`` stays fast and never imports
``requests``, ``jsonschema`` or ``yaml``; type checkers see every name with its real type. Errors
derive from :class:`PhiError`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:
    # data model (SPEC §2)
    from .types import (
        AgentMessage, AssistantMessage, Content, ContinuationKind, ExtensionMessage, ImageContent, Message,
        message_from_json, message_to_json, messages_from_json, QueueMode, RunOutcome, StopReason,
        TextContent, ThinkingContent, ThinkingLevel, ToolCall, ToolDefinition, ToolResult, ToolResultMessage,
        TurnTrigger, Usage, UserMessage,
    )
    # events (SPEC §3)
    from .events import (
        AgentEnd, AgentEvent, AgentStart, event_from_json, event_to_json, InputRejected, MessageEnd,
        MessageStart, MessageUpdate, ParallelLoopEnd, ParallelLoopStart, ProgressMessage, StreamDelta,
        ToolExecutionEnd, ToolExecutionStart, ToolExecutionUpdate, TurnEnd, TurnStart,
    )
    # errors
    from .errors import (
        AlreadyRunning, ConfigError, DecodeError, InvalidArgs, InvalidContinue, InvalidPrompt, PhiError,
        RunTimeout, StructuredOutputFailed, ToolCancelled, ToolError,
    )
    # the loop (SPEC §4-5)
    from .loop.run import agent_loop, agent_loop_continue
    from .loop.llm_view import default_convert_to_llm
    from .loop.config import AgentContext, AgentLoopConfig, ToolExecution
    from .loop.tool import AgentTool, FunctionTool, ToolContext
    from .loop.filters import FilterResult, InputFilter
    # concurrency (SPEC §6)
    from .concurrency.cancel import CancellationToken
    from .concurrency.channel import EventChannel, EventStream
    from .concurrency.queues import MessageQueue
    from .concurrency.workers import configure_tool_pool
    # providers (SPEC §7)
    from .providers.model_config import ModelConfig
    from .providers.base import (
        CacheConfig, CacheStrategy, ErrorKind, ProviderError, StreamConfig, StreamProvider,
    )
    from .providers.retry import RetryConfig
    from .providers.mock import ScriptedProvider, ScriptedResponse
    # context management (SPEC §8)
    from .context.config import ContextConfig, ExecutionLimits
    from .context.tracker import ContextTracker, ExecutionTracker
    from .context.compaction import compact_messages
    # tools (SPEC §9)
    from .tools import coding_tools, default_tools
    from .tools.function_tool import tool
    # the Agent (SPEC §11)
    from .agent.agent import Agent
    from .agent.result import AgentResult
    from .agent.snapshot import AgentSnapshot
    from .agent.final_answer import final_answer_tool
    # above a single run (SPEC §13)
    from .subagent import SubAgentTool

__all__ = [
    "Agent", "AgentContext", "AgentEnd", "AgentEvent", "AgentLoopConfig", "AgentMessage", "AgentResult",
    "AgentSnapshot", "AgentStart", "AgentTool", "AlreadyRunning", "AssistantMessage", "CacheConfig",
    "CacheStrategy", "CancellationToken", "ConfigError", "Content", "ContextConfig", "ContextTracker",
    "ContinuationKind", "DecodeError", "ErrorKind", "EventChannel", "EventStream", "ExecutionLimits",
    "ExecutionTracker", "ExtensionMessage", "FilterResult", "FunctionTool", "ImageContent", "InputFilter",
    "InputRejected", "InvalidArgs", "InvalidContinue", "InvalidPrompt", "Message", "MessageEnd",
    "MessageQueue", "MessageStart", "MessageUpdate", "ModelConfig", "ParallelLoopEnd", "ParallelLoopStart",
    "PhiError", "ProgressMessage", "ProviderError", "QueueMode", "RetryConfig", "RunOutcome", "RunTimeout",
    "ScriptedProvider", "ScriptedResponse", "StopReason", "StreamConfig", "StreamDelta", "StreamProvider",
    "StructuredOutputFailed", "SubAgentTool", "TextContent", "ThinkingContent", "ThinkingLevel", "ToolCall",
    "ToolCancelled", "ToolContext", "ToolDefinition", "ToolError", "ToolExecution", "ToolExecutionEnd",
    "ToolExecutionStart", "ToolExecutionUpdate", "ToolResult", "ToolResultMessage", "TurnEnd", "TurnStart",
    "TurnTrigger", "Usage", "UserMessage", "agent_loop", "agent_loop_continue", "coding_tools",
    "compact_messages", "configure_tool_pool", "default_convert_to_llm", "default_tools", "event_from_json", "event_to_json",
    "final_answer_tool", "message_from_json", "message_to_json", "messages_from_json", "tool",
]

if not TYPE_CHECKING:  # checkers see the imports above, so a misspelt name stays an error for them
    from .lazy_exports import lazy_exports
    from .removed import PACKAGE_NAMES, install_finder, removed_attribute

    __getattr__, __dir__ = lazy_exports(globals(), lambda name: removed_attribute(__name__, name, PACKAGE_NAMES, __name__))
    install_finder(__name__)  # `import phi.loop_config` says where it went
