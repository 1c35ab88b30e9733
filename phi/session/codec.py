"""JSON form of the session model, in phi-core's field names (seed 001 §4 "Session / LoopRecord").

Shapes (snake_case, like phi-core's serde output)::

    Session    {"session_id", "agent_id", "created_at", "last_active_at", "formation",
                "parent_spawn_ref": SpawnRef | null, "loops": [LoopRecord]}
    formation  {"FirstLoop": {"timestamp"}} | {"Explicit": {"timestamp"}}
               | {"InactivityTimeout": {"threshold_secs", "previous_session_id", "timestamp"}}
    LoopRecord {"loop_id", "session_id", "agent_id", "parent_loop_id", "continuation_kind",
                "started_at", "ended_at", "status", "rejection", "config", "messages", "usage",
                "metadata", "events": [{"sequence", "event"}], "children_loop_ids",
                "child_loop_refs", "parallel_group"}

Timestamps are RFC 3339 UTC strings with microseconds (``2026-03-22T10:00:00.123456Z``); reading
also accepts other offsets, up to nine decimals (phi-core writes nanoseconds) and plain unix
seconds. Messages use SPEC DATA-6, usage DATA-5, ``continuation_kind`` the shape of
``ContinuationKind.to_json``. phi adds two optional loop keys, written only when set:
``"history": {"after_loop_id", "kept", "added": [messages]}`` and ``"evaluates": [loop ids]``.

Decoding is strict (SPEC DATA-7, §13.2 SESS-5): every key listed above is required (``null`` where
the model allows None) and a missing one is a :class:`~phi.errors.DecodeError` naming its path
(``session.loops[3].messages[1].stopReason``); messages are read by
:mod:`phi.session.message_codec`. Nothing is rewritten: keys this module does not know are kept
(in ``extra``, or in the record's ``preserved`` parts for messages, usage, the starting history and
the ``Rerun``/``Branch`` payload, whose ``tag`` stays absent when it was) and written back, and so are
timestamps phi would write differently, so a file written by phi-core or a newer phi loses nothing
when phi saves it again.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Callable, TypeVar

from ..errors import DecodeError
from ..json_values import is_array, is_object
from ..types import ContinuationKind, Usage, message_to_json
from .message_codec import messages_from_json, usage_from_json
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
    exact_time,
)
from .preserve import Overlay, Preserved, apply_overlay, overlay_of, raw_time

T = TypeVar("T")

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_RFC3339 = re.compile(
    r"(\d{4})-(\d\d)-(\d\d)[Tt ](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):(\d\d))\Z"
)

# --------------------------------------------------------------------------- time


def format_time(seconds: float) -> str:
    """Unix seconds as RFC 3339 UTC with microseconds; exact for values held by ``exact_time``."""
    micros = round(seconds * 1_000_000)
    moment = _EPOCH + _dt.timedelta(microseconds=micros)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{moment.microsecond:06d}Z"


def parse_time(value: object, path: str) -> float:
    """An RFC 3339 string (or unix seconds) as unix seconds held to microseconds."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return exact_time(value)
        except ValueError:
            raise DecodeError(path, value, "an RFC 3339 timestamp") from None
    match = _RFC3339.match(value) if isinstance(value, str) else None
    if match is None:
        raise DecodeError(path, value, "an RFC 3339 timestamp such as 2026-03-22T10:00:00.000000Z")
    year, month, day, hour, minute, second, fraction, zulu, sign, off_h, off_m = match.groups()
    try:
        moment = _dt.datetime(int(year), int(month), int(day), int(hour), int(minute), int(second),
                              tzinfo=_dt.timezone.utc)
    except ValueError:
        raise DecodeError(path, value, "an RFC 3339 timestamp (a real date and time)") from None
    micros = (moment - _EPOCH) // _dt.timedelta(microseconds=1)
    if fraction:
        micros += int(fraction.ljust(9, "0")[:6])  # nanoseconds beyond the sixth digit are dropped
    if not zulu:
        offset = (int(off_h) * 60 + int(off_m)) * 60_000_000
        micros += -offset if sign == "+" else offset
    return micros / 1_000_000


# --------------------------------------------------------------------------- small readers


def _object(data: object, path: str, what: str) -> dict[str, Any]:
    if not is_object(data):
        raise DecodeError(path, data, what)
    return data


def _required(data: dict[str, Any], name: str, path: str, what: str = "a value") -> Any:
    if name not in data:
        raise DecodeError(f"{path}.{name}", None, f"{what} (field is missing)")
    return data[name]


def _str(data: dict[str, Any], name: str, path: str) -> str:
    value = _required(data, name, path, "a string")
    if not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string")
    return value


def _nullable_str(data: dict[str, Any], name: str, path: str) -> str | None:
    value = _required(data, name, path, "a string or null")
    if value is not None and not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string or null")
    return value


def _int(data: dict[str, Any], name: str, path: str) -> int:
    value = _required(data, name, path, "a non-negative integer")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DecodeError(f"{path}.{name}", value, "a non-negative integer")
    return value


def _str_list(data: dict[str, Any], name: str, path: str) -> list[str]:
    value = _required(data, name, path, "a list of strings")
    if not is_array(value) or not all(isinstance(item, str) for item in value):
        raise DecodeError(f"{path}.{name}", value, "a list of strings")
    return value


def _list(data: dict[str, Any], name: str, path: str, decode: Callable[[object, str], T]) -> list[T]:
    value = _required(data, name, path, "a list")
    if not is_array(value):
        raise DecodeError(f"{path}.{name}", value, "a list")
    return [decode(item, f"{path}.{name}[{i}]") for i, item in enumerate(value)]


def _nullable(data: dict[str, Any], name: str, path: str, decode: Callable[[object, str], T]) -> T | None:
    value = _required(data, name, path, "a value or null")
    return None if value is None else decode(value, f"{path}.{name}")


def _extra(data: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in known}


def _time(data: dict[str, Any], name: str, path: str, kept: Preserved, key: str | None = None) -> float:
    """A required timestamp; its text is kept when phi would write it differently."""
    raw = _required(data, name, path, "an RFC 3339 timestamp")
    value = parse_time(raw, f"{path}.{name}")
    if not isinstance(raw, str) or format_time(value) != raw:
        kept.times[key or name] = (value, raw)
    return value


def _nullable_time(data: dict[str, Any], name: str, path: str, kept: Preserved) -> float | None:
    if _required(data, name, path, "an RFC 3339 timestamp or null") is None:
        return None
    return _time(data, name, path, kept)


def _write_time(kept: Preserved | None, name: str, value: float) -> Any:
    raw = raw_time(kept, name, value)
    return raw if raw is not None else format_time(value)


def _usage(data: dict[str, Any], name: str, path: str, kept: Preserved) -> Usage:
    usage, overlay = usage_from_json(_required(data, name, path, "a usage object"), f"{path}.{name}")
    kept.keep(usage, overlay)
    return usage


def _usage_to_json(usage: Usage, kept: Preserved | None) -> dict[str, Any]:
    return apply_overlay(kept, usage, usage.to_json())


# --------------------------------------------------------------------------- parts

_TIMESTAMP_ONLY = ("timestamp",)
_INACTIVITY_KEYS = ("threshold_secs", "previous_session_id", "timestamp")


def formation_to_json(formation: SessionFormation, kept: Preserved | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if isinstance(formation, InactivityTimeout):
        body.update(threshold_secs=formation.threshold_secs, previous_session_id=formation.previous_session_id)
    body["timestamp"] = _write_time(kept, "formation.timestamp", formation.timestamp)
    body.update(formation.extra)
    return {type(formation).__name__: body}


def formation_from_json(data: object, path: str, kept: Preserved | None = None) -> SessionFormation:
    kept = kept if kept is not None else Preserved()
    if is_object(data) and len(data) == 1:
        ((name, body),) = data.items()
        inner = f"{path}.{name}"
        if name in ("FirstLoop", "Explicit") and is_object(body):
            kind = FirstLoop if name == "FirstLoop" else Explicit
            return kind(_time(body, "timestamp", inner, kept, "formation.timestamp"), _extra(body, _TIMESTAMP_ONLY))
        if name == "InactivityTimeout" and is_object(body):
            return InactivityTimeout(_int(body, "threshold_secs", inner), _nullable_str(body, "previous_session_id", inner),
                                     _time(body, "timestamp", inner, kept, "formation.timestamp"),
                                     _extra(body, _INACTIVITY_KEYS))
    raise DecodeError(path, data, '{"FirstLoop": {...}}, {"Explicit": {...}} or {"InactivityTimeout": {...}}')


_SPAWN_KEYS = ("parent_session_id", "parent_loop_id", "tool_call_id", "tool_name")
_CHILD_KEYS = ("tool_call_id", "tool_name", "child_loop_id", "child_session_id")
_GROUP_KEYS = ("all_loop_ids", "selected_loop_id", "selected_config_index", "evaluation_usage", "is_selected")
_CONFIG_KEYS = ("model", "provider", "config_id")
_EVENT_KEYS = ("sequence", "event")


def _spawn_from_json(data: object, path: str) -> SpawnRef:
    data = _object(data, path, "a spawn reference object")
    parent_session, parent_loop, call, tool = (_str(data, key, path) for key in _SPAWN_KEYS)
    return SpawnRef(parent_session, parent_loop, call, tool, _extra(data, _SPAWN_KEYS))


def _spawn_to_json(ref: SpawnRef) -> dict[str, Any]:
    return {"parent_session_id": ref.parent_session_id, "parent_loop_id": ref.parent_loop_id,
            "tool_call_id": ref.tool_call_id, "tool_name": ref.tool_name, **ref.extra}


def _child_from_json(data: object, path: str) -> ChildLoopRef:
    data = _object(data, path, "a child loop reference object")
    call, tool, child_loop, child_session = (_str(data, key, path) for key in _CHILD_KEYS)
    return ChildLoopRef(call, tool, child_loop, child_session, _extra(data, _CHILD_KEYS))


def _child_to_json(ref: ChildLoopRef) -> dict[str, Any]:
    return {"tool_call_id": ref.tool_call_id, "tool_name": ref.tool_name, "child_loop_id": ref.child_loop_id,
            "child_session_id": ref.child_session_id, **ref.extra}


def _group_from_json(data: object, path: str, kept: Preserved) -> ParallelGroupRecord:
    data = _object(data, path, "a parallel group object")
    selected = _required(data, "is_selected", path, "a boolean")
    if not isinstance(selected, bool):
        raise DecodeError(path + ".is_selected", selected, "a boolean")
    return ParallelGroupRecord(tuple(_str_list(data, "all_loop_ids", path)), _str(data, "selected_loop_id", path),
                               _int(data, "selected_config_index", path),
                               _usage(data, "evaluation_usage", path, kept), selected, _extra(data, _GROUP_KEYS))


def _group_to_json(group: ParallelGroupRecord, kept: Preserved | None) -> dict[str, Any]:
    return {"all_loop_ids": list(group.all_loop_ids), "selected_loop_id": group.selected_loop_id,
            "selected_config_index": group.selected_config_index,
            "evaluation_usage": _usage_to_json(group.evaluation_usage, kept), "is_selected": group.is_selected,
            **group.extra}


def _config_from_json(data: object, path: str) -> LoopConfigSnapshot:
    data = _object(data, path, "a config snapshot object")
    return LoopConfigSnapshot(_str(data, "model", path), _str(data, "provider", path),
                              _nullable_str(data, "config_id", path), _extra(data, _CONFIG_KEYS))


def _config_to_json(config: LoopConfigSnapshot) -> dict[str, Any]:
    return {"model": config.model, "provider": config.provider, "config_id": config.config_id, **config.extra}


def _event_from_json(data: object, path: str) -> LoopEvent:
    data = _object(data, path, "a loop event object")
    return LoopEvent(_int(data, "sequence", path),
                     _object(_required(data, "event", path), path + ".event", "an event object"),
                     _extra(data, _EVENT_KEYS))


def _status(value: object, path: str) -> LoopStatus:
    try:
        return LoopStatus(value)
    except ValueError:
        raise DecodeError(path, value, "one of " + ", ".join(s.value for s in LoopStatus)) from None


_HISTORY_KEYS = frozenset({"after_loop_id", "kept", "added"})


def _history_from_json(data: object, path: str, kept: Preserved) -> StartingHistory:
    data = _object(data, path, "a starting history object")
    after = _nullable_str(data, "after_loop_id", path)
    history = StartingHistory(after, _int(data, "kept", path), tuple(messages_from_json(data, "added", path, kept)))
    kept.keep(history, overlay_of(data, None, _HISTORY_KEYS, {}, {}))
    return history


def _continuation_from_json(data: object, path: str, kept: Preserved) -> ContinuationKind:
    """A continuation kind; its payload's unknown keys and a missing ``tag`` are kept beside it, since
    ``ContinuationKind`` (a public value type of phi.types) has no room for them."""
    kind = ContinuationKind.from_json(data, path)
    if is_object(data):  # {"Rerun": {...}} or {"Branch": {...}}, checked by from_json
        ((name, body),) = data.items()
        payload = overlay_of(body, None, frozenset({"tag"}), {}, {"tag": None})
        kept.keep(kind, None if payload is None else Overlay(children={name: payload}))
    return kind


def _continuation_to_json(kind: ContinuationKind | None, kept: Preserved | None) -> Any:
    if kind is None:
        return None
    out = kind.to_json()
    return apply_overlay(kept, kind, out) if is_object(out) else out


def _messages_to_json(messages: Any, kept: Preserved | None) -> list[dict[str, Any]]:
    return [apply_overlay(kept, m, message_to_json(m)) for m in messages]


def _history_to_json(history: StartingHistory, kept: Preserved | None) -> dict[str, Any]:
    return apply_overlay(kept, history, {"after_loop_id": history.after_loop_id, "kept": history.kept,
                                         "added": _messages_to_json(history.added, kept)})


# --------------------------------------------------------------------------- LoopRecord and Session

_LOOP_KEYS = ("loop_id", "session_id", "agent_id", "parent_loop_id", "continuation_kind", "started_at", "ended_at",
              "status", "rejection", "config", "messages", "usage", "metadata", "events", "children_loop_ids",
              "child_loop_refs", "parallel_group")
_PHI_LOOP_KEYS = ("history", "evaluates")  # phi's own, written only when set
_SESSION_KEYS = ("session_id", "agent_id", "created_at", "last_active_at", "formation", "parent_spawn_ref", "loops")


def loop_to_json(record: LoopRecord) -> dict[str, Any]:
    kept = record.preserved
    out: dict[str, Any] = {
        "loop_id": record.loop_id,
        "session_id": record.session_id,
        "agent_id": record.agent_id,
        "parent_loop_id": record.parent_loop_id,
        "continuation_kind": _continuation_to_json(record.continuation_kind, kept),
        "started_at": _write_time(kept, "started_at", record.started_at),
        "ended_at": None if record.ended_at is None else _write_time(kept, "ended_at", record.ended_at),
        "status": record.status.value,
        "rejection": record.rejection,
        "config": None if record.config is None else _config_to_json(record.config),
        "messages": _messages_to_json(record.messages, kept),
        "usage": _usage_to_json(record.usage, kept),
        "metadata": record.metadata,
        "events": [{"sequence": e.sequence, "event": e.event, **e.extra} for e in record.events],
        "children_loop_ids": list(record.children_loop_ids),
        "child_loop_refs": [_child_to_json(c) for c in record.child_loop_refs],
        "parallel_group": None if record.parallel_group is None else _group_to_json(record.parallel_group, kept),
    }
    if record.history is not None:
        out["history"] = _history_to_json(record.history, kept)
    if record.evaluates:
        out["evaluates"] = list(record.evaluates)
    out.update(record.extra)
    return out


def loop_from_json(data: object, path: str = "loop") -> LoopRecord:
    data = _object(data, path, "a loop record object")
    kept = Preserved()
    continuation = _required(data, "continuation_kind", path, "a continuation kind or null")
    metadata = _required(data, "metadata", path, "a JSON value or null")
    history = data.get("history")
    evaluates = _str_list(data, "evaluates", path) if "evaluates" in data else []
    return LoopRecord(
        loop_id=_str(data, "loop_id", path),
        session_id=_str(data, "session_id", path),
        agent_id=_str(data, "agent_id", path),
        parent_loop_id=_nullable_str(data, "parent_loop_id", path),
        continuation_kind=None if continuation is None else _continuation_from_json(
            continuation, path + ".continuation_kind", kept),
        started_at=_time(data, "started_at", path, kept),
        ended_at=_nullable_time(data, "ended_at", path, kept),
        status=_status(_required(data, "status", path, "a loop status"), path + ".status"),
        rejection=_nullable_str(data, "rejection", path),
        config=_nullable(data, "config", path, _config_from_json),
        messages=messages_from_json(data, "messages", path, kept),
        usage=_usage(data, "usage", path, kept),
        metadata=metadata,
        events=_list(data, "events", path, _event_from_json),
        children_loop_ids=_str_list(data, "children_loop_ids", path),
        child_loop_refs=_list(data, "child_loop_refs", path, _child_from_json),
        parallel_group=_nullable(data, "parallel_group", path, lambda v, p: _group_from_json(v, p, kept)),
        extra=_extra(data, _LOOP_KEYS + _PHI_LOOP_KEYS),
        history=None if history is None else _history_from_json(history, path + ".history", kept),
        evaluates=tuple(evaluates),
        preserved=kept if kept else None,
    )


def header_to_json(session: Session) -> dict[str, Any]:
    """Every key of the session's JSON form but ``loops`` (which goes last in the whole form)."""
    kept = session.preserved
    out: dict[str, Any] = {
        "session_id": session.session_id,
        "agent_id": session.agent_id,
        "created_at": _write_time(kept, "created_at", session.created_at),
        "last_active_at": _write_time(kept, "last_active_at", session.last_active_at),
        "formation": formation_to_json(session.formation, kept),
        "parent_spawn_ref": None if session.parent_spawn_ref is None else _spawn_to_json(session.parent_spawn_ref),
    }
    out.update(session.extra)
    return out


def session_to_json(session: Session) -> dict[str, Any]:
    header = header_to_json(session)
    out = {key: header.pop(key) for key in _SESSION_KEYS[:-1]}
    out["loops"] = [loop_to_json(record) for record in session.loops]
    out.update(header)  # the unknown keys, after the known ones as they were
    return out


def session_from_json(data: object, path: str = "session", loops_required: bool = True) -> Session:
    """A session from its JSON form; ``loops_required=False`` reads a header alone (no ``loops``)."""
    data = _object(data, path, "a session object")
    kept = Preserved()
    loops = _list(data, "loops", path, loop_from_json) if loops_required or "loops" in data else []
    return Session(
        session_id=_str(data, "session_id", path),
        agent_id=_str(data, "agent_id", path),
        created_at=_time(data, "created_at", path, kept),
        last_active_at=_time(data, "last_active_at", path, kept),
        formation=formation_from_json(_required(data, "formation", path), path + ".formation", kept),
        parent_spawn_ref=_nullable(data, "parent_spawn_ref", path, _spawn_from_json),
        loops=loops,
        extra=_extra(data, _SESSION_KEYS),
        preserved=kept if kept else None,
    )

