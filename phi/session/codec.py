"""JSON form of the session model, in phi-core's field names (SPEC §13.2 SESS-5; seed 001 §4
"Session / LoopRecord"): the format, and the reading and writing of its parts.

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

This module reads and writes the parts (times, formations, references, parallel groups, config
snapshots, events, statuses, starting histories, continuation kinds, messages, usage) of
:mod:`phi.session.records`; the whole ``LoopRecord`` and ``Session`` forms are assembled from them
beside those classes — ``loop_to_json``/``loop_from_json`` in :mod:`phi.session.loop_record`,
``session_to_json``/``session_from_json``/``header_to_json`` in :mod:`phi.session.model` — so the
data model can have its ``to_json``/``from_json`` without the codec needing the model.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Callable, TypeVar

from ..errors import DecodeError
from ..json_values import is_array, is_object
from ..types import ContinuationKind, Usage, message_to_json
from .message_codec import messages_from_json, usage_from_json
from .preserve import Overlay, Preserved, apply_overlay, overlay_of, raw_time
from .records import (
    ChildLoopRef,
    Explicit,
    FirstLoop,
    InactivityTimeout,
    LoopConfigSnapshot,
    LoopEvent,
    LoopStatus,
    ParallelGroupRecord,
    SessionFormation,
    SpawnRef,
    StartingHistory,
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
#
# Each takes the JSON object, the key and the object's path, and raises DecodeError naming
# ``path.key`` when the value is missing or of the wrong kind (SPEC DATA-7).


def read_object(data: object, path: str, what: str) -> dict[str, Any]:
    """``data`` if it is a JSON object; else a DecodeError saying it should be ``what``."""
    if not is_object(data):
        raise DecodeError(path, data, what)
    return data


def required(data: dict[str, Any], name: str, path: str, what: str = "a value") -> Any:
    if name not in data:
        raise DecodeError(f"{path}.{name}", None, f"{what} (field is missing)")
    return data[name]


def read_str(data: dict[str, Any], name: str, path: str) -> str:
    value = required(data, name, path, "a string")
    if not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string")
    return value


def read_nullable_str(data: dict[str, Any], name: str, path: str) -> str | None:
    value = required(data, name, path, "a string or null")
    if value is not None and not isinstance(value, str):
        raise DecodeError(f"{path}.{name}", value, "a string or null")
    return value


def _int(data: dict[str, Any], name: str, path: str) -> int:
    value = required(data, name, path, "a non-negative integer")
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DecodeError(f"{path}.{name}", value, "a non-negative integer")
    return value


def read_str_list(data: dict[str, Any], name: str, path: str) -> list[str]:
    value = required(data, name, path, "a list of strings")
    if not is_array(value) or not all(isinstance(item, str) for item in value):
        raise DecodeError(f"{path}.{name}", value, "a list of strings")
    return value


def read_list(data: dict[str, Any], name: str, path: str, decode: Callable[[object, str], T]) -> list[T]:
    value = required(data, name, path, "a list")
    if not is_array(value):
        raise DecodeError(f"{path}.{name}", value, "a list")
    return [decode(item, f"{path}.{name}[{i}]") for i, item in enumerate(value)]


def read_nullable(data: dict[str, Any], name: str, path: str, decode: Callable[[object, str], T]) -> T | None:
    value = required(data, name, path, "a value or null")
    return None if value is None else decode(value, f"{path}.{name}")


def unknown_keys(data: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    """The keys of ``data`` not in ``known``, kept as read (a record's ``extra``)."""
    return {key: value for key, value in data.items() if key not in known}


def read_time(data: dict[str, Any], name: str, path: str, kept: Preserved, key: str | None = None) -> float:
    """A required timestamp; its text is kept when phi would write it differently."""
    raw = required(data, name, path, "an RFC 3339 timestamp")
    value = parse_time(raw, f"{path}.{name}")
    if not isinstance(raw, str) or format_time(value) != raw:
        kept.times[key or name] = (value, raw)
    return value


def read_nullable_time(data: dict[str, Any], name: str, path: str, kept: Preserved) -> float | None:
    if required(data, name, path, "an RFC 3339 timestamp or null") is None:
        return None
    return read_time(data, name, path, kept)


def write_time(kept: Preserved | None, name: str, value: float) -> Any:
    """The JSON of a timestamp: its text as read while the value is unchanged, else RFC 3339."""
    raw = raw_time(kept, name, value)
    return raw if raw is not None else format_time(value)


def read_usage(data: dict[str, Any], name: str, path: str, kept: Preserved) -> Usage:
    usage, overlay = usage_from_json(required(data, name, path, "a usage object"), f"{path}.{name}")
    kept.keep(usage, overlay)
    return usage


def usage_to_json(usage: Usage, kept: Preserved | None) -> dict[str, Any]:
    return apply_overlay(kept, usage, usage.to_json())


# --------------------------------------------------------------------------- parts

_TIMESTAMP_ONLY = ("timestamp",)
_INACTIVITY_KEYS = ("threshold_secs", "previous_session_id", "timestamp")


def formation_to_json(formation: SessionFormation, kept: Preserved | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if isinstance(formation, InactivityTimeout):
        body.update(threshold_secs=formation.threshold_secs, previous_session_id=formation.previous_session_id)
    body["timestamp"] = write_time(kept, "formation.timestamp", formation.timestamp)
    body.update(formation.extra)
    return {type(formation).__name__: body}


def formation_from_json(data: object, path: str, kept: Preserved | None = None) -> SessionFormation:
    kept = kept if kept is not None else Preserved()
    if is_object(data) and len(data) == 1:
        ((name, body),) = data.items()
        inner = f"{path}.{name}"
        if name in ("FirstLoop", "Explicit") and is_object(body):
            kind = FirstLoop if name == "FirstLoop" else Explicit
            return kind(read_time(body, "timestamp", inner, kept, "formation.timestamp"),
                        unknown_keys(body, _TIMESTAMP_ONLY))
        if name == "InactivityTimeout" and is_object(body):
            return InactivityTimeout(_int(body, "threshold_secs", inner),
                                     read_nullable_str(body, "previous_session_id", inner),
                                     read_time(body, "timestamp", inner, kept, "formation.timestamp"),
                                     unknown_keys(body, _INACTIVITY_KEYS))
    raise DecodeError(path, data, '{"FirstLoop": {...}}, {"Explicit": {...}} or {"InactivityTimeout": {...}}')


_SPAWN_KEYS = ("parent_session_id", "parent_loop_id", "tool_call_id", "tool_name")
_CHILD_KEYS = ("tool_call_id", "tool_name", "child_loop_id", "child_session_id")
_GROUP_KEYS = ("all_loop_ids", "selected_loop_id", "selected_config_index", "evaluation_usage", "is_selected")
_CONFIG_KEYS = ("model", "provider", "config_id")
_EVENT_KEYS = ("sequence", "event")


def spawn_from_json(data: object, path: str) -> SpawnRef:
    data = read_object(data, path, "a spawn reference object")
    parent_session, parent_loop, call, tool = (read_str(data, key, path) for key in _SPAWN_KEYS)
    return SpawnRef(parent_session, parent_loop, call, tool, unknown_keys(data, _SPAWN_KEYS))


def spawn_to_json(ref: SpawnRef) -> dict[str, Any]:
    return {"parent_session_id": ref.parent_session_id, "parent_loop_id": ref.parent_loop_id,
            "tool_call_id": ref.tool_call_id, "tool_name": ref.tool_name, **ref.extra}


def child_from_json(data: object, path: str) -> ChildLoopRef:
    data = read_object(data, path, "a child loop reference object")
    call, tool, child_loop, child_session = (read_str(data, key, path) for key in _CHILD_KEYS)
    return ChildLoopRef(call, tool, child_loop, child_session, unknown_keys(data, _CHILD_KEYS))


def child_to_json(ref: ChildLoopRef) -> dict[str, Any]:
    return {"tool_call_id": ref.tool_call_id, "tool_name": ref.tool_name, "child_loop_id": ref.child_loop_id,
            "child_session_id": ref.child_session_id, **ref.extra}


def group_from_json(data: object, path: str, kept: Preserved) -> ParallelGroupRecord:
    data = read_object(data, path, "a parallel group object")
    selected = required(data, "is_selected", path, "a boolean")
    if not isinstance(selected, bool):
        raise DecodeError(path + ".is_selected", selected, "a boolean")
    return ParallelGroupRecord(tuple(read_str_list(data, "all_loop_ids", path)),
                               read_str(data, "selected_loop_id", path), _int(data, "selected_config_index", path),
                               read_usage(data, "evaluation_usage", path, kept), selected,
                               unknown_keys(data, _GROUP_KEYS))


def group_to_json(group: ParallelGroupRecord, kept: Preserved | None) -> dict[str, Any]:
    return {"all_loop_ids": list(group.all_loop_ids), "selected_loop_id": group.selected_loop_id,
            "selected_config_index": group.selected_config_index,
            "evaluation_usage": usage_to_json(group.evaluation_usage, kept), "is_selected": group.is_selected,
            **group.extra}


def config_from_json(data: object, path: str) -> LoopConfigSnapshot:
    data = read_object(data, path, "a config snapshot object")
    return LoopConfigSnapshot(read_str(data, "model", path), read_str(data, "provider", path),
                              read_nullable_str(data, "config_id", path), unknown_keys(data, _CONFIG_KEYS))


def config_to_json(config: LoopConfigSnapshot) -> dict[str, Any]:
    return {"model": config.model, "provider": config.provider, "config_id": config.config_id, **config.extra}


def loop_event_from_json(data: object, path: str) -> LoopEvent:
    data = read_object(data, path, "a loop event object")
    return LoopEvent(_int(data, "sequence", path),
                     read_object(required(data, "event", path), path + ".event", "an event object"),
                     unknown_keys(data, _EVENT_KEYS))


def status_from_json(value: object, path: str) -> LoopStatus:
    try:
        return LoopStatus(value)
    except ValueError:
        raise DecodeError(path, value, "one of " + ", ".join(s.value for s in LoopStatus)) from None


_HISTORY_KEYS = frozenset({"after_loop_id", "kept", "added"})


def history_from_json(data: object, path: str, kept: Preserved) -> StartingHistory:
    data = read_object(data, path, "a starting history object")
    after = read_nullable_str(data, "after_loop_id", path)
    history = StartingHistory(after, _int(data, "kept", path), tuple(messages_from_json(data, "added", path, kept)))
    kept.keep(history, overlay_of(data, None, _HISTORY_KEYS, {}, {}))
    return history


def continuation_from_json(data: object, path: str, kept: Preserved) -> ContinuationKind:
    """A continuation kind; its payload's unknown keys and a missing ``tag`` are kept beside it, since
    ``ContinuationKind`` (a public value type of phi.types) has no room for them."""
    kind = ContinuationKind.from_json(data, path)
    if is_object(data):  # {"Rerun": {...}} or {"Branch": {...}}, checked by from_json
        ((name, body),) = data.items()
        payload = overlay_of(body, None, frozenset({"tag"}), {}, {"tag": None})
        kept.keep(kind, None if payload is None else Overlay(children={name: payload}))
    return kind


def continuation_to_json(kind: ContinuationKind | None, kept: Preserved | None) -> Any:
    if kind is None:
        return None
    out = kind.to_json()
    return apply_overlay(kept, kind, out) if is_object(out) else out


def messages_to_json(messages: Any, kept: Preserved | None) -> list[dict[str, Any]]:
    return [apply_overlay(kept, m, message_to_json(m)) for m in messages]


def history_to_json(history: StartingHistory, kept: Preserved | None) -> dict[str, Any]:
    return apply_overlay(kept, history, {"after_loop_id": history.after_loop_id, "kept": history.kept,
                                         "added": messages_to_json(history.added, kept)})
