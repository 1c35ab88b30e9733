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
``ContinuationKind.to_json``. Keys this module does not know are kept in ``extra`` and written back,
so a file written by a newer phi or by phi-core loses nothing when phi re-saves it. Errors are
:class:`~phi.errors.DecodeError` naming the offending field.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Callable, TypeVar

from ..errors import DecodeError
from ..types import (  # the DATA-6 field readers: same errors for the same mistakes
    ContinuationKind,
    Usage,
    _opt_str,
    _str,
    message_to_json,
    messages_from_json,
)
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
    exact_time,
)

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
    if not isinstance(data, dict):
        raise DecodeError(path, data, what)
    return data


def _required(data: dict[str, Any], name: str, path: str) -> Any:
    if name not in data:
        raise DecodeError(f"{path}.{name}", None, "a value (field is missing)")
    return data[name]


def _int(data: dict[str, Any], name: str, path: str) -> int:
    value = _required(data, name, path)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DecodeError(f"{path}.{name}", value, "a non-negative integer")
    return value


def _str_list(data: dict[str, Any], name: str, path: str) -> list[str]:
    value = data.get(name, [])
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise DecodeError(f"{path}.{name}", value, "a list of strings")
    return value


def _list(data: dict[str, Any], name: str, path: str, decode: Callable[[object, str], T]) -> list[T]:
    value = data.get(name, [])
    if value is None:
        return []
    if not isinstance(value, list):
        raise DecodeError(f"{path}.{name}", value, "a list")
    return [decode(item, f"{path}.{name}[{i}]") for i, item in enumerate(value)]


def _optional(data: dict[str, Any], name: str, path: str, decode: Callable[[object, str], T]) -> T | None:
    value = data.get(name)
    return None if value is None else decode(value, f"{path}.{name}")


def _extra(data: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {key: value for key, value in data.items() if key not in known}


# --------------------------------------------------------------------------- parts


def formation_to_json(formation: SessionFormation) -> dict[str, Any]:
    if isinstance(formation, InactivityTimeout):
        return {"InactivityTimeout": {"threshold_secs": formation.threshold_secs,
                                      "previous_session_id": formation.previous_session_id,
                                      "timestamp": format_time(formation.timestamp)}}
    return {type(formation).__name__: {"timestamp": format_time(formation.timestamp)}}


def formation_from_json(data: object, path: str) -> SessionFormation:
    if isinstance(data, dict) and len(data) == 1:
        ((name, body),) = data.items()
        inner = f"{path}.{name}"
        if name in ("FirstLoop", "Explicit") and isinstance(body, dict):
            kind = FirstLoop if name == "FirstLoop" else Explicit
            return kind(parse_time(_required(body, "timestamp", inner), inner + ".timestamp"))
        if name == "InactivityTimeout" and isinstance(body, dict):
            return InactivityTimeout(_int(body, "threshold_secs", inner), _opt_str(body, "previous_session_id", inner),
                                     parse_time(_required(body, "timestamp", inner), inner + ".timestamp"))
    raise DecodeError(path, data, '{"FirstLoop": {...}}, {"Explicit": {...}} or {"InactivityTimeout": {...}}')


def _spawn_from_json(data: object, path: str) -> SpawnRef:
    data = _object(data, path, "a spawn reference object")
    return SpawnRef(_str(data, "parent_session_id", path), _str(data, "parent_loop_id", path),
                    _str(data, "tool_call_id", path), _str(data, "tool_name", path))


def _spawn_to_json(ref: SpawnRef) -> dict[str, str]:
    return {"parent_session_id": ref.parent_session_id, "parent_loop_id": ref.parent_loop_id,
            "tool_call_id": ref.tool_call_id, "tool_name": ref.tool_name}


def _child_from_json(data: object, path: str) -> ChildLoopRef:
    data = _object(data, path, "a child loop reference object")
    return ChildLoopRef(_str(data, "tool_call_id", path), _str(data, "tool_name", path),
                        _str(data, "child_loop_id", path), _str(data, "child_session_id", path))


def _group_from_json(data: object, path: str) -> ParallelGroupRecord:
    data = _object(data, path, "a parallel group object")
    selected = data.get("is_selected")
    if not isinstance(selected, bool):
        raise DecodeError(path + ".is_selected", selected, "a boolean")
    return ParallelGroupRecord(tuple(_str_list(data, "all_loop_ids", path)), _str(data, "selected_loop_id", path),
                               _int(data, "selected_config_index", path),
                               Usage.from_json(data.get("evaluation_usage", {}), path + ".evaluation_usage"),
                               selected)


def _group_to_json(group: ParallelGroupRecord) -> dict[str, Any]:
    return {"all_loop_ids": list(group.all_loop_ids), "selected_loop_id": group.selected_loop_id,
            "selected_config_index": group.selected_config_index,
            "evaluation_usage": group.evaluation_usage.to_json(), "is_selected": group.is_selected}


def _config_from_json(data: object, path: str) -> LoopConfigSnapshot:
    data = _object(data, path, "a config snapshot object")
    return LoopConfigSnapshot(_str(data, "model", path), _str(data, "provider", path),
                              _opt_str(data, "config_id", path))


def _event_from_json(data: object, path: str) -> LoopEvent:
    data = _object(data, path, "a loop event object")
    return LoopEvent(_int(data, "sequence", path), _object(_required(data, "event", path), path + ".event",
                                                           "an event object"))


def _status(value: object, path: str) -> LoopStatus:
    try:
        return LoopStatus(value)
    except ValueError:
        raise DecodeError(path, value, "one of " + ", ".join(s.value for s in LoopStatus)) from None


# --------------------------------------------------------------------------- LoopRecord and Session

_LOOP_KEYS = ("loop_id", "session_id", "agent_id", "parent_loop_id", "continuation_kind", "started_at", "ended_at",
              "status", "rejection", "config", "messages", "usage", "metadata", "events", "children_loop_ids",
              "child_loop_refs", "parallel_group")
_SESSION_KEYS = ("session_id", "agent_id", "created_at", "last_active_at", "formation", "parent_spawn_ref", "loops")


def loop_to_json(record: LoopRecord) -> dict[str, Any]:
    out: dict[str, Any] = {
        "loop_id": record.loop_id,
        "session_id": record.session_id,
        "agent_id": record.agent_id,
        "parent_loop_id": record.parent_loop_id,
        "continuation_kind": None if record.continuation_kind is None else record.continuation_kind.to_json(),
        "started_at": format_time(record.started_at),
        "ended_at": None if record.ended_at is None else format_time(record.ended_at),
        "status": record.status.value,
        "rejection": record.rejection,
        "config": None if record.config is None else {"model": record.config.model, "provider": record.config.provider,
                                                      "config_id": record.config.config_id},
        "messages": [message_to_json(m) for m in record.messages],
        "usage": record.usage.to_json(),
        "metadata": record.metadata,
        "events": [{"sequence": e.sequence, "event": e.event} for e in record.events],
        "children_loop_ids": list(record.children_loop_ids),
        "child_loop_refs": [{"tool_call_id": c.tool_call_id, "tool_name": c.tool_name, "child_loop_id": c.child_loop_id,
                             "child_session_id": c.child_session_id} for c in record.child_loop_refs],
        "parallel_group": None if record.parallel_group is None else _group_to_json(record.parallel_group),
    }
    out.update(record.extra)
    return out


def loop_from_json(data: object, path: str = "loop") -> LoopRecord:
    data = _object(data, path, "a loop record object")
    return LoopRecord(
        loop_id=_str(data, "loop_id", path),
        session_id=_str(data, "session_id", path),
        agent_id=_str(data, "agent_id", path),
        parent_loop_id=_opt_str(data, "parent_loop_id", path),
        continuation_kind=_optional(data, "continuation_kind", path, ContinuationKind.from_json),
        started_at=parse_time(_required(data, "started_at", path), path + ".started_at"),
        ended_at=_optional(data, "ended_at", path, parse_time),
        status=_status(_required(data, "status", path), path + ".status"),
        rejection=_opt_str(data, "rejection", path),
        config=_optional(data, "config", path, _config_from_json),
        messages=messages_from_json(data.get("messages") or [], path + ".messages"),
        usage=Usage.from_json(data.get("usage") or {}, path + ".usage"),
        metadata=data.get("metadata"),
        events=_list(data, "events", path, _event_from_json),
        children_loop_ids=_str_list(data, "children_loop_ids", path),
        child_loop_refs=_list(data, "child_loop_refs", path, _child_from_json),
        parallel_group=_optional(data, "parallel_group", path, _group_from_json),
        extra=_extra(data, _LOOP_KEYS),
    )


def session_to_json(session: Session) -> dict[str, Any]:
    out: dict[str, Any] = {
        "session_id": session.session_id,
        "agent_id": session.agent_id,
        "created_at": format_time(session.created_at),
        "last_active_at": format_time(session.last_active_at),
        "formation": formation_to_json(session.formation),
        "parent_spawn_ref": None if session.parent_spawn_ref is None else _spawn_to_json(session.parent_spawn_ref),
        "loops": [loop_to_json(record) for record in session.loops],
    }
    out.update(session.extra)
    return out


def session_from_json(data: object, path: str = "session") -> Session:
    data = _object(data, path, "a session object")
    return Session(
        session_id=_str(data, "session_id", path),
        agent_id=_str(data, "agent_id", path),
        created_at=parse_time(_required(data, "created_at", path), path + ".created_at"),
        last_active_at=parse_time(_required(data, "last_active_at", path), path + ".last_active_at"),
        formation=formation_from_json(_required(data, "formation", path), path + ".formation"),
        parent_spawn_ref=_optional(data, "parent_spawn_ref", path, _spawn_from_json),
        loops=_list(data, "loops", path, loop_from_json),
        extra=_extra(data, _SESSION_KEYS),
    )
