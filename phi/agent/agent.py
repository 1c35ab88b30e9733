"""The Agent: the stateful, application-facing wrapper around the loop (SPEC §4, seed 001 §6).

An Agent owns a conversation, its tools and settings, the steering and follow-up queues, and its
identity (agent id, session id, loop counters). ``prompt`` starts a run on a worker thread and
returns an :class:`~phi.concurrency.channel.EventStream` at once; ``run`` is the blocking convenience. Both give
an :class:`AgentResult`. The new messages of a run join the history when the run ends, whether or
not anyone read its events — and before anyone hears of it: by the time ``AgentEnd`` reaches a
subscriber (or ``after_loop`` runs) the history is updated and the agent is idle, so a new prompt may
start right there (SPEC AGENT-1).

    agent = Agent(provider=ScriptedProvider(["Hello!"]), system_prompt="Be brief.")
    for event in agent.prompt("Hi"):
        ...
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from ..concurrency.cancel import CancellationToken
from ..concurrency.queues import MessageQueue
from ..errors import AlreadyRunning, ConfigError, DecodeError
from ..ids import random_uuid
from ..log import get_logger
from ..loop.config import AgentContext, AgentLoopConfig, ToolExecution
from ..providers.model_config import API_MOCK, ModelConfig
from ..types import (
    AgentMessage,
    AssistantMessage,
    Content,
    ContinuationKind,
    ImageContent,
    QueueMode,
    RunOutcome,
    StopReason,
    TextContent,
    ThinkingLevel,
    Usage,
    UserMessage,
    message_to_json,
    messages_from_json,
)
from .recording import AgentRecording
from .result import AgentResult
from .settings import AgentSettings
from .snapshot import AgentSnapshot
from .sources import AgentToolSources

if TYPE_CHECKING:
    from ..concurrency.channel import EventStream
    from ..evaluation.model import ParallelLoopResult
    from ..events import AgentEnd

# The run machinery (phi.loop, phi.events, phi.concurrency.channel, phi.loop.tool_execution) is imported by the first run,
# not here, so that ``import phi; phi.Agent`` costs only what making an Agent needs (issue 11).

log = get_logger(__name__)

# Settings that go straight into AgentLoopConfig (each also has a chainable ``with_<name>``).
_LOOP_SETTINGS = tuple(f.name for f in fields(AgentLoopConfig) if f.name not in (
    "get_steering_messages", "get_follow_up_messages", "put_back_steering_messages", "put_back_follow_up_messages"))


class Agent(AgentSettings, AgentToolSources, AgentRecording):
    """A conversation with a model, its tools and its settings. See the module docstring.

    ``model`` picks the protocol from the model name (``"claude-..."``, ``"gpt-..."``,
    ``"gemini-..."`` or ``"<provider>:<model>"``, see :mod:`phi.providers.model_names`);
    ``model_config`` gives it in full; ``provider=`` (e.g. a ScriptedProvider) overrides both.
    Every :class:`~phi.loop.config.AgentLoopConfig` setting is also a keyword argument here and a
    ``with_<setting>`` method (:class:`~phi.agent.settings.AgentSettings`).
    """

    def __init__(self, *, system_prompt: str = "", model: str | None = None, api_key: str | None = None,
                 model_config: ModelConfig | None = None, tools: Iterable[Any] = (),
                 messages: Iterable[AgentMessage] = (), steering_mode: QueueMode = QueueMode.ONE_AT_A_TIME,
                 follow_up_mode: QueueMode = QueueMode.ONE_AT_A_TIME, **settings: Any) -> None:
        unknown = set(settings) - set(_LOOP_SETTINGS)
        if unknown:
            raise TypeError(f"Agent() got unknown settings {sorted(unknown)}; known: {sorted(_LOOP_SETTINGS)}")
        if model_config is None:
            if model is None:
                model_config = ModelConfig.mock()
            else:
                from ..providers.model_names import model_config_for

                model_config = model_config_for(model)
        elif model is not None:
            model_config = replace(model_config, id=model)
        if api_key is not None:
            model_config = replace(model_config, api_key=api_key)
        self.system_prompt = system_prompt
        self.tools: list[Any] = list(tools)
        self._messages: list[AgentMessage] = list(messages)
        self.config = AgentLoopConfig(model_config=model_config, **settings)
        self.steering_queue = MessageQueue(steering_mode)
        self.follow_up_queue = MessageQueue(follow_up_mode)
        self.agent_id = random_uuid()
        self.session_id = random_uuid()
        self.loop_counters: dict[str, int] = {}
        self.last_loop_id: str | None = None
        self.last_active_at: float | None = None
        self._subscribers: tuple[Callable[[Any], None], ...] = ()  # replaced, never changed in place
        self._lock = threading.Lock()
        self._cancel: CancellationToken | None = None
        self._worker: threading.Thread | None = None
        self._generation = 0  # bumped by reset(): a run started before it merges nothing
        self._idle = threading.Event()
        self._idle.set()
        self._sources_init()
        self._recording_init()

    def __repr__(self) -> str:
        return (f"Agent(agent_id={self.agent_id!r}, model={self.config.model_config.id!r}, "
                f"tools={[t.name for t in self.tools]}, messages={len(self._messages)}, streaming={self.is_streaming})")

    # ----------------------------------------------------------------- state

    @property
    def messages(self) -> list[AgentMessage]:
        """The conversation. While a run is active it is the history as the run started; the run's
        new messages join it when the run ends."""
        return self._messages

    @messages.setter
    def messages(self, messages: Iterable[AgentMessage]) -> None:
        self._refuse_while_running("replace the messages")
        self._messages = list(messages)

    @property
    def model_config(self) -> ModelConfig:
        return self.config.model_config

    @property
    def is_streaming(self) -> bool:
        return not self._idle.is_set()

    def _refuse_while_running(self, what: str) -> None:
        if self.is_streaming:
            raise AlreadyRunning(f"cannot {what} while a run is active; abort() and wait_for_idle() first, "
                                 "or reset() to drop the run and the conversation")

    # ----------------------------------------------------------------- settings

    def with_system_prompt(self, text: str) -> Agent:
        self.system_prompt = text
        return self

    def with_tools(self, tools: Iterable[Any]) -> Agent:
        self.tools = list(tools)
        return self

    def with_tool(self, tool: Any) -> Agent:
        self.tools.append(tool)
        return self

    def with_model(self, model: str) -> Agent:
        """Another model of the same protocol and service (only the model id changes)."""
        self.config.model_config = replace(self.config.model_config, id=model)
        return self

    def with_api_key(self, api_key: str) -> Agent:
        self.config.model_config = replace(self.config.model_config, api_key=api_key)
        return self

    def with_provider_override(self, provider: Any) -> Agent:
        """Seed 001 name of :meth:`with_provider`."""
        return self.with_provider(provider)

    def with_steering_mode(self, mode: QueueMode) -> Agent:
        self.steering_queue.mode = QueueMode(mode)
        return self

    def with_follow_up_mode(self, mode: QueueMode) -> Agent:
        self.follow_up_queue.mode = QueueMode(mode)
        return self

    def with_input_filter(self, flt: Any) -> Agent:
        self.config.input_filters = [*self.config.input_filters, flt]
        return self

    # ----------------------------------------------------------------- queues

    def steer(self, message: str | AgentMessage) -> None:
        """Queue a message to inject between tool executions of the current run."""
        self.steering_queue.push(_as_message(message))

    def follow_up(self, message: str | AgentMessage) -> None:
        """Queue a message to process when the run would otherwise stop."""
        self.follow_up_queue.push(_as_message(message))

    def clear_steering(self) -> None:
        self.steering_queue.clear()

    def clear_follow_up(self) -> None:
        self.follow_up_queue.clear()

    def clear_queues(self) -> None:
        self.clear_steering()
        self.clear_follow_up()

    def has_queued_messages(self) -> bool:
        return bool(self.steering_queue) or bool(self.follow_up_queue)

    # ----------------------------------------------------------------- observing

    def subscribe(self, callback: Callable[[Any], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event of every run, synchronously, in order.

        Returns a function that unsubscribes. A callback may call ``abort()``, ``steer()``, start the
        next prompt on ``AgentEnd``, ... (SPEC LOOP-19, AGENT-1).
        """
        with self._lock:
            self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            with self._lock:
                found = [c for c in self._subscribers if c is not callback]
                if len(found) < len(self._subscribers):
                    self._subscribers = tuple(found)

        return unsubscribe

    def unsubscribe_all(self) -> None:
        """Remove every subscriber."""
        with self._lock:
            self._subscribers = ()

    # ----------------------------------------------------------------- running

    def prompt(self, text: str | AgentMessage | Sequence[AgentMessage],
               images: Sequence[ImageContent | tuple[str, str]] | None = None) -> EventStream[AgentResult]:
        """Start a run with a new prompt; returns its live event stream at once."""
        return self.prompt_with_sender(text, None, images)

    def prompt_with_sender(self, text: str | AgentMessage | Sequence[AgentMessage], sender: Any,
                           images: Sequence[ImageContent | tuple[str, str]] | None = None) -> EventStream[AgentResult]:
        """Like ``prompt``, but events go to ``sender`` (an EventChannel or callable) instead."""
        from ..loop.run import agent_loop

        prompts = _as_prompts(text, images)
        return self._start(lambda ctx, cfg, sink, cancel: agent_loop(prompts, ctx, cfg, sink, cancel), None, sender)

    def continue_loop(self, kind: ContinuationKind | str | None = None, sender: Any = None) -> EventStream[AgentResult]:
        """Resume from the current history (``default``, ``rerun`` or ``branch``).

        Raises :class:`~phi.errors.InvalidContinue` at once if the history cannot be continued.
        """
        if isinstance(kind, str):
            kind = {"default": ContinuationKind.default, "rerun": ContinuationKind.rerun,
                    "branch": ContinuationKind.branch}[kind]()
        kind = kind or ContinuationKind.default()
        from ..loop.run import agent_loop_continue, check_can_continue

        check_can_continue(AgentContext(messages=self._messages, agent_id=self.agent_id, session_id=self.session_id))
        return self._start(lambda ctx, cfg, sink, cancel: agent_loop_continue(ctx, cfg, sink, cancel), kind, sender)

    def resume(self, kind: ContinuationKind | str = "rerun", sender: Any = None) -> EventStream[AgentResult]:
        """Resume an interrupted run (aborted, failed): the trailing reply that did not finish — and a
        tool step cut short, with its results — is dropped, then the run continues as ``kind``
        (``rerun`` or ``branch``), its ``parent_loop_id`` the interrupted run's loop id (SPEC AGENT-6)."""
        from .snapshot import resume_point

        self._refuse_while_running("resume")
        keep = resume_point(self._messages)
        self._messages = self._messages[:keep]
        return self.continue_loop(kind, sender)

    def send(self, message: str | AgentMessage | None = None, sender: Any = None) -> EventStream[AgentResult]:
        """Start whichever run the history calls for (SPEC AGENT-7): with a message, a new prompt;
        without one, a continuation when the history awaits a reply (it ends with a user message or
        tool results), else :class:`~phi.errors.InvalidContinue`."""
        if message is not None:
            return self.prompt_with_sender(message, sender)
        return self.continue_loop(None, sender)

    def run(self, text: str | AgentMessage | Sequence[AgentMessage] | None = None,
            images: Sequence[ImageContent | tuple[str, str]] | None = None, timeout: float | None = None) -> AgentResult:
        """Blocking: run a prompt (or continue, with ``text=None``) and return its AgentResult.

        With ``timeout`` (seconds) the run is aborted at the deadline; the result then says
        ``timed_out`` (and ``outcome`` aborted). An exception from the run is raised here unchanged.
        """
        # nobody reads this run's events: they are dropped instead of queued until it ends
        stream = self.continue_loop(sender=_drop) if text is None else self.prompt_with_sender(text, _drop, images)
        if timeout is None or stream.wait(timeout):
            return stream.result()
        stream.abort()
        grace = self.config.tool_abort_grace_ms / 1000.0
        result = stream.result(timeout=grace + 5.0)  # aborting ends a run within the tool grace period
        result.timed_out = True
        return result

    def prompt_parallel(self, text: str | AgentMessage | Sequence[AgentMessage] | None,
                        variants: Sequence[AgentLoopConfig | dict[str, Any]], strategy: Any = None,
                        images: Sequence[ImageContent | tuple[str, str]] | None = None,
                        sender: Any = None) -> EventStream[ParallelLoopResult]:
        """Run the prompt (or, with ``text=None``, a continuation) under several configurations at
        once and keep the best answer (SPEC AGENT-8). ``variants``: configs, or mappings of settings
        that replace the agent's own (``{"model_config": ..., "thinking_level": "high"}``);
        ``strategy``: a :mod:`phi.evaluation` strategy (default: the first branch that succeeded).
        The history gains only the winner's messages; ``.result()`` is the ParallelLoopResult."""
        from ..evaluation.parallel import agent_loop_parallel, branch_configs
        from ..evaluation.strategies import PickFirstEvaluation

        configs = branch_configs(self.config, variants)
        chosen = strategy if strategy is not None else PickFirstEvaluation()
        prompts = [] if text is None else _as_prompts(text, images)
        branch_point = self.last_loop_id  # a continuation's branches descend from the last run
        if not prompts:
            from ..loop.run import check_can_continue

            check_can_continue(AgentContext(messages=self._messages, agent_id=self.agent_id,
                                            session_id=self.session_id))

        def body(ctx: AgentContext, cfg: Any, sink: Any, cancel: CancellationToken, loop_ids: list[str]) -> Any:
            ctx.loop_id = None if prompts else branch_point
            return agent_loop_parallel(prompts, ctx, configs, chosen, sink, cancel, loop_ids=loop_ids)

        return self._start(body, None, sender, parallel=configs)

    def run_parallel(self, text: str | AgentMessage | Sequence[AgentMessage] | None,
                     variants: Sequence[AgentLoopConfig | dict[str, Any]], strategy: Any = None,
                     images: Sequence[ImageContent | tuple[str, str]] | None = None,
                     timeout: float | None = None) -> ParallelLoopResult:
        """Blocking :meth:`prompt_parallel`; with ``timeout`` every branch is aborted at the deadline."""
        stream = self.prompt_parallel(text, variants, strategy, images, sender=_drop)
        if timeout is not None and not stream.wait(timeout):
            stream.abort()
        return stream.result()

    def run_structured(self, prompt: str, schema: Any, max_retries: int = 2) -> Any:
        """Ask for an answer matching ``schema`` (a JSON Schema dict, a dataclass or a TypedDict).

        Returns the validated value (an instance for dataclasses). Raises
        :class:`~phi.errors.StructuredOutputFailed` after ``max_retries`` invalid answers.
        """
        from .structured import run_structured

        return run_structured(self, prompt, schema, max_retries)

    def abort(self) -> None:
        """Cancel the current run: safe from any thread and from any callback, hook or tool."""
        cancel = self._cancel
        if cancel is not None:
            cancel.cancel()

    def wait_for_idle(self, timeout: float | None = None) -> bool:
        """Block until no run is active; returns False if ``timeout`` passed first."""
        return self._idle.wait(timeout)

    def reset(self) -> None:
        """Abort any run and forget the conversation and the queued messages (identity stays).

        Takes effect at once: a run still winding down merges nothing into the history. Outside the
        run's own callbacks, waits (up to 5 s) for that run to end.
        """
        with self._lock:
            self._generation += 1
            self._messages = []
        self.abort()
        self.clear_queues()
        if threading.current_thread() is not self._worker:
            self.wait_for_idle(5.0)

    # ----------------------------------------------------------------- identity (REQ-187..193, 215)

    def next_loop_id(self, config: AgentLoopConfig | None = None) -> str:
        """The next loop id of this agent's session for ``config`` (default: the agent's own)."""
        from ..loop.run import config_segment

        segment = config_segment(config or self.config)
        key = f"{self.session_id}.{segment}"
        self.loop_counters[key] = self.loop_counters.get(key, 0) + 1
        return f"{key}.{self.loop_counters[key]}"

    def new_session(self) -> str:
        """Start a new session id at once; loop counters and last_loop_id are cleared."""
        self.session_id = random_uuid()
        self.loop_counters = {}
        self.last_loop_id = None
        return self.session_id

    def check_and_rotate(self, threshold: float) -> str | None:
        """Rotate to a new session if idle for more than ``threshold`` seconds since the last run."""
        if self.last_active_at is not None and time.time() - self.last_active_at > threshold:
            return self.new_session()
        return None

    # ----------------------------------------------------------------- persistence

    def save_messages(self) -> str:
        """The history as a JSON string (SPEC DATA-6)."""
        return json.dumps([message_to_json(m) for m in self._messages], ensure_ascii=False)

    def restore_messages(self, text: str) -> None:
        """Replace the history with one saved by ``save_messages`` (refused while a run is active).
        Bad JSON raises DecodeError and leaves the history unchanged."""
        self._refuse_while_running("restore messages")
        try:
            data = json.loads(text)
        except (TypeError, ValueError) as error:
            raise DecodeError("messages", text if isinstance(text, str) else type(text).__name__,
                              f"a JSON list of messages ({error})") from None
        self._messages = messages_from_json(data)

    def checkpoint(self) -> AgentSnapshot:
        """A secret-free snapshot of the conversation and identity; ``.save(path)`` keeps it on disk."""
        model = self.config.model_config
        return AgentSnapshot([message_to_json(m) for m in self._messages], self.agent_id, self.session_id,
                             dict(self.loop_counters), self.last_loop_id, system_prompt=self.system_prompt,
                             model={"id": model.id, "api": model.api, "provider": model.provider},
                             config_id=self.config.config_id)

    def restore(self, snapshot: AgentSnapshot) -> None:
        """Return to a snapshot: its messages, identity and system prompt (refused while a run is
        active). The model and its keys stay as this agent has them (SPEC AGENT-6)."""
        self._refuse_while_running("restore a checkpoint")
        self._messages = messages_from_json(snapshot.messages)
        self.agent_id, self.session_id = snapshot.agent_id, snapshot.session_id
        self.loop_counters = dict(snapshot.loop_counters)
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

    def _start(self, body: Callable[..., Any], kind: ContinuationKind | None, sender: Any,
               parallel: Sequence[AgentLoopConfig] | None = None) -> EventStream[Any]:
        """Start a run on a worker thread. ``parallel``: the branch configs of a parallel run, whose
        history is settled when ``ParallelLoopEnd`` names the winner (SPEC AGENT-1, AGENT-8)."""
        self._check_provider()
        system_prompt, tools = self._run_system_prompt(), self._recorded_tools(self._run_tools())
        with self._lock:
            if not self._idle.is_set():
                raise AlreadyRunning("a run is already in progress: use steer() or follow_up() to add messages, "
                                     "or abort() and wait_for_idle() first")
            self._idle.clear()
            self._cancel = cancel = CancellationToken()
            generation = self._generation
            context = AgentContext(system_prompt, list(self._messages), tools, self.agent_id, self.session_id,
                                   None if parallel else self.next_loop_id(),
                                   self.last_loop_id if kind is not None else None, kind)
            loop_ids = [self.next_loop_id(c) for c in parallel] if parallel else None
        self.last_active_at = time.time()
        self.last_loop_id = context.loop_id
        config = replace(self.config, get_steering_messages=self.steering_queue.drain,
                         put_back_steering_messages=self.steering_queue.put_back,
                         get_follow_up_messages=self.follow_up_queue.drain,
                         put_back_follow_up_messages=self.follow_up_queue.put_back)
        from ..concurrency.channel import EventChannel, EventStream
        from ..events import AgentEnd, ParallelLoopEnd

        channel = EventChannel()
        stream: EventStream[Any] = EventStream(channel, threading.Event(), abort=cancel.cancel)
        forward = (sender.send if hasattr(sender, "send") else sender) if sender is not None else channel.send
        ends: dict[str, AgentEnd] = {}
        settled = threading.Event()
        base = list(context.messages)

        def settle(messages: list[AgentMessage] | None = None, last_loop_id: str | None = None) -> None:
            """The run is over: merge its history and go idle (once, before its end is heard)."""
            if settled.is_set():
                return
            settled.set()
            with self._lock:
                if self._generation == generation:
                    self._messages = list(context.messages) if messages is None else messages
                    if last_loop_id is not None:
                        self.last_loop_id = last_loop_id
                self._cancel = None
                self._worker = None
                self._idle.set()

        def sink(event: Any) -> None:
            kind = type(event)
            if kind is AgentEnd:
                ends.setdefault(event.loop_id, event)
                if parallel is None:
                    settle()
            elif kind is ParallelLoopEnd:
                winner = ends.get(event.selected_loop_id)
                settle([*base, *winner.messages] if winner is not None else base, event.selected_loop_id)
            for callback in self._subscribers:  # a tuple: subscribing meanwhile cannot disturb this loop
                callback(event)
            forward(event)

        def work() -> None:
            result, error = None, None
            try:
                if parallel is None:
                    body(context, config, sink, cancel)
                    result = AgentResult.of(ends[context.loop_id])  # type: ignore[index]
                else:
                    result = body(context, config, sink, cancel, loop_ids)
            except BaseException as exc:  # re-raised to the consumer by EventStream
                error = exc
                log.debug("run %s raised", context.loop_id, exc_info=exc)
            finally:
                settle(base if parallel else None)
                if error is not None:
                    kept = [] if parallel else context.messages[len(base):]
                    self._record_raised_run(loop_ids or [context.loop_id], kept)
                self._save_sessions()
                stream._finish(result, error)

        worker = threading.Thread(target=work, name=f"phi-agent-{context.loop_id or loop_ids[0]}", daemon=True)  # type: ignore[index]
        with self._lock:
            self._worker = worker
        worker.start()
        return stream

def _drop(event: Any) -> None:
    """The sink of a run whose events nobody reads (``Agent.run``)."""


def _as_message(message: str | AgentMessage) -> AgentMessage:
    return UserMessage([TextContent(message)]) if isinstance(message, str) else message


def _as_prompts(text: Any, images: Sequence[ImageContent | tuple[str, str]] | None) -> list[AgentMessage]:
    if isinstance(text, str):
        content: list[Content] = [TextContent(text)]
        for image in images or ():
            content.append(image if isinstance(image, ImageContent) else ImageContent(image[0], image[1]))
        return [UserMessage(content)]
    if images:
        raise TypeError("images= is only for text prompts; put ImageContent blocks into your messages instead")
    if isinstance(text, (list, tuple)):
        return list(text)
    return [text]


__all__ = ["Agent"]
