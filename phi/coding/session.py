"""The coding session (SPEC §14 CODE-1, CODE-3, CODE-10; seed 004 §2): a provider profile, an execution
environment and the core loop.

    session = Session(create_openai_profile("gpt-5.2-codex"), LocalExecutionEnvironment("/repo"))
    result = session.submit("Add a --verbose flag")            # blocking
    for event in session.submit_stream("Now run the tests"):   # live SessionEvents
        print(event.kind, event.data)
    session.close()

(Not to be confused with :mod:`phi.session`, which *records* runs; this one *runs* a coding agent.)

There is no second agent loop here: a session drives a :class:`phi.agent.Agent`, whose runs are the
core loop (:mod:`phi.loop`). What the seed's ``process_input`` does is spread over that loop's
extension points: the system prompt and tools are set before each input; ``before_turn`` enforces
the round and turn limits (``TURN_LIMIT``); the session's tool adapters approve, run and truncate
each call (:mod:`phi.coding.pipeline`); a provider wrapper applies the current reasoning effort to
every model call (:mod:`phi.coding.provider_options`); and the core's events become session events
(:mod:`phi.coding.event_bridge`). Steering and follow-up messages use the core's queues. Who
listens, which queued messages are the session's and which threads work for it are kept in
:mod:`phi.coding.tracking`; how an input ended is worked out in :mod:`phi.coding.session_stream`.

Those parts never import this module: each names what it uses of a session as a small protocol
(:class:`~phi.coding.registry.ToolHost`, :class:`~phi.coding.event_bridge.BridgeHost`,
:class:`~phi.coding.subagents.SubAgentSession`) that :class:`Session` fulfils with its public
members, and the session hands them its private registers (message tags, working threads) and
callbacks (emitting an event, ending an input, making a child) when it builds them.

States (§2.3): ``submit`` moves IDLE or AWAITING_INPUT to PROCESSING; the input ends IDLE (or
AWAITING_INPUT when the model's final text asks a question), or CLOSED after an abort or an
unrecoverable error (authentication, context overflow). ``close`` from any state ends in CLOSED.

Shutdown (Appendix B): the run is cancelled (the model stream is closed, running commands get
SIGTERM and, 2 s later, SIGKILL), the children are closed, the session waits until the cancelled
commands are gone, then emits ``SESSION_END`` and is CLOSED; its tool session
(:class:`~phi.tools.tool_session.ToolSession`) is closed last: background commands end and the files
holding saved full outputs are removed. Events are delivered synchronously, so none is pending by then.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, cast

from ..agent.agent import Agent
from ..concurrency.queues import MessageQueue
from ..errors import AlreadyRunning, ConfigError
from ..events import AgentEnd
from ..ids import random_uuid
from ..log import get_logger
from ..loop.config import ToolExecution
from ..tools.environment import ExecutionEnvironment, LocalExecutionEnvironment, ReadOnlyEnvironment
from ..tools.tool_session import ToolSession
from ..types import AgentMessage, QueueMode, Usage, UserMessage
from .config import SessionClosed, SessionConfig, SessionState
from .event_bridge import EventBridge
from .events import EventKind, SessionEvent
from .history import SystemTurn, Turn
from .pipeline import SessionTool, offered_tools
from .profiles import ProviderProfile
from .provider_options import (
    SessionProvider,
    body_extras,
    resolve_provider,
    with_body_extras,
)
from .sandboxing import CommandSandbox, choose_sandbox
from .scoped_env import ScopedEnvironment
from .session_stream import SessionStream, SubmitResult, result_of_run
from .subagents import SubAgentManager
from .tracking import EventCallback, MessageTags, Subscribers, WorkingThreads

if TYPE_CHECKING:
    from ..agent.result import AgentResult
    from ..types import ToolDefinition
    from ..concurrency.channel import EventStream

log = get_logger(__name__)

#: How long a shutdown waits for cancelled commands to be killed (SIGTERM, 2 s, SIGKILL, reaping).
PROCESS_STOP_WAIT_S = 6.0
#: How long abort() waits for the run to wind down before finishing the shutdown itself.
ABORT_WAIT_S = 10.0


class _FollowUpQueue(MessageQueue):
    """The follow-up queue; taking a message starts a new input (the round count restarts)."""

    def __init__(self, on_take: Callable[[list[AgentMessage]], None]) -> None:
        super().__init__(QueueMode.ONE_AT_A_TIME)
        self._on_take = on_take

    def drain(self) -> list[AgentMessage]:
        taken = super().drain()
        if taken:
            self._on_take(taken)
        return taken


@dataclass
class _Prepared:
    """The system prompt :meth:`Session.prepare_tools` last built, when, and from what."""

    at: float  # time.monotonic() when it began
    recipe: tuple[object, ...]  # see Session._recipe
    env: ExecutionEnvironment  # kept alive: the recipe names it by id
    system_prompt: str


class Session:
    """A coding session (seed 004 §2.1). See the module docstring."""

    def __init__(self, profile: ProviderProfile, env: ExecutionEnvironment | None = None,
                 config: SessionConfig | None = None, *,
                 on_event: EventCallback | None = None, depth: int = 0,
                 parent: Session | None = None) -> None:
        self.id = random_uuid()
        self.profile = profile
        self.config = config if config is not None else SessionConfig()
        self.config.check()
        self.depth = depth
        self.parent = parent
        self.spawned_from: str | None = None  # the loop id of the spawn_agent call that started it
        # called with each child session before it starts (e.g. ``phi --otel`` traces children);
        # a child inherits them, so grandchildren are seen too
        self.child_observers: list[Callable[[Session], None]] = list(parent.child_observers) if parent else []
        if env is None:
            env = LocalExecutionEnvironment()
        self._owns_env = parent is None
        if self._owns_env:
            env.initialize()
        self.base_env: ExecutionEnvironment = env
        self.execution_env: ExecutionEnvironment = env
        #: what protects this session's commands (a child shares its parent's environment and sandbox)
        self.sandbox: CommandSandbox = parent.sandbox if parent is not None else choose_sandbox(env, self.config.sandbox)
        # what this session's tools share: the read-before-write record, saved outputs, background commands
        self.tool_session = ToolSession(require_read_before_write=self.config.require_read_before_write)
        self._read_only_env: ExecutionEnvironment | None = None
        self.state = SessionState.IDLE
        self.history: list[Turn] = []
        self.subagents = SubAgentManager(self, self._new_child)
        self.model_calls = 0  # model calls over the session (max_turns counts these)
        self.rounds = 0  # tool rounds of the current input
        self._subscribers = Subscribers()
        if on_event is not None:
            self._subscribers.add(on_event)
        self._lock = threading.RLock()
        self._tags = MessageTags()  # what each message the session queued is, for the event bridge
        self._workers = WorkingThreads()  # threads running this session's tool calls
        self._stream: SessionStream | None = None
        self._started = False
        self._closing: str | None = None
        self._shut = False
        self._closed = threading.Event()
        self._limit_hit = False
        inner = resolve_provider(profile.model_config, profile.provider)
        self._provider = SessionProvider(with_body_extras(inner, body_extras(profile.id, profile.options)),
                                         self.config.thinking_level)
        self._bridge = EventBridge(self, emit=self._emit, end_input=self._end_input, tags=self._tags,
                                   provider=self._provider)
        self.agent = Agent(model_config=profile.model_config, provider=self._provider,
                           steering_mode=QueueMode.ALL, before_turn=self._before_turn)
        self.agent.session_id = self.id
        self.agent.follow_up_queue = _FollowUpQueue(self._new_input_taken)
        self.system_prompt = ""
        self._prepared: _Prepared | None = None
        self.prepare_tools()

    def __repr__(self) -> str:
        return (f"Session(id={self.id!r}, profile={self.profile.id!r}, model={self.profile.model!r}, "
                f"state={self.state.value}, depth={self.depth})")

    # ----------------------------------------------------------------- observing

    def subscribe(self, callback: EventCallback, *, include_subagents: bool = False) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, in order. With ``include_subagents`` the events of
        this session's sub-agents come too (from their own threads). Returns an unsubscribe function."""
        return self._subscribers.add(callback, include_subagents)

    def _emit(self, kind: EventKind, data: dict[str, object]) -> None:
        event = SessionEvent(kind, self.id, data)
        self._deliver(event, own=True)
        stream = self._stream
        if stream is not None:
            stream.put(event)

    def _deliver(self, event: SessionEvent, own: bool) -> None:
        self._subscribers.deliver(event, own)
        if self.parent is not None:
            self.parent._deliver(event, own=False)

    # ----------------------------------------------------------------- input

    def submit(self, text: str, *, arrived_at: float | None = None) -> SubmitResult:
        """Process ``text`` until the model is done (or a limit, an abort, an error); blocking.
        ``arrived_at``: see :meth:`submit_stream`."""
        return self._submit(text, SessionStream(keep_events=False), arrived_at).result()

    def submit_stream(self, text: str, *, arrived_at: float | None = None) -> SessionStream:
        """Start processing ``text``; iterate the returned stream for its events (it ends when the
        input is done), then ``stream.result()`` gives the :class:`SubmitResult`.

        ``arrived_at``: when the input arrived (a ``time.monotonic()`` value). The tools and system
        prompt are prepared afresh for every input (:meth:`prepare_tools`) — unless they were prepared
        after that moment from the same tools and instructions, e.g. by the constructor for an input
        typed while the session was being made: what they read of the world (the git snapshot, the
        project documents) is then already as new as the input."""
        return self._submit(text, SessionStream(keep_events=True), arrived_at)

    def _submit(self, text: str, stream: SessionStream, arrived_at: float | None = None) -> SessionStream:
        # the str check stays: callers without a type checker may pass anything
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError("submit() needs a non-empty text")
        # checked, not trusted: callers without a type checker may pass anything
        given = cast(object, arrived_at)
        if given is not None and (isinstance(given, bool) or not isinstance(given, (int, float))
                                  or not math.isfinite(given)):
            raise ConfigError(f"submit(): arrived_at must be a time.monotonic() value, got {arrived_at!r}")
        self.config.check()
        with self._lock:
            self._refuse_if_closed()
            if self.state == SessionState.PROCESSING:
                raise AlreadyRunning("this session is processing an input: use steer() or follow_up() to add "
                                     "to it, or wait for it to finish")
            self.state = SessionState.PROCESSING
            self._stream = stream
            self.rounds = 0
            self._limit_hit = False
        try:
            self._start_session()
            message = UserMessage.from_text(text)
            self._tags.tag(message, "input")
            self._prepare(arrived_at)
            self.agent.config.thinking_level = self.config.thinking_level()
            run = self.agent.prompt(message, sender=self._bridge)
        except BaseException:
            with self._lock:
                self.state, self._stream = SessionState.IDLE, None
            raise
        threading.Thread(target=self._watch, args=(run, stream), name=f"phi-session-watch-{self.id[:8]}",
                         daemon=True).start()
        return stream

    def steer(self, text: str) -> None:
        """Inject ``text`` after the current tool round (or at the start of the next input)."""
        self._queue_message(text, "steering", self.agent.steer)

    def follow_up(self, text: str) -> None:
        """Process ``text`` as a new input once the current one is done."""
        self._queue_message(text, "follow_up", self.agent.follow_up)

    def _queue_message(self, text: str, tag: str, push: Callable[[AgentMessage], None]) -> None:
        with self._lock:
            self._refuse_if_closed()
        message = UserMessage.from_text(text)
        self._tags.tag(message, tag)
        push(message)

    def _refuse_if_closed(self) -> None:
        """Input is refused once the session is CLOSED or on its way there (an abort, a close or a fatal
        error is under way, e.g. when called from a callback of the shutdown itself)."""
        if self.state == SessionState.CLOSED or self._closing is not None:
            raise SessionClosed(f"session {self.id} is closed; start a new Session")

    def take_queued_input(self, *, steering: bool = True, follow_ups: bool = True) -> list[str]:
        """Remove and return the texts of queued steering and follow-up messages, steering first (for
        a caller that wants to submit them itself, e.g. a sub-agent handle after its input ended);
        ``steering=False`` or ``follow_ups=False`` leaves that kind queued."""
        taken = [*(self.agent.steering_queue.take_all() if steering else []),
                 *(self.agent.follow_up_queue.take_all() if follow_ups else [])]
        for message in taken:
            self._tags.untag(message)
        return [message.text for message in taken if isinstance(message, UserMessage)]

    def _new_input_taken(self, messages: list[AgentMessage]) -> None:
        self.rounds = 0  # a follow-up is a new input: max_tool_rounds_per_input counts afresh

    # ----------------------------------------------------------------- the run's hooks

    def prepare_tools(self) -> None:
        """Set up the tools offered for the next input and the system prompt built for them (§6.1)
        now: ``agent.tools`` and ``system_prompt`` then show them. Every input does this afresh (the
        git snapshot, project documents, ``plan_mode`` and ``user_instructions`` may have changed
        since the last one); within an input they stay the same, as does a prompt cache. Call it
        between inputs to see what the next one will offer."""
        self._prepare(None)

    def _prepare(self, arrived_at: float | None) -> None:
        """:meth:`prepare_tools`; the system prompt last built is kept when its building began after
        ``arrived_at`` from the same recipe (what it read of the world is as new as the input)."""
        started = time.monotonic()  # what the prompt reads of the world is at least this new
        env = self._env_for_mode()
        offered = offered_tools(self.profile.tool_registry, self.config, self.depth)
        definitions = [t.definition for t in offered]
        recipe = self._recipe(env, definitions)
        prepared = self._prepared
        if arrived_at is None or prepared is None or prepared.at < arrived_at or prepared.recipe != recipe:
            prompt = self.profile.build_system_prompt(env, tools=definitions,
                                                      user_override=self.config.user_instructions)
            prepared = self._prepared = _Prepared(started, recipe, env, prompt)
        self.execution_env = env
        self.system_prompt = self.agent.system_prompt = prepared.system_prompt
        self.agent.tools = [SessionTool(t, self, self._workers) for t in offered]  # always the tools as they are
        parallel = self.profile.supports_parallel_tool_calls
        self.agent.config.tool_execution = ToolExecution.PARALLEL if parallel else ToolExecution.SEQUENTIAL

    def _recipe(self, env: ExecutionEnvironment, definitions: list[ToolDefinition]) -> tuple[object, ...]:
        """Everything of the session the system prompt is made from (the git snapshot and the project
        documents aside, which are read from the world): the same recipe makes the same prompt."""
        profile = self.profile
        return (id(env), env.working_directory(), self.config.user_instructions, profile.id,
                profile.base_instructions, profile.model, profile.knowledge_cutoff,
                *((d.name, d.description) for d in definitions))

    def _env_for_mode(self) -> ExecutionEnvironment:
        """The environment tools get: in plan mode one that refuses writes and commands. Read per
        input, so ``config.plan_mode`` can be switched between inputs."""
        if not self.config.plan_mode:
            return self.base_env
        if self._read_only_env is None:
            # cast: the protocol's allowed_write_roots is a settable attribute, the wrapper's a property
            self._read_only_env = cast(ExecutionEnvironment, ReadOnlyEnvironment(self.base_env, allow_commands=False))
        return self._read_only_env

    def _before_turn(self, messages: list[AgentMessage], turn_index: int) -> bool:
        """Seed 004 §2.5 step 1: the round and turn limits, checked before every model call."""
        config = self.config
        if self.rounds >= config.max_tool_rounds_per_input:
            self._turn_limit(f"{self.rounds} tool rounds for this input (max_tool_rounds_per_input)",
                             round=self.rounds, limit=config.max_tool_rounds_per_input)
            return False
        if config.max_turns > 0 and self.model_calls >= config.max_turns:
            self._turn_limit(f"{self.model_calls} turns in this session (max_turns)", total_turns=self.model_calls,
                             limit=config.max_turns)
            return False
        return True

    def _turn_limit(self, reason: str, **data: object) -> None:
        self._limit_hit = True
        self.history.append(SystemTurn(f"Turn limit reached: {reason}"))
        self._emit(EventKind.TURN_LIMIT, data)

    def _new_child(self, working_dir: str | None, model: str | None, max_turns: int | None,
                   spawned_from: str | None) -> Session:
        """A sub-agent of this session (seed 004 §7.1; the :data:`~phi.coding.subagents.ChildFactory`
        of its manager): the same environment (scoped to ``working_dir`` if given) and profile (for
        ``model`` if another), its own copy of the settings with its own turn limit. Its observers
        have seen it; it has not started."""
        env = self.base_env if not working_dir else ScopedEnvironment(self.base_env, working_dir)
        profile = self.profile.with_model(model) if model and model != self.profile.model else self.profile
        config = replace(self.config, max_turns=max_turns or self.config.subagent_max_turns,
                         tool_output_limits=dict(self.config.tool_output_limits),
                         tool_line_limits=dict(self.config.tool_line_limits))
        child = Session(profile, env, config, depth=self.depth + 1, parent=self)
        child.spawned_from = spawned_from
        for observe in child.child_observers:
            try:
                observe(child)
            except Exception:  # an observer's failure does not stop the child
                log.exception("a child-session observer failed")
        return child

    # ----------------------------------------------------------------- the end of an input

    def _end_input(self, end: AgentEnd) -> None:
        """AgentEnd: the input is done (on the run's thread)."""
        result = result_of_run(end, self.state, self.rounds, self._limit_hit)
        stream: SessionStream | None = None  # taken below unless the session is closing (then _shutdown ends it)
        with self._lock:
            closing = self._closing or ("error" if self._bridge.fatal_error else None)
            if closing is None:
                self.state = SessionState.AWAITING_INPUT if result.outcome == "awaiting_input" else SessionState.IDLE
                stream, self._stream = self._stream, None
        if closing is not None:
            self._closing = closing
            self._shutdown(closing, result)
            return
        result.state = self.state
        if stream is not None:
            stream.finish(result)

    def _watch(self, run: EventStream[AgentResult], stream: SessionStream) -> None:
        """If the run raised (a bug, not a model failure), the input still ends, with that error."""
        try:
            run.result()
        except BaseException as error:
            log.error("session %s: the run raised %r", self.id, error)
            with self._lock:
                if self._stream is stream:
                    self._stream = None
                    self.state = SessionState.IDLE
            if not stream.done:
                stream.finish(SubmitResult("", "error", self.state, self.rounds, Usage(), str(error), []), error)

    # ----------------------------------------------------------------- abort, close, shutdown

    def abort(self) -> None:
        """Stop at once (seed 004 §2.8 item 4): cancel the run and the children, kill commands,
        then ``SESSION_END``; the session ends CLOSED. Safe from any thread and any callback."""
        self._stop("aborted")

    def close(self, *, wait: bool = True) -> None:
        """End the session (aborting an input in progress); idempotent. With ``wait=False`` it returns
        once the run is cancelled, and the run's end finishes the shutdown (as it does anyway when
        called from a thread working for this session, e.g. from one of its callbacks)."""
        self._stop("closed", wait)

    def _stop(self, reason: str, wait: bool = True) -> None:
        """Abort or close. Without ``wait`` (or when called from a thread working for this session or
        one of its children, e.g. from a callback) it returns once the run is cancelled, and the run's
        end finishes the shutdown: waiting there would wait for the caller itself."""
        with self._lock:
            if self._shut:
                running = False
            else:
                self._closing = self._closing or reason
                running = self.state == SessionState.PROCESSING
        wait = wait and not self.runs_on_thread(threading.get_ident())
        if self._shut:
            if wait:
                self._closed.wait(ABORT_WAIT_S)
            return
        self.subagents.abort_all()
        if not running:
            self._shutdown(self._closing or reason, None)
            return
        self.agent.abort()
        if not wait:
            return
        if not self._closed.wait(ABORT_WAIT_S):
            log.warning("session %s: the run did not end within %ss of the abort", self.id, ABORT_WAIT_S)
            self._shutdown(self._closing or reason, None)

    def runs_on_thread(self, ident: int) -> bool:
        """Whether thread ``ident`` (a ``threading.get_ident()``) runs this session's model loop or one
        of its tool calls, or those of one of its sub-agents: code on such a thread may be inside a
        callback that the run is waiting for, so it must not wait for the run to end."""
        if ident == self._bridge.run_thread or ident in self._workers:
            return True
        return any(handle.session.runs_on_thread(ident) for handle in self.subagents.handles())

    def _shutdown(self, reason: str, result: SubmitResult | None) -> None:
        with self._lock:
            if self._shut:
                return
            self._shut = True
        try:
            self.subagents.close_all()
            _wait_for_stopped_commands(PROCESS_STOP_WAIT_S)
            self._start_session()
            self._emit(EventKind.SESSION_END, {"state": SessionState.CLOSED.value, "reason": reason,
                                               "error": self._bridge.fatal_error, "turns": self.model_calls})
        finally:
            with self._lock:
                self.state = SessionState.CLOSED
                stream, self._stream = self._stream, None
            try:
                self.tool_session.close()  # background commands end, saved outputs are removed
            except Exception:
                log.exception("closing the tool session failed")
            if self._owns_env:
                try:
                    self.base_env.cleanup()
                except Exception:
                    log.exception("environment cleanup failed")
            self._closed.set()
            if stream is not None:
                outcome = "error" if reason == "error" else ("aborted" if reason == "aborted" else "closed")
                final = result or SubmitResult("", outcome, SessionState.CLOSED, self.rounds, Usage(), None, [])
                final.state, final.outcome = SessionState.CLOSED, outcome if result is None else result.outcome
                stream.finish(final)

    def _start_session(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        self._emit(EventKind.SESSION_START, {"profile": self.profile.id, "model": self.profile.model,
                                             "working_directory": self.execution_env.working_directory(),
                                             "depth": self.depth,
                                             "parent_session_id": self.parent.id if self.parent else None})

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _wait_for_stopped_commands(limit_s: float) -> None:
    """Wait until no cancelled command is still being terminated (SIGTERM → 2 s → SIGKILL)."""
    from ..tools.process import stopping_count

    deadline = time.monotonic() + limit_s
    while stopping_count() and time.monotonic() < deadline:
        time.sleep(0.02)


__all__ = ["Session", "SessionClosed", "SubmitResult", "SessionStream"]
