"""The Agent: the stateful, application-facing wrapper around the loop (SPEC §11, seed 001 §6).

An Agent owns a conversation, its tools and settings, the steering and follow-up queues, and its
identity (agent id, session id, loop counters). ``prompt`` starts a run on a worker thread and
returns an :class:`~phi.concurrency.channel.EventStream` at once; ``run`` is the blocking
convenience. Both give an :class:`~phi.agent.result.AgentResult`. The new messages of a run join
the history when the run ends, whether or not anyone read its events — and before anyone hears of
it: by the time ``AgentEnd`` reaches a subscriber (or ``after_loop`` runs) the history is updated
and the agent is idle, so a new prompt may start right there (SPEC AGENT-1).

    agent = Agent(provider=ScriptedProvider(["Hello!"]), system_prompt="Be brief.")
    for event in agent.prompt("Hi"):
        ...
"""

# _Run below is the Agent's own run, a class of its own for reading's sake: it works on the Agent's
# private state by design, as the Agent's methods do, so private use is not reported in this file.
# pyright: reportPrivateUsage=false

from __future__ import annotations

import copy
import sys
import threading
from dataclasses import dataclass, fields, is_dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence, TypeVar, Union, cast, overload

from ..concurrency import sync
from ..concurrency.cancel import CALLBACK_WAIT_S, CancellationToken, current_work
from ..concurrency.channel import EventChannel, EventStream
from ..concurrency.queues import MessageQueue
from ..errors import AlreadyRunning, ConfigError, RunTimeout
from ..events import AgentEnd, ParallelLoopEnd
from ..ids import loop_key, loop_number, random_uuid
from ..log import get_logger
from ..loop.config import QUEUE_SOURCES, AgentContext, AgentLoopConfig, LoopSettings
from ..loop.identity import config_segment, loop_ids_from
from ..loop.run import agent_loop, agent_loop_continue, check_can_continue
from ..loop.tool import AgentTool
from ..providers.model_config import API_MOCK, ModelConfig
from ..removed import agent_removed, attach_removed
from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    ContinuationKind,
    ExtensionMessage,
    ImageContent,
    QueueMode,
    RunOutcome,
    TextContent,
    ToolResultMessage,
    UserMessage,
    message_to_json,
    messages_from_json,
)
from .recording import (
    claim_run,
    continue_stored_session,
    record_raised_run,
    recorded_tools,
    save_sessions,
)
from .result import AgentResult, SessionFork
from .snapshot import AgentSnapshot, resume_point
from .sources import ToolSource, check_own_tools, close_sources, start_up

if TYPE_CHECKING:
    from concurrent.futures import Executor

    from typing_extensions import Unpack

    from ..evaluation.model import EvaluationStrategy, ParallelLoopResult
    from ..evaluation.remote import RemoteBranches
    from ..events import AgentEvent
    from ..session import BranchPoint, SessionRecorder, SessionStore

# The run machinery (phi.loop.run, phi.events, phi.concurrency.channel, the worker pool) is imported
# with the Agent, not by its first run: a process's first run costs what every later run costs
# (``import phi`` alone stays cheap: the Agent itself is loaded on first use).

log = get_logger(__name__)

#: What ``run(timeout=)`` allows on top of the tool grace for the aborted run's threads to be scheduled
#: (a loaded machine), before it raises RunTimeout (SPEC AGENT-2).
SCHEDULING_SLACK_S = 0.25

OWN_LOOPS_KEPT = 4096  # loop ids of its own runs an agent remembers, to tell other writers' branches apart
_delivering = threading.local()  # .agent: the Agent whose subscribers this thread is calling now
_cloning = threading.local()  # .shared: the tool sources of the agent this thread is cloning

EventSink = Callable[["AgentEvent"], None]
# what a run runs: the loop (single run) with the run's context, settings, event sink and token; a
# parallel run's body also takes its branch loop ids and the function told of the strategy's choice
SingleBody = Callable[[AgentContext, AgentLoopConfig, EventSink, CancellationToken], object]
R = TypeVar("R")
T = TypeVar("T")
Prompt = Union[str, AgentMessage, Sequence[AgentMessage]]
Images = Sequence[Union[ImageContent, tuple[str, str]]]


class AgentOptions(LoopSettings, total=False):
    """Every keyword of ``Agent(...)`` (and of :meth:`Agent.clone`)."""

    model: str | None
    api_key: str | None
    system_prompt: str
    tools: Iterable[AgentTool]
    tool_sources: Iterable[ToolSource]
    messages: Iterable[AgentMessage]
    steering_mode: QueueMode | str
    follow_up_mode: QueueMode | str
    recorder: SessionRecorder | None
    store: SessionStore | None
    agent_id: str | None
    session_id: str | None

_LOOP_SETTINGS = tuple(f.name for f in fields(AgentLoopConfig) if f.name not in QUEUE_SOURCES)


class Agent:
    """A conversation with a model, its tools and its settings.

    Making one (every keyword is optional)::

        Agent(model="claude-sonnet-4-5" | "gpt-5" | "gemini-2.5-flash" | "<provider>:<model>",
              model_config=ModelConfig.<preset>(...), provider=ScriptedProvider([...]), api_key=...,
              system_prompt="...", tools=[...], tool_sources=[McpToolset.stdio(...), SkillSet.load(...)],
              messages=[...], recorder=SessionRecorder(), store=JsonDirStore(...),
              steering_mode="all", follow_up_mode=..., agent_id=..., session_id=...,
              **every AgentLoopConfig setting (max_tokens=, thinking_level=, before_turn=, ...))
        agent.clone(**changes)              # a new Agent: these settings, a copy of the history

    What may change between runs (plain attributes; a run keeps what it started with):
        system_prompt, tools, tool_sources, config (AgentLoopConfig), model_config, messages,
        agent_id, session_id, last_loop_id, steering_queue, follow_up_queue

    Running:   prompt(text) -> EventStream · run(text, timeout=) -> AgentResult · send(message)
               continue_loop(kind) · resume(kind) · prompt_parallel / run_parallel · run_structured
    While one runs (from any thread or callback): steer(text) · follow_up(text) · abort()
               · wait_for_idle() · is_streaming
    Observing: subscribe(callback, include_subagents=) -> unsubscribe · record_sessions(recorder, store)
    State:     reset() · clear_queues() · new_session() · next_loop_id() · checkpoint() / restore()
               · save_messages() / restore_messages() · close() (also ``with Agent(...) as agent:``)

    ``model`` picks the protocol from the model name (:mod:`phi.providers.model_names`);
    ``model_config`` gives it in full; ``provider`` (e.g. a ScriptedProvider) overrides both.

    Tools: own tools need distinct names (else ``ConfigError``); a source's tool whose name is taken
    — by an own tool or an earlier source — is left out of the run, logged (SPEC AGENT-9). The agent
    owns its tool sources: ``close()`` closes them, and so does an ``Agent(...)`` that raises.
    """

    def __init__(self, *, model: str | None = None, api_key: str | None = None, system_prompt: str = "",
                 tools: Iterable[AgentTool] = (), tool_sources: Iterable[ToolSource] = (),
                 messages: Iterable[AgentMessage] = (), steering_mode: QueueMode | str = QueueMode.ONE_AT_A_TIME,
                 follow_up_mode: QueueMode | str = QueueMode.ONE_AT_A_TIME, recorder: SessionRecorder | None = None,
                 store: SessionStore | None = None, agent_id: str | None = None, session_id: str | None = None,
                 **settings: Unpack[LoopSettings]) -> None:
        sources = list(tool_sources)
        try:
            self._set_up(model, api_key, system_prompt, tools, sources, messages, steering_mode, follow_up_mode,
                         recorder, store, agent_id, session_id, settings)
        except BaseException:
            # the sources were handed over with the call (MCP servers already running) and no agent
            # exists to close them later: closed here, but for those a clone shares with its original
            shared = getattr(_cloning, "shared", ())
            close_sources([s for s in sources if not any(s is kept for kept in shared)])
            raise

    def _set_up(self, model: str | None, api_key: str | None, system_prompt: str, tools: Iterable[AgentTool],
                tool_sources: list[ToolSource], messages: Iterable[AgentMessage], steering_mode: QueueMode | str,
                follow_up_mode: QueueMode | str, recorder: SessionRecorder | None, store: SessionStore | None,
                agent_id: str | None, session_id: str | None, settings: LoopSettings) -> None:
        unknown = set(settings) - set(_LOOP_SETTINGS)
        if unknown:
            raise TypeError(f"Agent() got unknown settings {sorted(unknown)}; known: {sorted(_LOOP_SETTINGS)}")
        model_config = settings.get("model_config")
        if model_config is None:
            if model is None:
                model_config = ModelConfig.mock()
            else:
                from ..providers.model_names import model_config_for

                try:
                    model_config = model_config_for(model)
                except ConfigError:
                    if settings.get("provider") is None:
                        raise
                    model_config = replace(ModelConfig.mock(), id=model)  # the given provider serves it
        elif model is not None:
            model_config = replace(model_config, id=model)
        if api_key is not None:
            model_config = replace(model_config, api_key=api_key)
        settings["model_config"] = model_config
        self.system_prompt = system_prompt
        self.tools: list[AgentTool] = list(tools)
        check_own_tools(self.tools)
        self.tool_sources: list[ToolSource] = tool_sources
        self.config = AgentLoopConfig(**settings)
        self.steering_queue = MessageQueue(QueueMode(steering_mode))
        self.follow_up_queue = MessageQueue(QueueMode(follow_up_mode))
        self.agent_id = agent_id or random_uuid()
        self.session_id = session_id or random_uuid()
        self.last_loop_id: str | None = None
        self.last_active_at: float | None = None
        self._messages: list[AgentMessage] = list(messages)
        self._loop_counters: dict[str, int] = {}
        self._own_loops: dict[str, None] = {}  # loop ids this agent's runs got, oldest first (SessionFork)
        self.last_fork: SessionFork | None = None  # the latest run's, when it was stored as a branch (SESS-6)
        self._subscribers: tuple[EventSink, ...] = ()  # replaced, never changed in place
        self._subagent_subscribers: tuple[EventSink, ...] = ()  # also hear the sub-agent runs (same rule)
        self._lock = sync.Lock()
        self._cancel: CancellationToken | None = None
        self._generation = 0  # bumped by reset(): a run started before it merges nothing
        self._runs: dict[int, CancellationToken] = {}  # thread ident -> token, for each run whose worker is alive
        self._idle = sync.Event()
        self._idle.set()
        self._delivered = sync.Event()  # every event of the latest run has reached the subscribers
        self._delivered.set()
        self._saved = sync.Event()  # the latest run has saved what it recorded (SESS-7): its last step
        self._saved.set()
        self._recorder: SessionRecorder | None = None
        self._store: SessionStore | None = None
        # the recorder's subscription (not its unsubscribe, which holds the agent: a cycle)
        self._recording: EventSink | None = None
        if recorder is not None or store is not None:
            self.record_sessions(recorder, store)

    def clone(self, **changes: Unpack[AgentOptions]) -> Agent:
        """A new, idle Agent with this one's settings, tools, tool sources, system prompt, queue modes
        and recorder — and a deep copy of its history (changing a message of one never changes the
        other's) — with ``changes`` applied (any keyword of
        ``Agent(...)``). The clone has its own identity (new agent and session ids), empty queues
        and no subscribers; tool sources are shared, so closing either agent closes them.

        ``agent.clone(model="gpt-5")`` is the same agent on another model; ``agent`` is unchanged.
        """
        options: dict[str, Any] = {name: getattr(self.config, name) for name in _LOOP_SETTINGS}
        options.update(system_prompt=self.system_prompt, tools=list(self.tools), tool_sources=list(self.tool_sources),
                       messages=_copied(self._messages), steering_mode=self.steering_queue.mode,
                       follow_up_mode=self.follow_up_queue.mode, recorder=self._recorder, store=self._store)
        if "model" in changes and "model_config" not in changes:
            options.pop("model_config")  # the new model name picks its own protocol
        options.update(changes)
        _cloning.shared = self.tool_sources  # a clone that cannot be made leaves them open: they are still ours
        try:
            return Agent(**options)
        finally:
            _cloning.shared = ()

    def __repr__(self) -> str:
        return (f"Agent(agent_id={self.agent_id!r}, model={self.config.model_config.id!r}, "
                f"tools={[t.name for t in self.tools]}, messages={len(self._messages)}, streaming={self.is_streaming})")

    # ----------------------------------------------------------------- state

    @property
    def messages(self) -> list[AgentMessage]:
        """The conversation. While a run is active it is the history as the run started; the run's
        new messages join it when the run ends. Replacing it is refused while a run is active."""
        return self._messages

    @messages.setter
    def messages(self, messages: Iterable[AgentMessage]) -> None:
        replacement = list(messages)
        with self._lock:  # checked and replaced together: a run starting meanwhile cannot slip between
            self._refuse_while_running("replace the messages")
            self._messages = replacement

    @property
    def model_config(self) -> ModelConfig:
        """``config.model_config``: the model the next run uses."""
        return self.config.model_config

    @model_config.setter
    def model_config(self, model_config: ModelConfig) -> None:
        self.config.model_config = model_config

    @property
    def is_streaming(self) -> bool:
        return not self._idle.is_set()

    def _refuse_blocking_in_subscriber(self, what: str) -> None:
        """A blocking run started from a subscriber of this agent would wait for its own events, which
        wait for that subscriber: refused before anything starts (SPEC AGENT-1)."""
        if getattr(_delivering, "agent", None) is self:
            raise AlreadyRunning(f"cannot {what}() inside a subscriber callback of this agent: the run's events "
                                 "wait until that callback returns; use prompt() there and wait for it elsewhere")

    def _refuse_while_running(self, what: str) -> None:
        if self.is_streaming:
            raise AlreadyRunning(f"cannot {what} while a run is active; abort() and wait_for_idle() first, "
                                 "or reset() to drop the run and the conversation")

    # ----------------------------------------------------------------- queues

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message to inject between tool executions of the current run."""
        self.steering_queue.push(_as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message to process when the run would otherwise stop."""
        self.follow_up_queue.push(_as_message(message))

    def clear_queues(self) -> None:
        """Forget every queued steering and follow-up message."""
        self.steering_queue.clear()
        self.follow_up_queue.clear()

    # ----------------------------------------------------------------- observing

    def subscribe(self, callback: EventSink, *, include_subagents: bool = False) -> Callable[[], None]:
        """Call ``callback(event)`` for every event of every run, synchronously, in order.

        Returns a function that unsubscribes. A callback may call ``abort()``, ``steer()``, start the
        next prompt on ``AgentEnd``, ... (SPEC LOOP-19, AGENT-1). With ``include_subagents`` it also
        hears every event of the sub-agent runs that its later runs start (each
        :class:`~phi.subagent.SubAgentTool` reports to it as to a recorder, SESS-7), as they happen,
        on the thread running the child (SPEC §17 OTEL-4) — while the parent's events go on, so such
        a callback must be thread-safe (SPEC AGENT-1).
        """
        with self._lock:
            self._subscribers = (*self._subscribers, callback)
            if include_subagents:
                self._subagent_subscribers = (*self._subagent_subscribers, callback)

        return lambda: self._unsubscribe(callback)

    def _unsubscribe(self, callback: EventSink) -> None:
        with self._lock:
            found = [c for c in self._subscribers if c is not callback]
            if len(found) < len(self._subscribers):
                self._subscribers = tuple(found)
            self._subagent_subscribers = tuple(c for c in self._subagent_subscribers if c is not callback)

    def record_sessions(self, recorder: SessionRecorder | None = None,
                        store: SessionStore | None = None) -> SessionRecorder:
        """Record every run (and its sub-agents) into ``recorder`` (a new one when None) and, with
        ``store``, save what each run settled when it ends (SPEC SESS-7). Returns the recorder."""
        from ..session import SessionRecorder

        recorder = recorder if recorder is not None else SessionRecorder()
        if recorder is not self._recorder:
            if self._recording is not None:
                self._unsubscribe(self._recording)
            self._recording = recorder.on_event
            self.subscribe(self._recording)
        self._recorder, self._store = recorder, store
        return recorder

    @property
    def recorder(self) -> SessionRecorder | None:
        """The session recorder of :meth:`record_sessions`, if any."""
        return self._recorder

    @property
    def store(self) -> SessionStore | None:
        """Where recorded sessions are saved after each run, if anywhere."""
        return self._store

    # ----------------------------------------------------------------- running

    def prompt(self, text: Prompt, images: Images | None = None, *,
               sender: EventSink | None = None) -> EventStream[AgentResult]:
        """Start a run with a new prompt; returns its live event stream at once. With ``sender``
        (an EventChannel or callable) the events go there instead of to the stream."""
        return self._prompt(text, images, sender, inline=False)

    def _prompt(self, text: Prompt, images: Images | None, sender: EventSink | None,
                inline: bool) -> EventStream[AgentResult]:
        prompts = _as_prompts(text, images)
        return self._start(lambda ctx, cfg, sink, cancel: agent_loop(prompts, ctx, cfg, sink, cancel), None, sender,
                           inline=inline)

    def continue_loop(self, kind: ContinuationKind | str | None = None, *,
                      sender: EventSink | None = None) -> EventStream[AgentResult]:
        """Resume from the current history (``default``, ``rerun`` or ``branch``).

        Raises :class:`~phi.errors.InvalidContinue` at once if the history cannot be continued.
        """
        return self._continue(kind, sender, inline=False)

    def _continue(self, kind: ContinuationKind | str | None, sender: EventSink | None,
                  inline: bool) -> EventStream[AgentResult]:
        chosen = _continuation_kind(kind) or ContinuationKind.default()
        return self._start(lambda ctx, cfg, sink, cancel: agent_loop_continue(ctx, cfg, sink, cancel), chosen, sender,
                           prepare=self._continuable, inline=inline)

    def _continuable(self, messages: list[AgentMessage]) -> list[AgentMessage]:
        check_can_continue(AgentContext(messages=messages, agent_id=self.agent_id, session_id=self.session_id))
        return messages

    def resume(self, kind: ContinuationKind | str = "rerun", *,
               sender: EventSink | None = None) -> EventStream[AgentResult]:
        """Resume an interrupted run (aborted, failed): the trailing reply that did not finish — and a
        tool step cut short, with its results — is dropped, then the run continues as ``kind``
        (``rerun`` or ``branch``), its ``parent_loop_id`` the interrupted run's loop id (SPEC AGENT-6).

        A resume that cannot start — an unknown ``kind`` (:class:`~phi.errors.ConfigError`), nothing to
        resume (:class:`~phi.errors.InvalidContinue`), a run already active — raises and leaves the
        history as it was."""
        self._refuse_while_running("resume")
        chosen = _continuation_kind(kind) or ContinuationKind.rerun()
        return self._start(lambda ctx, cfg, sink, cancel: agent_loop_continue(ctx, cfg, sink, cancel), chosen, sender,
                           prepare=lambda messages: messages[:resume_point(messages)])

    def send(self, message: str | AgentMessage | None = None, *,
             sender: EventSink | None = None) -> EventStream[AgentResult]:
        """Start whichever run the history calls for (SPEC AGENT-7): with a message, a new prompt;
        without one, a continuation when the history awaits a reply (it ends with a user message or
        tool results), else :class:`~phi.errors.InvalidContinue`."""
        if message is not None:
            return self.prompt(message, sender=sender)
        return self.continue_loop(None, sender=sender)

    def run(self, text: Prompt | None = None, images: Images | None = None,
            timeout: float | None = None) -> AgentResult:
        """Blocking: run a prompt (or continue, with ``text=None``) and return its AgentResult.

        With ``timeout`` (seconds) this call comes back within a bound — ``timeout`` + 0.5 s (what
        ``abort()`` may take) + the tool grace period (``tool_abort_grace_ms``) + 0.25 s
        (:data:`SCHEDULING_SLACK_S`) — whatever the run's application code does (SPEC AGENT-2). At the
        deadline a run that has not produced its result is aborted — its start-up (asking tool
        sources for their tools) included; ``timed_out`` is then set and ``outcome`` is ``aborted``.
        The run then has until the bound to end. A run that completed (its ``AgentEnd`` was emitted)
        is returned as completed, at the bound at the latest, even while its ``after_loop`` or an
        ``AgentEnd`` subscriber still runs. A run still inside application code at the bound without a
        result raises :class:`~phi.errors.RunTimeout` (a ``TimeoutError``); it ends in the background,
        and the agent stays busy until then. Without a timeout, an exception from the run is raised
        here unchanged.
        """
        timeout = _checked_timeout(timeout)
        self._refuse_blocking_in_subscriber("run")
        deadline = None if timeout is None else sync.monotonic() + timeout
        # nobody reads this run's events: they are dropped instead of queued until it ends. Without a
        # timeout nothing needs this thread meanwhile, so the run runs on it (one thread per run)
        inline = _runs_here(deadline)
        stream = self._continue(None, _drop, inline) if text is None else self._prompt(text, images, _drop, inline)
        if deadline is None:
            try:
                return stream.result()
            finally:  # what the run raised holds this frame in its traceback: the frame lets go of the stream
                del stream
        try:
            result, aborted = _result_by(stream, deadline, self.config.tool_abort_grace_ms / 1000.0, timeout or 0.0)
        finally:
            del stream
        result.timed_out = aborted and result.outcome == RunOutcome.ABORTED
        return result

    def prompt_parallel(self, text: Prompt | None, variants: Sequence[AgentLoopConfig | dict[str, Any]],
                        strategy: EvaluationStrategy | None = None, images: Images | None = None, *,
                        sender: EventSink | None = None, max_workers: int | None = None,
                        executor: Executor | RemoteBranches | None = None) -> EventStream[ParallelLoopResult]:
        """Run the prompt (or, with ``text=None``, a continuation) under several configurations at
        once and keep the best answer (SPEC AGENT-8). ``variants``: configs, or mappings of settings
        that replace the agent's own (``{"model_config": ..., "thinking_level": "high"}``);
        ``strategy``: a :mod:`phi.evaluation` strategy (default: the first branch that succeeded).
        ``max_workers`` and ``executor``: how many branches run at once, and where (SPEC EVAL-7,
        EVAL-8; see :func:`~phi.evaluation.parallel.agent_loop_parallel`).
        The history gains only the winner's messages; ``.result()`` is the ParallelLoopResult."""
        return self._prompt_parallel(text, variants, strategy, images, sender, max_workers, executor, inline=False)

    def _prompt_parallel(self, text: Prompt | None, variants: Sequence[AgentLoopConfig | dict[str, Any]],
                         strategy: EvaluationStrategy | None, images: Images | None, sender: EventSink | None,
                         max_workers: int | None, executor: Executor | RemoteBranches | None,
                         inline: bool) -> EventStream[ParallelLoopResult]:
        from ..evaluation.parallel import agent_loop_parallel, branch_configs
        from ..evaluation.strategies import PickFirstEvaluation

        configs = branch_configs(self.config, variants)
        chosen = strategy if strategy is not None else PickFirstEvaluation()
        prompts = [] if text is None else _as_prompts(text, images)
        branch_point = self.last_loop_id  # a continuation's branches descend from the last run

        def body(ctx: AgentContext, cfg: AgentLoopConfig, sink: EventSink, cancel: CancellationToken,
                 loop_ids: list[str], on_decided: Callable[[ParallelLoopResult], None]) -> ParallelLoopResult:
            ctx.loop_id = None if prompts else branch_point
            return agent_loop_parallel(prompts, ctx, configs, chosen, sink, cancel, loop_ids=loop_ids,
                                       on_decided=on_decided, max_workers=max_workers, executor=executor)

        return self._start(body, None, sender, parallel=configs, parallel_prompts=prompts,
                           prepare=None if prompts else self._continuable, inline=inline)

    def run_parallel(self, text: Prompt | None, variants: Sequence[AgentLoopConfig | dict[str, Any]],
                     strategy: EvaluationStrategy | None = None, images: Images | None = None,
                     timeout: float | None = None, *, max_workers: int | None = None,
                     executor: Executor | RemoteBranches | None = None) -> ParallelLoopResult:
        """Blocking :meth:`prompt_parallel`; with ``timeout`` every branch is aborted at the deadline
        (counted from this call, start-up included), and the call comes back within the same bound as
        :meth:`run`'s (a run still inside application code then raises :class:`~phi.errors.RunTimeout`)."""
        timeout = _checked_timeout(timeout)
        self._refuse_blocking_in_subscriber("run_parallel")
        deadline = None if timeout is None else sync.monotonic() + timeout
        stream = self._prompt_parallel(text, variants, strategy, images, _drop, max_workers, executor,
                                       inline=_runs_here(deadline))
        if deadline is None:
            return stream.result()
        return _result_by(stream, deadline, self.config.tool_abort_grace_ms / 1000.0, timeout or 0.0)[0]

    @overload
    def run_structured(self, prompt: str, schema: type[T], max_retries: int = 2) -> T: ...

    @overload
    def run_structured(self, prompt: str, schema: dict[str, Any], max_retries: int = 2) -> Any: ...

    @overload  # a special form the runtime accepts (Literal[...], X | None, Union[...]): its value, untyped
    def run_structured(self, prompt: str, schema: object, max_retries: int = 2) -> Any: ...

    def run_structured(self, prompt: str, schema: object, max_retries: int = 2) -> Any:
        """Ask for an answer matching ``schema``: a Python type (a dataclass, a TypedDict, ``list[int]``,
        any annotation ``@tool`` accepts) or a JSON Schema dict.

        Returns the validated value: of that type for a type (type checkers know it), the decoded JSON
        value for a dict. Raises :class:`~phi.errors.StructuredOutputFailed` after ``max_retries``
        invalid answers.
        """
        from .structured import run_structured

        return run_structured(self, prompt, schema, max_retries)

    def abort(self) -> None:
        """Cancel the current run: safe from any thread and from any callback, hook or tool."""
        cancel = self._cancel
        if cancel is not None:
            cancel.cancel()

    def wait_for_idle(self, timeout: float | None = None) -> bool:
        """Block until no run is active; returns False if ``timeout`` passed first.

        Called back from inside one of this agent's runs (a subscriber, hook or tool) while a run is
        active, it raises :class:`~phi.errors.AlreadyRunning` instead: that run waits for the caller,
        so the wait could only end by its timeout (SPEC AGENT-1)."""
        if not self._idle.is_set() and self._inside_own_run():
            raise AlreadyRunning("wait_for_idle() was called back from inside this agent's own run (a subscriber, "
                                 "hook or tool), which waits for it: the agent cannot become idle until it returns")
        return self._idle.wait(timeout)

    def wait_for_saved(self, timeout: float | None = None) -> bool:
        """Block until the latest run has saved what it recorded (SPEC SESS-7: its last step, after
        the agent went idle); returns False if ``timeout`` passed first, and at once from inside this
        agent's own run, which saves only after the caller returns."""
        if self._inside_own_run():
            return self._saved.is_set()
        return self._saved.wait(timeout)

    def reset(self) -> None:
        """Abort any run and forget the conversation and the queued messages (identity stays).

        Takes effect at once: a run still winding down merges nothing into the history. Called from
        any other thread, it waits (up to 5 s) for that run to end; called back from inside one of
        this agent's runs — a subscriber (of this run or the one before it), a hook, a tool — it
        returns as soon as the run is aborted, since that run waits for the caller (SPEC AGENT-1).
        """
        inside = self._inside_own_run()  # decided first: the abort may end the tool call we are part of
        with self._lock:
            self._generation += 1
            self._messages = []
        self.clear_queues()  # what the aborted run took from them is not given back either (MessageQueue.clear)
        self.abort()
        if not inside:
            self._idle.wait(5.0)

    def _inside_own_run(self) -> bool:
        """Whether this thread is called back from inside one of this agent's runs — running it,
        delivering its events, running a parallel branch or a tool call of it — so that waiting for
        the agent to become idle here would wait for ourselves."""
        if getattr(_delivering, "agent", None) is self:
            return True
        runs = self._runs
        if not runs:
            return False
        if threading.get_ident() in runs:
            return True
        from ..evaluation.branch import branch_owner

        if branch_owner() in runs:
            return True
        token = current_work()
        return token is not None and any(token.descends_from(run) for run in list(runs.values()))

    def close(self) -> None:
        """Abort a run in progress and close the tool sources (MCP servers stopped, HTTP sessions
        ended). Safe to call twice (SPEC AGENT-5)."""
        inside = self._inside_own_run()
        self.abort()
        if not inside:
            self._idle.wait(5.0)
            self.wait_for_saved(5.0)  # a process that exits after close() keeps the run's session
        sources, self.tool_sources = self.tool_sources, []
        close_sources(sources)

    def __enter__(self) -> Agent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----------------------------------------------------------------- identity (REQ-187..193, 215)

    def next_loop_id(self, config: AgentLoopConfig | None = None) -> str:
        """Take the next loop id of this agent's session for ``config`` (default: the agent's own)."""
        return self._next_loop_id(self.session_id, config)

    def _next_loop_id(self, session_id: str, config: AgentLoopConfig | None = None) -> str:
        return self._next_of(f"{session_id}.{config_segment(config or self.config)}")

    def _count_past(self, loop_id: str) -> None:
        """The counter of ``loop_id``'s key moves past it (the lock is held)."""
        key = loop_key(loop_id)
        self._loop_counters[key] = max(self._loop_counters.get(key, 0), loop_number(loop_id))

    def _next_of(self, key: str) -> str:
        self._loop_counters[key] = self._loop_counters.get(key, 0) + 1
        return f"{key}.{self._loop_counters[key]}"

    def check_and_rotate(self, threshold: float) -> str | None:
        """Start a new session if idle for more than ``threshold`` seconds since the last run (REQ-215);
        returns the new session id, or None."""
        if self.last_active_at is not None and sync.wall_time() - self.last_active_at > threshold:
            return self.new_session()
        return None

    def new_session(self) -> str:
        """Start a new session id at once; loop counters and last_loop_id are cleared."""
        self.session_id = random_uuid()
        self._loop_counters = {}
        self.last_loop_id = None
        return self.session_id

    # ----------------------------------------------------------------- persistence

    def save_messages(self) -> str:
        """The history as a JSON string (SPEC DATA-6)."""
        import json

        return json.dumps([message_to_json(m) for m in self._messages], ensure_ascii=False)

    def restore_messages(self, text: str) -> None:
        """Replace the history with one saved by ``save_messages`` (refused while a run is active).
        Bad JSON raises DecodeError and leaves the history unchanged."""
        import json

        from ..errors import DecodeError

        self._refuse_while_running("restore messages")
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as error:
            shown = (text if isinstance(text, str)  # pyright: ignore[reportUnnecessaryIsInstance]
                     else type(text).__name__)
            raise DecodeError("messages", shown, f"a JSON list of messages ({error})") from None
        restored = messages_from_json(data)
        with self._lock:  # checked again with the replacement: a run may have started while this parsed
            self._refuse_while_running("restore messages")
            self._messages = restored

    def checkpoint(self) -> AgentSnapshot:
        """A secret-free snapshot of the conversation and identity; ``.save(path)`` keeps it on disk."""
        model = self.config.model_config
        return AgentSnapshot([message_to_json(m) for m in self._messages], self.agent_id, self.session_id,
                             dict(self._loop_counters), self.last_loop_id, system_prompt=self.system_prompt,
                             model={"id": model.id, "api": model.api, "provider": model.provider},
                             config_id=self.config.config_id)

    def restore(self, snapshot: AgentSnapshot | BranchPoint) -> None:
        """Return to a snapshot (or a session's ``recorder.branch_from(loop_id)``, SPEC SESS-8): its
        messages, identity, loop counters and system prompt (refused while a run is active). The
        model and its keys stay as this agent has them (SPEC AGENT-6)."""
        self._refuse_while_running("restore a checkpoint")
        restored = messages_from_json(snapshot.messages)
        with self._lock:  # checked again with the replacement: a run may have started while this decoded
            self._refuse_while_running("restore a checkpoint")
            self._messages = restored
            self.agent_id, self.session_id = snapshot.agent_id, snapshot.session_id
            self._loop_counters = dict(snapshot.loop_counters)
            self.last_loop_id = snapshot.last_loop_id
            if snapshot.system_prompt:
                self.system_prompt = snapshot.system_prompt

    # ----------------------------------------------------------------- the worker

    def _check_provider(self) -> None:
        """Fail at once, not in the middle of a turn, when no provider can serve the run."""
        if self.config.provider is not None:
            return
        api = self.config.model_config.api
        if api == API_MOCK:
            raise ConfigError("this Agent has no model: pass model='claude-sonnet-4-5' (or 'gpt-5', 'gemini-2.5-flash', "
                              "'<provider>:<model>'), model_config=ModelConfig.<preset>(...), or, offline, "
                              "provider=ScriptedProvider([...])")
        from ..providers.registry import default_registry

        if api not in default_registry().apis():
            raise ConfigError(f"no provider for api {api!r} (known: {', '.join(default_registry().apis())}); "
                              "register one with phi.providers.registry.default_registry().register(...) "
                              "or pass provider=...")

    def _start(self, body: SingleBody | Callable[..., Any], kind: ContinuationKind | None, sender: EventSink | None,
               parallel: Sequence[AgentLoopConfig] | None = None, parallel_prompts: Sequence[AgentMessage] = (),
               prepare: Callable[[list[AgentMessage]], list[AgentMessage]] | None = None,
               inline: bool = False) -> EventStream[Any]:
        """Start a run on a worker thread — or, ``inline``, run it to its end on this thread (a
        blocking run without a timeout: its stream is then finished). ``parallel``: the branch
        configs of a parallel run, whose history is settled when its strategy has chosen, before
        ``ParallelLoopEnd`` is heard (SPEC AGENT-1, AGENT-8). ``prepare``: what the history becomes
        as the run starts (``resume`` trims it), or raises to refuse the run — applied under the
        lock, so a ``reset()`` meanwhile is seen.

        The run's start-up — continuing a stored session, asking tool sources for their tools and
        instructions — happens on the worker, as part of the run, so that ``run(timeout=)`` bounds it
        (SPEC AGENT-2); the run's loop ids are taken there, once the stored session is known."""
        # A run no provider can serve fails here, in the caller's hands, not in the middle of a turn.
        self._check_provider()
        check_own_tools(self.tools)  # changed since the agent was made, perhaps: each name must be one tool's (AGENT-9)
        # The run's settings, checked before the agent is busy: a setting the application made invalid
        # since (agent.config.tool_choice = "") is refused here and the agent stays idle.
        steering, follow_up = self.steering_queue, self.follow_up_queue
        config = self.config.with_changes(
            get_steering_messages=steering.drain, put_back_steering_messages=steering.put_back,
            get_follow_up_messages=follow_up.drain, put_back_follow_up_messages=follow_up.put_back)
        # Checked and taken in one step: two prompts racing cannot both start, and a reset() is seen.
        with self._lock:
            slot = self._occupy(kind, parallel, prepare)
        self.last_active_at = sync.wall_time()  # check_and_rotate counts idleness from here
        # The run takes its tools, sources and settings now: what the application changes later is the
        # next run's. Its events have their stream (or go to ``sender``) before the first one exists.
        run = _Run(self, slot, body, kind, parallel, parallel_prompts, sender, config)
        if inline:
            return run.work_here()  # never in a local here: see _Run.work
        stream = run.stream
        sync.Thread(target=run.work, name=f"phi-agent-{run.name}", daemon=True).start()
        return stream

    def _occupy(self, kind: ContinuationKind | None, parallel: Sequence[AgentLoopConfig] | None,
                prepare: Callable[[list[AgentMessage]], list[AgentMessage]] | None) -> _Slot:
        """Make the agent busy with a new run (the lock is held): refuse a second one (SPEC AGENT-1),
        settle the history it starts from, and take its loop ids and its place in the order of runs."""
        if not self._idle.is_set():
            raise AlreadyRunning("a run is already in progress: use steer() or follow_up() to add messages, "
                                 "or abort() and wait_for_idle() first")
        if prepare is not None:
            self._messages = prepare(self._messages)  # may raise: then nothing changed
        self._idle.clear()
        self._cancel = cancel = CancellationToken()
        generation = self._generation
        # the run works on a copy: the history gains its messages only when it ends (SPEC AGENT-1)
        context = AgentContext(self.system_prompt, list(self._messages), [], self.agent_id, self.session_id,
                               None if parallel else self.next_loop_id(),
                               self.last_loop_id if kind is not None else None, kind)
        loop_ids = [self.next_loop_id(c) for c in parallel] if parallel else None
        after_loop_id = self.last_loop_id  # the run whose conversation the history continues
        if not parallel:  # a parallel run's last loop is its winner's, known when it is chosen
            self.last_loop_id = context.loop_id
        # each run's events wait for the previous run's: a new prompt started from a subscriber of the
        # old run's AgentEnd is heard after that AgentEnd, never in the middle of its delivery
        previous, self._delivered = self._delivered, sync.Event()
        self._saved = sync.Event()
        return _Slot(cancel, generation, context, loop_ids, after_loop_id, previous, self._delivered, self._saved)


# the methods removed in the 0.1 reshaping say what replaced them (for one release; phi/removed.py)
attach_removed(Agent, agent_removed(LoopSettings.__annotations__))


#: a blocking run without a timeout runs on the caller's thread (False: on a worker, as prompt() does;
#: the tests run the run contract both ways)
RUN_ON_CALLER = True


@dataclass(frozen=True)
class _Slot:
    """What :meth:`Agent._occupy` gives a new run: its token, the history generation it may merge
    into, its context (a copy of the history), its loop ids, and its place in the order of runs."""

    cancel: CancellationToken
    generation: int
    context: AgentContext
    loop_ids: list[str] | None  # a parallel run's branch ids; None for a single run (context.loop_id)
    after_loop_id: str | None  # the run whose conversation the history continues
    previous: sync.Event  # set when every event of the previous run has been delivered
    delivered: sync.Event  # set when every event of this run has been delivered
    saved: sync.Event  # set when this run has saved what it recorded (SESS-7)


def refuse_deadlock(agent: Agent, previous: threading.Event, cancel: CancellationToken) -> None:
    """Before a wait for a run of ``agent`` (started after ``previous`` was delivered, stopped by
    ``cancel``): the wait would never end when this thread delivers the events of an earlier run of
    the agent (whatever thread started this one), or of this very run. A function, not a method of
    the run: the run's stream holds it, and a stream holding its run would make every run a cycle
    that only the garbage collector frees."""
    if getattr(_delivering, "agent", None) is agent and (
            not previous.is_set() or agent._runs.get(threading.get_ident()) is cancel):
        raise AlreadyRunning("cannot wait for a run inside a subscriber callback of the agent: the run's "
                             "events wait until that callback returns; start it there, wait for it elsewhere")


class _Run:
    """One run of an :class:`Agent`, made by ``Agent._start`` on the caller's thread; :meth:`work` is
    its worker thread. Each method is one of the run's jobs: deliver its events in order
    (:meth:`sink`), set it up (:meth:`set_up`, :meth:`claim`), run its body, and end it
    (:meth:`settle`, :meth:`wind_up`) — SPEC AGENT-1, AGENT-2, AGENT-8, SESS-6, SESS-7."""

    def __init__(self, agent: Agent, slot: _Slot, body: Callable[..., Any], kind: ContinuationKind | None,
                 parallel: Sequence[AgentLoopConfig] | None, parallel_prompts: Sequence[AgentMessage],
                 sender: EventSink | None, config: AgentLoopConfig) -> None:
        self.agent, self.body, self.kind = agent, body, kind
        self.parallel, self.parallel_prompts = parallel, parallel_prompts
        self.cancel, self.generation, self.context = slot.cancel, slot.generation, slot.context
        self.loop_ids, self.after_loop_id = slot.loop_ids, slot.after_loop_id
        self.previous, self.delivered, self.saved = slot.previous, slot.delivered, slot.saved
        self.own_tools, self.sources = list(agent.tools), list(agent.tool_sources)
        self.watchers = agent._subagent_subscribers
        self.config = config
        channel = EventChannel()
        self.stream: EventStream[Any] = EventStream(channel, sync.Event(), abort=self.cancel.cancel,
                                                    before_blocking=partial(refuse_deadlock, agent, self.previous,
                                                                            self.cancel),
                                                    cancelled=self.cancel.is_cancelled)
        # an EventChannel is told through its send; any other sender is a function
        self.forward: EventSink = channel.send if sender is None else getattr(sender, "send", sender)
        self.ends: dict[str, AgentEnd] = {}  # each loop's AgentEnd, the first one heard
        self.settled = sync.Event()
        self.base = list(self.context.messages)  # the history the run started from
        self.recorder, self.store = agent._recorder, agent._store
        self.fork: SessionFork | None = None  # set by claim() when the run was stored as a branch
        self.name = self.context.loop_id or (self.loop_ids[0] if self.loop_ids else "")

    # ----------------------------------------------------------------- the worker thread

    def work(self) -> EventStream[Any]:
        """The run, start to end, on its own thread; what it raises reaches the stream's consumer.
        Returns the stream, which the run then no longer holds: what the run raised is kept by the
        stream, and its traceback holds the run's frames — and, on the caller's thread, the frames
        that called the run — so none of them may hold the stream or the error (no reference cycle:
        the run's objects go when the application drops them, without a collection)."""
        me = threading.get_ident()
        self.agent._runs[me] = self.cancel  # a wait for the agent from this thread would wait for itself
        result: Any = None
        error: BaseException | None = None
        try:
            self.set_up()
            result = self.run_body()
        except BaseException as exc:  # re-raised to the consumer by EventStream
            error = exc
            log.debug("run %s raised", self.context.loop_id, exc_info=exc)
        finally:
            try:
                self.wind_up(error)
            finally:  # a second Ctrl+C may land in the wind-up: the agent's bookkeeping still ends
                self.agent._runs.pop(me, None)
                self.stream.finish(result, error)
                del error
        return cast("EventStream[Any]", self.__dict__.pop("stream"))

    def work_here(self) -> EventStream[Any]:
        """:meth:`work` on the caller's thread (a blocking run without a timeout): a Ctrl+C meanwhile
        aborts the run, then reaches the caller (:mod:`phi.agent.interrupts`). It runs in a copy of
        the caller's context: what the run's callbacks set in context variables stays in the run."""
        import contextvars

        from .interrupts import ctrl_c_aborts

        with ctrl_c_aborts(self.cancel.cancel):
            return contextvars.copy_context().run(self.work)

    def set_up(self) -> None:
        """Part of the run, so ``run(timeout=)`` bounds it (SPEC AGENT-2): a stored session is
        continued, the tool sources give their tools and instructions, and the loop ids are claimed
        — last, once the stored session's ids are known."""
        self.continue_stored()
        context = self.context
        context.tools, context.system_prompt = start_up(self.own_tools, self.sources, context.system_prompt,
                                                        self.cancel)
        context.tools = recorded_tools(context.tools, self.recorder, self.watchers)  # sub-agents report (SESS-7)
        self.claim()

    def run_body(self) -> Any:
        """The loop itself: an AgentResult, or a parallel run's ParallelLoopResult."""
        context, config, cancel = self.context, self.config, self.cancel
        if self.parallel is None:
            self.body(context, config, self.sink, cancel)
            known = self.stream.settled_result  # made at AgentEnd (the same object run(timeout=) may hold)
            return known if known is not None else AgentResult.of(self.ends[context.loop_id or ""], self.fork)
        # the winner's new messages, whether its run ended or raised (SPEC AGENT-8); loops the run
        # starts itself (an LLM judge's) take their ids from this agent
        with loop_ids_from(context.session_id or "", self.take_loop_id):
            return self.body(context, config, self.sink, cancel, self.loop_ids, self.decided)

    def wind_up(self, error: BaseException | None) -> None:
        """The run ended, or raised: settle the history, keep the order of deliveries, record a run that
        raised and save the sessions (SESS-7) — its last step."""
        # a parallel run that raised before a branch was chosen keeps at least its prompt
        self.settle([*self.base, *self.parallel_prompts] if self.parallel else None)
        if not self.previous.is_set():  # a run that raised before its last event (or any): its delivery
            self.previous.wait()  # still ends after the previous run's, or the next run's would overlap it
        self.delivered.set()
        if error is not None:
            kept = [] if self.parallel else self.context.messages[len(self.base):]
            record_raised_run(self.recorder, self.loop_ids or [self.context.loop_id or ""], kept)
        save_sessions(self.recorder, self.store)
        self.saved.set()

    # ----------------------------------------------------------------- events and the end of the run

    def sink(self, event: AgentEvent) -> None:
        """Deliver one event of the run: to every subscriber, then to the stream (or ``sender``)."""
        if not self.previous.is_set():  # the previous run's events, AgentEnd included, are delivered first
            self.previous.wait()
        parallel = self.parallel
        last = isinstance(event, ParallelLoopEnd) if parallel is not None else isinstance(event, AgentEnd)
        if isinstance(event, AgentEnd):
            self.ends.setdefault(event.loop_id, event)
            if parallel is None:  # whoever hears AgentEnd finds the history merged and the agent idle
                self.settle()
                if event.loop_id == self.context.loop_id:
                    self.stream.know(AgentResult.of(event, self.fork))  # run(timeout=) may return it now
        # a tuple: subscribing meanwhile cannot disturb the loop below
        subscribers, forward = self.agent._subscribers, self.forward
        if subscribers or forward is not _drop:  # else no application code hears it: nothing to mark
            # while its subscribers run, this thread is inside the agent's run: waiting for it here is refused
            outer, _delivering.agent = getattr(_delivering, "agent", None), self.agent
            try:
                for callback in subscribers:
                    callback(event)
                forward(event)
            finally:
                _delivering.agent = outer
        if last:
            self.delivered.set()

    def decided(self, chosen: ParallelLoopResult) -> None:
        """A parallel run's strategy has chosen: the history gains the winner's messages (SPEC AGENT-8)."""
        self.settle([*self.base, *_kept_by(chosen, self.parallel_prompts)], chosen.selected_loop_id)
        self.stream.know(chosen)

    def settle(self, messages: list[AgentMessage] | None = None, last_loop_id: str | None = None) -> None:
        """The run is over: merge its history and go idle (once, before its end is heard)."""
        if self.settled.is_set():
            return
        self.settled.set()
        agent = self.agent
        with agent._lock:
            if agent._generation == self.generation:  # a reset() since the start: the run merges nothing
                agent._messages = list(self.context.messages) if messages is None else messages
                if last_loop_id is not None:
                    agent.last_loop_id = last_loop_id
            agent._cancel = None
            agent._idle.set()

    # ----------------------------------------------------------------- loop ids and stored sessions

    def continue_stored(self) -> None:
        """A stored session only the store holds (a new process resuming it) is continued first, and
        the agent's counters move past its loop ids."""
        stored = continue_stored_session(self.recorder, self.store, self.context.session_id)
        if not stored:
            return
        agent = self.agent
        with agent._lock:  # the run's own ids, if the stored session holds them, are renumbered by its claim
            for key, count in stored.items():
                agent._loop_counters[key] = max(agent._loop_counters.get(key, 0), count)

    def claim(self) -> None:
        """The run's loop ids are claimed in the recorder and the store, so no other writer of the
        session takes them (SESS-6); ids another writer took are replaced by free ones."""
        agent, context, loop_ids = self.agent, self.context, self.loop_ids
        proposed = list(loop_ids) if loop_ids is not None else [context.loop_id or ""]
        names, self.fork = claim_run(self.recorder, self.store, context.session_id or "", context.agent_id or "",
                                     proposed, self.base, self.after_loop_id, context.parent_loop_id, self.kind,
                                     agent._own_loops)
        with agent._lock:
            agent.last_fork = self.fork
            agent._own_loops.update(dict.fromkeys(names.values() or proposed))
            while len(agent._own_loops) > OWN_LOOPS_KEPT:
                agent._own_loops.pop(next(iter(agent._own_loops)))
        renamed = {old: new for old, new in names.items() if old != new}
        if not renamed:
            return
        with agent._lock:
            for new in renamed.values():
                agent._count_past(new)
            if context.loop_id in renamed:
                old, context.loop_id = context.loop_id, renamed[context.loop_id]
                if agent.last_loop_id == old:
                    agent.last_loop_id = context.loop_id
            if loop_ids is not None:
                loop_ids[:] = [renamed.get(i, i) for i in loop_ids]

    def take_loop_id(self, segment: str) -> str:
        """A loop id for a run the run itself starts without one (an LLM judge's), from the agent's
        counters and claimed like the run's own (LOOP-13, SESS-6)."""
        agent, context = self.agent, self.context
        with agent._lock:
            proposed = agent._next_of(f"{context.session_id}.{segment}")
        names, _ = claim_run(self.recorder, self.store, context.session_id or "", context.agent_id or "", [proposed],
                             [], None)
        given = names.get(proposed, proposed)
        with agent._lock:
            agent._count_past(given)
        return given


def _kept_by(decided: ParallelLoopResult, prompts: Sequence[AgentMessage]) -> list[AgentMessage]:
    """What a parallel run adds to the history (SPEC AGENT-8): the winner's new messages — and its
    prompts when the winner raised before it had appended them (a hook or filter raised first), so
    the user's input is not lost with a run that ended without an exception reaching the caller."""
    new = decided.messages
    if decided.selected.exception is not None and not new:
        return list(prompts)
    return new


def _runs_here(deadline: float | None) -> bool:
    """Whether a blocking run runs on the calling thread: without a deadline (one needs a worker so
    that the call can come back at it) and unless an asyncio loop runs on this thread (a notebook
    cell, an async app calling ``run``: application code of the run may start a loop of its own)."""
    if deadline is not None or not RUN_ON_CALLER:
        return False
    asyncio = sys.modules.get("asyncio")
    return asyncio is None or asyncio.events._get_running_loop() is None


def _drop(event: AgentEvent) -> None:
    """The sink of a run whose events nobody reads (``Agent.run``)."""


_CONTINUATIONS = {"default": ContinuationKind.default, "rerun": ContinuationKind.rerun,
                  "branch": ContinuationKind.branch}


def _continuation_kind(kind: ContinuationKind | str | None) -> ContinuationKind | None:
    if kind is None or isinstance(kind, ContinuationKind):
        return kind
    # checked at run time: callers without a type checker pass anything
    make = _CONTINUATIONS.get(kind) if isinstance(kind, str) else None  # pyright: ignore[reportUnnecessaryIsInstance]
    if make is None:
        raise ConfigError(f"unknown continuation kind {kind!r}: use one of {sorted(_CONTINUATIONS)}")
    return make()


def _checked_timeout(timeout: float | None) -> float | None:
    """A ``timeout=`` as seconds to wait, checked before anything starts: None or one too large to wait
    for (``math.inf``) means no bound; a negative or NaN one is refused."""
    if timeout is None:
        return None
    # checked at run time: callers without a type checker pass anything
    if (isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))  # pyright: ignore[reportUnnecessaryIsInstance]
            or not timeout >= 0):
        raise ConfigError(f"timeout must be a number of seconds >= 0 (or None), got {timeout!r}")
    return None if timeout >= threading.TIMEOUT_MAX else float(timeout)


def _result_by(stream: EventStream[R], deadline: float, grace: float, timeout: float) -> tuple[R, bool]:
    """The result of a run that must come back within its bound (SPEC AGENT-2), and whether this
    aborted it. A run that ended by the deadline gives what it gave (or raises what it raised). Past
    the deadline a run whose result is not known yet is aborted; then the run gets until the bound —
    the deadline + abort's wait + ``grace`` + the scheduling slack — to end, so its last callbacks
    usually finish before this returns. At the bound a run whose result is known (its AgentEnd, or a
    parallel run's decision) is returned while its last callbacks still run; any other raises."""
    try:
        if stream.wait(max(0.0, deadline - sync.monotonic())):
            return stream.result(), False
        aborted = not stream.result_known and not stream.cancelled  # an abort of the caller's own is not a timeout
        if aborted:
            stream.abort()
        bound = deadline + CALLBACK_WAIT_S + grace + SCHEDULING_SLACK_S
        if stream.wait(max(0.0, bound - sync.monotonic())):
            return stream.result(), aborted
        if stream.result_known:
            return stream.known_result(), aborted
        stream.give_up()  # nobody waits for it any more: what it raises later is logged
        raise RunTimeout(f"the run did not end within its timeout of {timeout:g} s nor within the {grace:g} s it was "
                         "given after being aborted: application code it called (a hook, a subscriber, a tool source) "
                         "is still running. The run ends in the background when that code returns and keeps its "
                         "messages; the agent stays busy until then")
    finally:  # what the run raised holds this frame in its traceback: the frame lets go of the stream
        del stream


def _copied(messages: Sequence[AgentMessage]) -> list[AgentMessage]:
    """A deep copy of a history. Application data that cannot be copied as a whole (an extension
    message holding a lock, say) is copied container by container, and only what cannot be copied
    at all (the lock) is shared."""
    return [_deep(message) for message in messages]


def _deep(value: Any) -> Any:
    try:
        return copy.deepcopy(value)
    except (TypeError, copy.Error, RecursionError):
        pass
    if isinstance(value, dict):
        mapping = cast("dict[object, object]", value)
        return {key: _deep(item) for key, item in mapping.items()}
    if isinstance(value, (list, tuple, set)):
        items = [_deep(item) for item in cast("Iterable[object]", value)]
        if isinstance(value, list):
            return items
        # a named tuple is made from an iterable by _make
        kind: type[Any] = type(cast(object, value))
        make: Callable[[list[Any]], Any] = getattr(kind, "_make", kind)
        return make(items)
    if is_dataclass(value) and not isinstance(value, type):
        return replace(value, **{f.name: _deep(getattr(value, f.name)) for f in fields(value) if f.init})
    return value  # cannot be copied: shared


def _as_message(message: str | AgentMessage) -> AgentMessage:
    return UserMessage([TextContent(message)]) if isinstance(message, str) else message


def _as_prompts(text: Prompt, images: Images | None) -> list[AgentMessage]:
    if isinstance(text, str):
        content: list[Content] = [TextContent(text)]
        for image in images or ():
            content.append(image if isinstance(image, ImageContent) else ImageContent(image[0], image[1]))
        return [UserMessage(content)]
    if images:
        raise TypeError("images= is only for text prompts; put ImageContent blocks into your messages instead")
    if isinstance(text, (UserMessage, AssistantMessage, ToolResultMessage, ExtensionMessage)):
        return [text]
    return list(text)


__all__ = ["Agent"]
