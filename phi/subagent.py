"""Sub-agents: a tool that delegates a task to a child agent loop (seed 000 REQ-148..151, REQ-163,
REQ-194, REQ-195, AMB-003; seed 001 §3.4; SPEC §13.1).

    researcher = SubAgentTool("researcher", provider=ScriptedProvider([...]),
                              system_prompt="Find facts.", tools=[...], max_turns=10)
    agent = Agent(model="claude-sonnet-4-5", tools=[researcher])

The model calls the tool with ``{"task": "..."}``. The child runs in a fresh context (no history,
its own tools, its own agent id, session id and loop id ``{session}.sub.1``) whose ``AgentStart``
names the calling loop as ``parent_loop_id``; its first turn is triggered by ``SubAgent``. While it
works, its text streams to the parent as ``ToolExecutionUpdate`` events and its progress notes as
``ProgressMessage`` events; every child event also goes to ``on_event`` when one is given (a
:class:`~phi.session.SessionRecorder`, say). Aborting the parent stops the child: the child runs on
the call's own cancellation token. The result is the child's final text (``extract_final_text``)
with ``child_loop_id`` set and details ``{sub_agent, turns, usage}``.

Nesting is bounded: a sub-agent tool in a child's tool list counts one level deeper, and levels
beyond ``max_depth`` (default 1: a child cannot delegate further) are left out of the child's tools.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Sequence

from .errors import ConfigError, ToolError
from .ids import random_uuid
from .log import get_logger
from .removed import SUB_AGENT_TOOL, attach_removed
from .loop.tool import AgentTool, ToolContext
from .tools.trace_context import child_run
from .providers.model_config import ModelConfig
from .types import (
    AgentMessage,
    AssistantMessage,
    TextContent,
    ThinkingLevel,
    ToolResult,
    TurnTrigger,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:  # for annotations only: the run machinery is imported by the first call
    from .events import AgentEvent
    from .providers.base import StreamProvider

log = get_logger(__name__)

NO_TEXT = "(sub-agent produced no text output)"

_PARAMETERS = {
    "type": "object",
    "properties": {"task": {"type": "string", "description": "The task, stated completely: the sub-agent "
                                                           "sees nothing of this conversation."}},
    "required": ["task"],
}


def extract_final_text(messages: Sequence[AgentMessage]) -> str:
    """The text of the last assistant message that has any, joined; else a fallback that carries the
    last reply's ``error_message`` when it failed (AMB-003: always a result, never an error)."""
    last_error: str | None = None
    for message in reversed(messages):
        if not isinstance(message, AssistantMessage):
            continue
        texts = [block.text for block in message.content if isinstance(block, TextContent) and block.text]
        if texts:
            return "\n".join(texts)
        if last_error is None and message.error_message:
            last_error = message.error_message
    return f"{NO_TEXT}: error: {last_error}" if last_error else NO_TEXT


@dataclass
class SubAgentTool:
    """An :class:`~phi.loop.tool.AgentTool` that runs a child agent loop. See the module docstring."""

    name: str
    model_config: ModelConfig | None = None
    provider: StreamProvider | None = None  # overrides model_config's registry lookup
    system_prompt: str = ""
    tools: Sequence[AgentTool] = ()
    max_turns: int = 10
    thinking: ThinkingLevel = ThinkingLevel.OFF
    description: str = ""
    parent_loop_id: str | None = None  # None: the calling loop's id, taken from the call
    on_event: Callable[[AgentEvent], None] | None = None
    max_depth: int = 1
    depth: int = 0  # how many sub-agent levels are above this tool (0: the top-level agent's tool)
    timeout_ms: int | None = None
    label: str = ""
    parameters: dict[str, Any] = field(default_factory=lambda: dict(_PARAMETERS))

    def __post_init__(self) -> None:
        if self.model_config is None and self.provider is None:
            raise ConfigError(f"SubAgentTool {self.name!r} needs model_config=ModelConfig.<preset>(...) "
                              "or provider=...")
        if self.max_turns < 1 or self.max_depth < 0:
            raise ConfigError(f"SubAgentTool {self.name!r}: max_turns must be >= 1 and max_depth >= 0")
        if not self.description:
            self.description = (f"Delegate a self-contained task to the {self.name} sub-agent, which works on it "
                                "with its own tools and answers with its final text.")
        self.thinking = ThinkingLevel(self.thinking)

    # ------------------------------------------------------------------ builder (seed 001 names)

    def clone(self, **changes: Any) -> SubAgentTool:
        """A copy with ``changes`` applied (any field), like ``Agent.clone``; this tool is unchanged."""
        return replace(self, **changes)


    # ------------------------------------------------------------------ running

    def child_tools(self) -> list[AgentTool]:
        """The child's tools: nested sub-agent tools one level deeper, those past ``max_depth`` left out."""
        tools: list[AgentTool] = []
        for tool in self.tools:
            if isinstance(tool, SubAgentTool):
                if self.depth + 1 >= self.max_depth:
                    log.info("sub-agent %s: tool %s left out of the child (depth limit %d)", self.name,
                             tool.name, self.max_depth)
                    continue
                # a nested sub-agent reports to this one's listener unless it has its own (a recorder sees all)
                tool = replace(tool, depth=self.depth + 1, max_depth=self.max_depth,
                               on_event=tool.on_event or self.on_event)
            tools.append(tool)
        return tools

    def execute(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        task = args.get("task")
        if not isinstance(task, str) or not task.strip():
            raise ToolError("task must be a non-empty string")
        if self.depth >= self.max_depth:
            raise ToolError(f"sub-agent {self.name}: nesting deeper than {self.max_depth} level(s) is not allowed")
        from .context.config import ExecutionLimits
        from .loop.config import AgentContext, AgentLoopConfig
        from .loop.run import agent_loop

        session_id = random_uuid()
        child_loop_id = f"{session_id}.sub.1"
        context = AgentContext(self.system_prompt, [], self.child_tools(), random_uuid(), session_id,
                               child_loop_id, self.parent_loop_id or ctx.loop_id)
        config = AgentLoopConfig(model_config=self.model_config or ModelConfig.mock(), provider=self.provider,
                                 thinking_level=self.thinking, first_turn_trigger=TurnTrigger.SUB_AGENT,
                                 execution_limits=ExecutionLimits(max_turns=self.max_turns, max_total_tokens=None,
                                                                  max_duration=None))
        watcher = _ChildWatcher(ctx, self.on_event)
        child_run(ctx.loop_id, ctx.tool_call_id, child_loop_id)  # tracing parents the child's spans now
        messages = agent_loop([UserMessage.from_text(task)], context, config, watcher.sink, ctx.cancel)
        usage = Usage()
        for message in messages:
            if isinstance(message, AssistantMessage):
                usage = usage.combine(message.usage)
        details = {"sub_agent": self.name, "turns": watcher.turns, "usage": usage.to_json()}
        return ToolResult([TextContent(extract_final_text(messages))], details, child_loop_id=context.loop_id)


# the builders removed in the 0.1 reshaping say what replaced them (for one release; phi/removed.py)
attach_removed(SubAgentTool, SUB_AGENT_TOOL)


class _ChildWatcher:
    """The child run's event sink: counts turns, forwards text and progress to the parent call."""

    def __init__(self, ctx: ToolContext, on_event: Callable[[AgentEvent], None] | None) -> None:
        self.ctx, self.on_event = ctx, on_event
        self.turns = 0
        self.text: list[str] = []

    def sink(self, event: AgentEvent) -> None:
        if event.type == "TurnStart":
            self.turns += 1
        elif event.type == "MessageStart":
            self.text = []
        elif event.type == "MessageUpdate":
            delta = event.delta
            if delta.kind == "text" and delta.delta:
                self.text.append(delta.delta)
                self.ctx.update("".join(self.text))
        elif event.type == "ProgressMessage":
            self.ctx.progress(event.text)
        if self.on_event is not None:
            self.on_event(event)
