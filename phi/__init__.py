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

from .lazy_exports import export_names, lazy_exports

__version__ = "0.1.0"

# module (relative to this package) -> the names it gives ``phi``; repeated for type checkers below
_EXPORTS: dict[str, tuple[str, ...]] = {
    # data model (SPEC §2)
    ".types": ("AgentMessage", "AssistantMessage", "Content", "ContinuationKind", "ExtensionMessage", "ImageContent",
               "Message", "QueueMode", "RunOutcome", "StopReason", "TextContent", "ThinkingContent",
               "ThinkingLevel", "ToolCall", "ToolDefinition", "ToolResult", "ToolResultMessage", "TurnTrigger",
               "Usage", "UserMessage", "message_from_json", "message_to_json", "messages_from_json"),
    # events (SPEC §3)
    ".events": ("AgentEnd", "AgentEvent", "AgentStart", "InputRejected", "MessageEnd", "MessageStart",
                "MessageUpdate", "ParallelLoopEnd", "ParallelLoopStart", "ProgressMessage", "StreamDelta",
                "ToolExecutionEnd", "ToolExecutionStart", "ToolExecutionUpdate", "TurnEnd", "TurnStart",
                "event_from_json", "event_to_json"),
    # errors
    ".errors": ("AlreadyRunning", "ConfigError", "DecodeError", "InvalidArgs", "InvalidContinue", "InvalidPrompt",
                "PhiError", "RunTimeout", "StructuredOutputFailed", "ToolCancelled", "ToolError"),
    # the loop (SPEC §4-5)
    ".loop.run": ("agent_loop", "agent_loop_continue"),
    ".loop.llm_view": ("default_convert_to_llm",),
    ".loop.config": ("AgentContext", "AgentLoopConfig", "ToolExecution"),
    ".loop.tool": ("AgentTool", "FunctionTool", "ToolContext"),
    ".loop.filters": ("FilterResult", "InputFilter"),
    # concurrency (SPEC §6)
    ".concurrency.cancel": ("CancellationToken",),
    ".concurrency.channel": ("EventChannel", "EventStream"),
    ".concurrency.queues": ("MessageQueue",),
    # providers (SPEC §7)
    ".providers.model_config": ("ModelConfig",),
    ".providers.base": ("CacheConfig", "CacheStrategy", "ErrorKind", "ProviderError", "StreamConfig",
                        "StreamProvider"),
    ".providers.retry": ("RetryConfig",),
    ".providers.mock": ("ScriptedProvider", "ScriptedResponse"),
    # context management (SPEC §8)
    ".context.config": ("ContextConfig", "ExecutionLimits"),
    ".context.tracker": ("ContextTracker", "ExecutionTracker"),
    ".context.compaction": ("compact_messages",),
    # tools (SPEC §9)
    ".tools": ("coding_tools", "default_tools"),
    ".tools.function_tool": ("tool",),
    # the Agent (SPEC §11)
    ".agent.agent": ("Agent",),
    ".agent.result": ("AgentResult",),
    ".agent.snapshot": ("AgentSnapshot",),
    ".agent.final_answer": ("final_answer_tool",),
    # above a single run (SPEC §13)
    ".subagent": ("SubAgentTool",),
}

__all__ = export_names(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

if TYPE_CHECKING:
    from .agent.agent import Agent as Agent
    from .agent.final_answer import final_answer_tool as final_answer_tool
    from .agent.result import AgentResult as AgentResult
    from .agent.snapshot import AgentSnapshot as AgentSnapshot
    from .concurrency.cancel import CancellationToken as CancellationToken
    from .concurrency.channel import EventChannel as EventChannel
    from .concurrency.channel import EventStream as EventStream
    from .concurrency.queues import MessageQueue as MessageQueue
    from .context.compaction import compact_messages as compact_messages
    from .context.config import ContextConfig as ContextConfig
    from .context.config import ExecutionLimits as ExecutionLimits
    from .context.tracker import ContextTracker as ContextTracker
    from .context.tracker import ExecutionTracker as ExecutionTracker
    from .errors import (
        AlreadyRunning as AlreadyRunning,
    )
    from .errors import (
        ConfigError as ConfigError,
    )
    from .errors import (
        DecodeError as DecodeError,
    )
    from .errors import (
        InvalidArgs as InvalidArgs,
    )
    from .errors import (
        InvalidContinue as InvalidContinue,
    )
    from .errors import (
        InvalidPrompt as InvalidPrompt,
    )
    from .errors import (
        PhiError as PhiError,
    )
    from .errors import (
        RunTimeout as RunTimeout,
    )
    from .errors import (
        StructuredOutputFailed as StructuredOutputFailed,
    )
    from .errors import (
        ToolCancelled as ToolCancelled,
    )
    from .errors import (
        ToolError as ToolError,
    )
    from .events import (
        AgentEnd as AgentEnd,
    )
    from .events import (
        AgentEvent as AgentEvent,
    )
    from .events import (
        AgentStart as AgentStart,
    )
    from .events import (
        InputRejected as InputRejected,
    )
    from .events import (
        MessageEnd as MessageEnd,
    )
    from .events import (
        MessageStart as MessageStart,
    )
    from .events import (
        MessageUpdate as MessageUpdate,
    )
    from .events import (
        ParallelLoopEnd as ParallelLoopEnd,
    )
    from .events import (
        ParallelLoopStart as ParallelLoopStart,
    )
    from .events import (
        ProgressMessage as ProgressMessage,
    )
    from .events import (
        StreamDelta as StreamDelta,
    )
    from .events import (
        ToolExecutionEnd as ToolExecutionEnd,
    )
    from .events import (
        ToolExecutionStart as ToolExecutionStart,
    )
    from .events import (
        ToolExecutionUpdate as ToolExecutionUpdate,
    )
    from .events import (
        TurnEnd as TurnEnd,
    )
    from .events import (
        TurnStart as TurnStart,
    )
    from .events import (
        event_from_json as event_from_json,
    )
    from .events import (
        event_to_json as event_to_json,
    )
    from .loop.config import (
        AgentContext as AgentContext,
    )
    from .loop.config import (
        AgentLoopConfig as AgentLoopConfig,
    )
    from .loop.config import (
        ToolExecution as ToolExecution,
    )
    from .loop.filters import FilterResult as FilterResult
    from .loop.filters import InputFilter as InputFilter
    from .loop.llm_view import default_convert_to_llm as default_convert_to_llm
    from .loop.run import agent_loop as agent_loop
    from .loop.run import agent_loop_continue as agent_loop_continue
    from .loop.tool import AgentTool as AgentTool
    from .loop.tool import FunctionTool as FunctionTool
    from .loop.tool import ToolContext as ToolContext
    from .providers.base import (
        CacheConfig as CacheConfig,
    )
    from .providers.base import (
        CacheStrategy as CacheStrategy,
    )
    from .providers.base import (
        ErrorKind as ErrorKind,
    )
    from .providers.base import (
        ProviderError as ProviderError,
    )
    from .providers.base import (
        StreamConfig as StreamConfig,
    )
    from .providers.base import (
        StreamProvider as StreamProvider,
    )
    from .providers.mock import ScriptedProvider as ScriptedProvider
    from .providers.mock import ScriptedResponse as ScriptedResponse
    from .providers.model_config import ModelConfig as ModelConfig
    from .providers.retry import RetryConfig as RetryConfig
    from .subagent import SubAgentTool as SubAgentTool
    from .tools import coding_tools as coding_tools
    from .tools import default_tools as default_tools
    from .tools.function_tool import tool as tool
    from .types import (
        AgentMessage as AgentMessage,
    )
    from .types import (
        AssistantMessage as AssistantMessage,
    )
    from .types import (
        Content as Content,
    )
    from .types import (
        ContinuationKind as ContinuationKind,
    )
    from .types import (
        ExtensionMessage as ExtensionMessage,
    )
    from .types import (
        ImageContent as ImageContent,
    )
    from .types import (
        Message as Message,
    )
    from .types import (
        QueueMode as QueueMode,
    )
    from .types import (
        RunOutcome as RunOutcome,
    )
    from .types import (
        StopReason as StopReason,
    )
    from .types import (
        TextContent as TextContent,
    )
    from .types import (
        ThinkingContent as ThinkingContent,
    )
    from .types import (
        ThinkingLevel as ThinkingLevel,
    )
    from .types import (
        ToolCall as ToolCall,
    )
    from .types import (
        ToolDefinition as ToolDefinition,
    )
    from .types import (
        ToolResult as ToolResult,
    )
    from .types import (
        ToolResultMessage as ToolResultMessage,
    )
    from .types import (
        TurnTrigger as TurnTrigger,
    )
    from .types import (
        Usage as Usage,
    )
    from .types import (
        UserMessage as UserMessage,
    )
    from .types import (
        message_from_json as message_from_json,
    )
    from .types import (
        message_to_json as message_to_json,
    )
    from .types import (
        messages_from_json as messages_from_json,
    )
