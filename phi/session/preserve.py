"""What the session codec keeps of a document besides the model's fields, so that loading and
saving a file changes nothing in it (SPEC §13.2 SESS-5).

Two kinds of things are kept:

* an :class:`Overlay` per decoded message or usage object: the keys of its JSON object the model
  has no field for (phi-core's per-message ``turnId``, keys of newer versions), keys the encoder
  would leave out (``"error_message": null``) and keys the source did not have that the encoder
  writes by default (``reasoning`` in a phi-core usage object). Messages and ``Usage`` belong to
  ``phi.types``, so the overlay lives beside them in :class:`Preserved`, keyed by the object it
  was read with: a message replaced by another object loses it, one changed in place keeps it.
* raw timestamps that the model's microsecond floats cannot write back exactly (phi-core's
  nanoseconds, ``+02:00`` offsets), written back while the value they were read as is unchanged.

Session data written by phi itself needs neither: the decoder then records nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

from ..json_values import is_array, is_object

Key = Union[str, int]


@dataclass(frozen=True)
class Overlay:
    """How to turn the encoder's JSON object for a node back into the object it was read from.

    ``tag``: the node's ``role`` or ``type`` when read (the overlay applies only while it is the
    same); ``add``: keys to put back when the encoder did not write them; ``drop``: keys (with the
    default the decoder filled in) to remove while they still hold that default; ``children``:
    overlays of nested objects, by key, or ``("content", index)`` pairs flattened to ``content.N``.
    """

    tag: str | None = None
    add: dict[str, Any] = field(default_factory=dict[str, Any])
    drop: dict[str, Any] = field(default_factory=dict[str, Any])
    children: dict[str, Overlay] = field(default_factory=dict[str, "Overlay"])

    def __bool__(self) -> bool:
        return bool(self.add or self.drop or self.children)

    def apply(self, out: dict[str, Any]) -> dict[str, Any]:
        """``out`` (an encoder's fresh dict) with the kept keys put back; changed in place."""
        if self.tag is not None and out.get("role", out.get("type")) != self.tag:
            return out  # the node is not what it was when read
        for key, value in self.add.items():
            out.setdefault(key, value)
        for key, default in self.drop.items():
            if key in out and out[key] == default:
                del out[key]
        for name, child in self.children.items():
            target = _child(out, name)
            if target is not None:
                child.apply(target)
        return out


def _child(out: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The nested dict ``name`` points at: ``usage`` or ``content.2``."""
    key, _, index = name.partition(".")
    node = out.get(key)
    if index:
        if not is_array(node) or int(index) >= len(node):
            return None
        node = node[int(index)]
    return node if is_object(node) else None


def overlay_of(data: dict[str, Any], tag: str | None, known: frozenset[str], omitted: dict[str, Any],
               defaulted: dict[str, Any], children: dict[str, Overlay] | None = None) -> Overlay | None:
    """The overlay of one decoded JSON object, None when writing it again loses nothing.

    ``known``: keys the decoder reads; ``omitted``: known keys the encoder leaves out while they
    hold the given value (kept when the source wrote them with it); ``defaulted``: known keys the
    encoder always writes, with the default the decoder assumes when they are absent.
    """
    add = {key: value for key, value in data.items()
           if key not in known or (key in omitted and value == omitted[key])}
    drop = {key: default for key, default in defaulted.items() if key not in data}
    found = Overlay(tag, add, drop, {k: v for k, v in (children or {}).items() if v})
    return found if found else None


@dataclass
class Preserved:
    """Kept parts of one decoded record (a LoopRecord or a Session header); see the module docstring.
    Shared, unchanged, by copies of the record."""

    overlays: dict[int, tuple[object, Overlay]] = field(default_factory=dict[int, tuple[object, Overlay]])
    times: dict[str, tuple[float, Any]] = field(default_factory=dict[str, tuple[float, Any]])

    def keep(self, node: object, overlay: Overlay | None) -> None:
        if overlay is not None:
            self.overlays[id(node)] = (node, overlay)  # the node is held, so its id stays its own

    def overlay(self, node: object) -> Overlay | None:
        found = self.overlays.get(id(node))
        return found[1] if found is not None and found[0] is node else None

    def __bool__(self) -> bool:
        return bool(self.overlays or self.times)


def apply_overlay(preserved: Preserved | None, node: object, out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with what was kept for ``node`` put back (``out`` itself when nothing was)."""
    overlay = preserved.overlay(node) if preserved is not None else None
    return overlay.apply(out) if overlay is not None else out


def raw_time(preserved: Preserved | None, name: str, value: float | None) -> Any:
    """The timestamp ``name`` as it was read, if it was not in phi's form and still holds ``value``."""
    if preserved is None or value is None:
        return None
    found = preserved.times.get(name)
    return found[1] if found is not None and found[0] == value else None
