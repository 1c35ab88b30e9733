"""Recording an Agent's runs into sessions, and saving them (SPEC §13.2, SESS-7, SESS-8; seed 000
REQ-214..217).

``Agent(recorder=..., store=...)`` (or ``agent.record_sessions(...)``) subscribes
``recorder.on_event`` to the agent and hands it the events of every sub-agent the agent's runs start
(a :class:`~phi.subagent.SubAgentTool` reports its child's events to its ``on_event``, chained here
with the recorder's), so the recorded tree holds the children's sessions too.

Before each run: if the store holds the agent's session and the recorder does not (a new process
resuming it), the recorder continues the stored session and the agent's loop counters move past
its loop ids (:func:`continue_stored_session`); then the run's loop ids are claimed, with the
history the run starts from (:func:`claim_run`, SPEC SESS-6: no other writer takes them, and a run
continuing a point another writer continued becomes a branch). A run that raises is recorded as ended in an error
(:func:`record_raised_run`; a parallel branch that raised or whose worker was lost is, by the
recorder itself, from ``ParallelLoopEnd.unended``, SPEC SESS-3). After each run (:func:`save_sessions`) the
changes the run settled are saved — appended, at a cost that does not grow with the session. A
store that fails is logged, never the end of the run; a failed save is retried after the next run,
except a :class:`~phi.session.SessionConflict` (another process continued the same session from
the same point), which is logged with the loops that were not stored.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import TYPE_CHECKING, Callable, Collection, Sequence

from ..events import AgentEnd, AgentEvent
from ..log import get_logger
from ..loop.tool import AgentTool
from ..types import AgentMessage, AssistantMessage, ContinuationKind, RunOutcome, Usage
from .result import SessionFork

if TYPE_CHECKING:
    from ..session import Session, SessionRecorder, SessionStore
    from ..session.store import Claim

log = get_logger(__name__)

CLAIM_ATTEMPTS = 8  # saves a store without ``claim`` is tried with before a claim gives up


def recorded_tools(tools: list[AgentTool], recorder: SessionRecorder | None,
                   listeners: Sequence[Callable[[AgentEvent], None]] = ()) -> list[AgentTool]:
    """The run's tools, sub-agent tools reporting their children's events to the recorder too, and to
    the ``listeners`` (subscribers with ``include_subagents``, SPEC §17 OTEL-4)."""
    sinks = [*([recorder.on_event] if recorder is not None else []), *listeners]
    if not sinks:
        return tools
    from ..subagent import SubAgentTool

    report = sinks[0] if len(sinks) == 1 else _all(sinks)
    return [replace(t, on_event=_both(t.on_event, report)) if isinstance(t, SubAgentTool) else t for t in tools]


def record_raised_run(recorder: SessionRecorder | None, loop_ids: Sequence[str], messages: list[AgentMessage]) -> None:
    """A run that raised emits no ``AgentEnd`` (SPEC LOOP-5), so its loops would stay ``Running``
    and their sessions never settle: the recorder alone is told they ended in an error, with the
    messages the run kept (``messages``, for a single run). Subscribers see nothing extra."""
    if recorder is None:
        return
    usage = Usage()
    for message in messages:
        if isinstance(message, AssistantMessage):
            usage = usage + message.usage
    for loop_id in loop_ids:
        record = recorder.get_loop(loop_id)
        if record is not None and record.status.is_open:
            recorder.on_event(AgentEnd(loop_id, list(messages), usage, outcome=RunOutcome.ERROR))


def continue_stored_session(recorder: SessionRecorder | None, store: SessionStore | None,
                            session_id: str | None) -> dict[str, int]:
    """Before a run takes its loop ids: if only the store holds the agent's session (a new process
    resuming it), the recorder continues the stored session, and the loop counters to continue past
    its loop ids are returned — so a run never takes a loop id another process already stored
    (errors are logged: recording never stops a run)."""
    if recorder is None or store is None or not session_id or recorder.holds(session_id):
        return {}
    from ..session import NotFound
    from ..session.history import loop_counters

    try:
        stored = store.load(session_id)
    except NotFound:
        return {}  # a new session
    except Exception:
        log.error("could not load session %s to continue it; its new loops are still saved", session_id,
                  exc_info=True)
        return {}
    recorder.continue_session(stored)
    return loop_counters(stored)


def claim_run(recorder: SessionRecorder | None, store: SessionStore | None, session_id: str, agent_id: str,
              loop_ids: Sequence[str], history: Sequence[AgentMessage], after_loop_id: str | None,
              parent_loop_id: str | None = None, kind: ContinuationKind | None = None,
              own: Collection[str] = ()) -> tuple[dict[str, str], SessionFork | None]:
    """Before a run starts: its loop ids are claimed — held ``Pending`` by the recorder and, when
    the store can (``store.claim``, both of phi's stores), stored at once — so no other writer of the
    session, in this process or another, takes them (SPEC SESS-6, SESS-7). Returns the ids the run
    gets (proposed -> given: a number another writer took is replaced by the next free one) and, when
    the store already holds another continuation of the loop this run continues (one not among
    ``own``, the agent's own runs), the :class:`SessionFork`: this run becomes a branch beside it.
    Errors are logged: recording never stops a run."""
    if recorder is None:
        return {}, None
    try:
        held = recorder.loop_ids(session_id)
        names, claimed = recorder.claim(session_id, agent_id, loop_ids, history, after_loop_id, parent_loop_id, kind)
    except Exception:
        log.error("could not claim loop ids %s in the recorder", ", ".join(loop_ids), exc_info=True)
        prepare_recording(recorder, loop_ids, history, after_loop_id)
        return {}, None
    if store is None:
        return names, None
    from ..session.store import claimant

    who = claimant()
    for record in claimed.loops:  # the placeholders say who claimed them (SessionFork leaves dead claims out)
        record.extra["claimed_by"] = who
    try:
        stored = claim_in_store(store, claimed, held)
    except Exception:
        log.error("could not claim loop ids %s in session %s (the run is saved when it ends; another writer "
                  "continuing the same point meanwhile may take its loop id)", ", ".join(names.values()),
                  session_id, exc_info=True)
        return names, None
    recorder.rename_claimed({given: stored.loop_ids.get(given, given) for given in names.values()})
    final = {proposed: stored.loop_ids.get(given, given) for proposed, given in names.items()}
    first = final[loop_ids[0]] if loop_ids else ""
    others = tuple(i for i in stored.others.get(first, ()) if i not in own)
    if not others:
        return final, None
    follows = parent_loop_id if parent_loop_id is not None else after_loop_id
    fork = SessionFork(session_id, first, follows, others)
    log.info("%s", fork.describe())
    return final, fork


def claim_in_store(store: SessionStore, claimed: Session, avoid: Collection[str]) -> Claim:
    """``store.claim`` (or :func:`claim_by_saving` for a store without it), tried again once when
    it fails — a lock that timed out, a transient I/O error — and with the placeholders' values that
    are not JSON data replaced by markers (a history the application edited) when they cannot be
    written: a run whose loop id is not claimed could lose its turn to another writer."""
    from ..session import UnencodableSession
    from ..session.store import jsonable_session

    claim = getattr(store, "claim", None) or functools.partial(claim_by_saving, store)
    try:
        stored: Claim = claim(claimed, avoid)
        return stored
    except UnencodableSession:
        claimed = jsonable_session(claimed)
    except Exception:
        log.warning("claiming loop ids in session %s failed; trying again", claimed.session_id, exc_info=True)
    stored = claim(claimed, avoid)  # what this raises is the caller's to log
    return stored


def claim_by_saving(store: SessionStore, session: Session, avoid: Collection[str]) -> Claim:
    """``claim`` for a store that has none: load the session, pick free ids, save the placeholders;
    a save that meets another writer's (``SessionConflict``) is tried again past its ids. Safe as
    long as the store's ``save`` refuses a loop another writer stored (SPEC SESS-6)."""
    from ..session import NotFound, SessionConflict
    from ..session.model import replace_loops
    from ..session.store import Claim, claimant_dead, follows_of_record, plan_claim, renamed_loops

    tried = set(avoid)
    for _attempt in range(CLAIM_ATTEMPTS):
        try:
            stored = store.load(session.session_id).loops
        except NotFound:
            stored = []
        names = plan_claim([record.loop_id for record in session.loops], {r.loop_id for r in stored} | tried)
        try:
            store.save(replace_loops(session, renamed_loops(session.loops, names)))
        except SessionConflict:
            tried.update(names.values())
            continue
        others: dict[str, tuple[str, ...]] = {}
        for record in session.loops:
            follows = follows_of_record(record)
            if follows is not None:
                others[names[record.loop_id]] = tuple(
                    r.loop_id for r in stored if follows_of_record(r) == follows
                    and not (r.status.is_open and claimant_dead(r.extra.get("claimed_by"))))
        return Claim(names, others)
    raise SessionConflict(f"could not claim loop ids in session {session.session_id}: other writers kept taking "
                          "them", session_id=session.session_id)


def prepare_recording(recorder: SessionRecorder | None, loop_ids: Sequence[str], history: Sequence[AgentMessage],
                      after_loop_id: str | None) -> None:
    """Before a run starts: note the history it starts from (errors are logged)."""
    if recorder is None:
        return
    try:
        recorder.note_history(loop_ids, history, after_loop_id)
    except Exception:
        log.error("could not note the history of run %s", ", ".join(loop_ids), exc_info=True)


def save_sessions(recorder: SessionRecorder | None, store: SessionStore | None) -> None:
    """After a run: save what it changed in the sessions it settled, sub-agent sessions before the
    sessions that link to them (errors are logged: the run itself is over; a failed save is handed
    out again at the next one, with the sessions linking to it, so no stored link ever names a
    session that is not stored)."""
    if recorder is None or store is None:
        return
    from ..session import SessionConflict
    from ..session.store import children_first, spawned_sessions

    failed: set[str] = set()
    for session in children_first(recorder.flush_changes()):
        if spawned_sessions(session) & failed:
            failed.add(session.session_id)
            recorder.requeue(session)
            continue
        try:
            save_whole(store, session)
        except SessionConflict as conflict:
            failed.add(session.session_id)
            log.error("session %s not saved: %s", session.session_id, conflict)
        except Exception:
            failed.add(session.session_id)
            log.error("could not save session %s (retried after the next run)", session.session_id, exc_info=True)
            recorder.requeue(session)


def save_whole(store: SessionStore, session: Session) -> None:
    """``store.save(session)``; a session holding a value that is not JSON data (a tool's details, a
    metadata object) is saved with that value replaced by a marker naming its type, with a warning —
    never left unsaved, which would hold back every later run of it (SPEC SESS-7)."""
    from ..session import UnencodableSession
    from ..session.store import jsonable_session

    try:
        store.save(session)
    except UnencodableSession as error:
        log.warning("%s; saved with that value replaced by a marker", error)
        store.save(jsonable_session(session))


def _all(sinks: Sequence[Callable[[AgentEvent], None]]) -> Callable[[AgentEvent], None]:
    def every(event: AgentEvent) -> None:
        for sink in sinks:
            sink(event)

    return every


def _both(first: Callable[[AgentEvent], None] | None,
          second: Callable[[AgentEvent], None]) -> Callable[[AgentEvent], None]:
    if first is None:
        return second

    def both(event: AgentEvent) -> None:
        first(event)
        second(event)

    return both
