"""SPEC §13.2 — sessions: what every run of an agent did, as a navigable tree, and where to keep it
(seed 000 Milestone 4.11).

Not imported by ``import phi``; ``import phi.session`` loads the model and the recorder (the SQLite
module only when a :class:`SqliteStore` is made). Guide: docs/sessions.md.

Data (``phi.session.model``; JSON in ``phi.session.codec``)
    Session(session_id, agent_id, created_at, last_active_at, formation, parent_spawn_ref, loops)
      .root_loops() .children_of(id) .parallel_siblings(id) .get_loop(id) .total_usage()
      .conversation(at=loop_id) .latest_loop()
    LoopRecord, LoopStatus, LoopConfigSnapshot, LoopEvent, ChildLoopRef, SpawnRef,
    ParallelGroupRecord, StartingHistory; formations Explicit, FirstLoop, InactivityTimeout

Recording (``phi.session.recorder``)
    SessionRecorder(SessionRecorderConfig(formation_policy, keep_events, include_streaming_events))
      .on_event(event) .flush() .flush_changes() .drain() .finalize() .sessions() .get_session(id)
      .get_loop(id) .continue_session(session) .branch_from(loop_id) -> BranchPoint .note_history(...)
    PerSessionId(), InactivityTimeoutPolicy(threshold_secs)

Storage (``phi.session.store``)
    SessionStore protocol: save (appends), load, list_ids, delete, load_for_agent
    JsonDirStore(directory), SqliteStore(path); errors SessionError, NotFound, CorruptSession,
    InvalidSessionId, SessionConflict, UnencodableSession; ``claim`` (optional) for two writers
    dangling_links(store, session) -> [DanglingLink]: links to sessions or loops the store lacks
"""

from __future__ import annotations

from .errors import (
    CorruptSession,
    InvalidSessionId,
    NotFound,
    SessionConflict,
    SessionError,
    UnencodableSession,
)
from .history import BranchPoint
from .json_store import JsonDirStore
from .links import DanglingLink, dangling_links
from .model import (
    ChildLoopRef,
    Explicit,
    FirstLoop,
    InactivityTimeout,
    LoopConfigSnapshot,
    LoopEvent,
    LoopRecord,
    LoopStatus,
    ParallelGroupRecord,
    Session,
    SessionFormation,
    SpawnRef,
    StartingHistory,
)
from .recorder import (
    FormationPolicy,
    InactivityTimeoutPolicy,
    PerSessionId,
    SessionRecorder,
    SessionRecorderConfig,
)
from .sqlite_store import SqliteStore
from .store import SessionStore, default_sessions_dir

__all__ = [
    "BranchPoint",
    "ChildLoopRef",
    "CorruptSession",
    "DanglingLink",
    "Explicit",
    "FirstLoop",
    "FormationPolicy",
    "InactivityTimeout",
    "InactivityTimeoutPolicy",
    "InvalidSessionId",
    "JsonDirStore",
    "LoopConfigSnapshot",
    "LoopEvent",
    "LoopRecord",
    "LoopStatus",
    "NotFound",
    "ParallelGroupRecord",
    "PerSessionId",
    "Session",
    "SessionConflict",
    "SessionError",
    "SessionFormation",
    "SessionRecorder",
    "SessionRecorderConfig",
    "SessionStore",
    "SpawnRef",
    "SqliteStore",
    "StartingHistory",
    "UnencodableSession",
    "dangling_links",
    "default_sessions_dir",
]
