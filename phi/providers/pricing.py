"""What a model call cost (seed 002 §3.3: a cost per category and a total), computed from
:class:`~phi.types.Usage` so that phi's wire format stays phi-core's.

    from phi.providers.pricing import cost_of
    cost = cost_of(message.usage, "claude-sonnet-4-5")     # Cost(input=..., total=...) or None

Prices are US dollars per million tokens. :data:`PRICES` holds the common models (list prices at
the date in :data:`PRICES_AS_OF`); a model that is not listed costs ``None`` ("unknown"), never a
guess. Dated snapshots (``claude-sonnet-4-5-20250929``, ``gpt-4o-2024-08-06``) and ``-latest``
aliases use their model's price; nothing else is matched by prefix (``gpt-5`` is not ``gpt-5-mini``).

Overrides, most specific first: a ``prices`` mapping passed to :func:`cost_of` / :func:`price_for`,
then :func:`set_price` (process-wide, e.g. a negotiated rate or a private deployment), then the
table. A model config may carry its own price: :func:`price_for` accepts a ``ModelConfig`` and reads
its ``cost`` attribute when it has one (a :class:`ModelPrice`).

Categories: ``input`` (tokens read at full price), ``output`` (reasoning tokens are part of the
output count every provider reports, so they are not charged again), ``cache_read`` and
``cache_write``. Gemini 2.5 Pro's higher rate for prompts above 200k tokens is modelled with
``long_context``.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Mapping

from ..types import Usage

PRICES_AS_OF = "2025-12"
_MILLION = 1_000_000
_SNAPSHOT = re.compile(r"-(\d{4}-?\d{2}-?\d{2}|latest)\Z")


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens. ``cache_read``/``cache_write`` None: that category is charged
    at the ``input`` rate. ``long_context``: (prompt tokens above which, the price then)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    long_context: tuple[int, ModelPrice] | None = None


@dataclass(frozen=True)
class Cost:
    """US dollars per category and in total (seed 002 §3.3)."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def total(self) -> float:
        return self.input + self.output + self.cache_read + self.cache_write

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.input + other.input, self.output + other.output, self.cache_read + other.cache_read,
                    self.cache_write + other.cache_write)

    def to_json(self) -> dict[str, float]:
        return {"input": self.input, "output": self.output, "cache_read": self.cache_read,
                "cache_write": self.cache_write, "total": self.total}


def _p(input: float, output: float, cache_read: float | None = None, cache_write: float | None = None,
       long_context: tuple[int, ModelPrice] | None = None) -> ModelPrice:
    return ModelPrice(input, output, cache_read, cache_write, long_context)


_CLAUDE_SONNET = _p(3.0, 15.0, 0.30, 3.75)
_CLAUDE_OPUS_4 = _p(15.0, 75.0, 1.50, 18.75)
_GPT_5 = _p(1.25, 10.0, 0.125)

#: List prices of the common models, US dollars per million tokens (see PRICES_AS_OF).
PRICES: dict[str, ModelPrice] = {
    # Anthropic (cache_write: the 5-minute cache)
    "claude-opus-4-5": _p(5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": _CLAUDE_OPUS_4,
    "claude-opus-4": _CLAUDE_OPUS_4,
    "claude-opus-4-0": _CLAUDE_OPUS_4,
    "claude-sonnet-4-5": _CLAUDE_SONNET,
    "claude-sonnet-4": _CLAUDE_SONNET,
    "claude-sonnet-4-0": _CLAUDE_SONNET,
    "claude-3-7-sonnet": _CLAUDE_SONNET,
    "claude-haiku-4-5": _p(1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": _p(0.80, 4.0, 0.08, 1.0),
    # OpenAI (cached input is cache_read; there is no charge for writing the cache)
    "gpt-5.2": _p(1.75, 14.0, 0.175, 0.0),
    "gpt-5.2-codex": _p(1.75, 14.0, 0.175, 0.0),
    "gpt-5.1": _GPT_5,
    "gpt-5.1-codex": _GPT_5,
    "gpt-5": _GPT_5,
    "gpt-5-codex": _GPT_5,
    "gpt-5-mini": _p(0.25, 2.0, 0.025, 0.0),
    "gpt-5-nano": _p(0.05, 0.40, 0.005, 0.0),
    "gpt-4.1": _p(2.0, 8.0, 0.50, 0.0),
    "gpt-4.1-mini": _p(0.40, 1.60, 0.10, 0.0),
    "gpt-4o": _p(2.50, 10.0, 1.25, 0.0),
    "gpt-4o-mini": _p(0.15, 0.60, 0.075, 0.0),
    "o3": _p(2.0, 8.0, 0.50, 0.0),
    "o4-mini": _p(1.10, 4.40, 0.275, 0.0),
    # Google (prompts up to 200k tokens; Pro charges more above)
    "gemini-2.5-pro": _p(1.25, 10.0, 0.125, None, (200_000, _p(2.50, 15.0, 0.25))),
    "gemini-2.5-flash": _p(0.30, 2.50, 0.03),
    "gemini-2.5-flash-lite": _p(0.10, 0.40, 0.01),
}

_overrides: dict[str, ModelPrice] = {}
_lock = threading.Lock()


def set_price(model: str, price: ModelPrice | None) -> None:
    """Use ``price`` for ``model`` in this process (None removes the override)."""
    with _lock:
        if price is None:
            _overrides.pop(model, None)
        else:
            _overrides[model] = price


def _lookup(table: Mapping[str, ModelPrice], model: str) -> ModelPrice | None:
    if model in table:
        return table[model]
    base = _SNAPSHOT.sub("", model)
    return table.get(base) if base != model else None


def price_for(model: object, prices: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """The price of ``model`` (a model id, ``provider:model`` or a ModelConfig), or None when unknown."""
    own = getattr(model, "cost", None)
    if isinstance(own, ModelPrice):
        return own
    model_id = getattr(model, "id", model)
    if not isinstance(model_id, str) or not model_id:
        return None
    model_id = model_id.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
    with _lock:
        tables = [prices or {}, dict(_overrides), PRICES]
    for table in tables:
        found = _lookup(table, model_id)
        if found is not None:
            return found
    return None


def cost_of(usage: Usage, model: object, prices: Mapping[str, ModelPrice] | None = None) -> Cost | None:
    """The cost of ``usage`` on ``model`` (see :func:`price_for`); None when the price is unknown.

    ``usage`` should be one model call's: a long-context tier is chosen from its prompt size."""
    price = price_for(model, prices)
    if price is None:
        return None
    prompt = usage.input + usage.cache_read + usage.cache_write
    if price.long_context is not None and prompt > price.long_context[0]:
        price = price.long_context[1]
    cache_read = price.input if price.cache_read is None else price.cache_read
    cache_write = price.input if price.cache_write is None else price.cache_write
    return Cost(usage.input * price.input / _MILLION, usage.output * price.output / _MILLION,
                usage.cache_read * cache_read / _MILLION, usage.cache_write * cache_write / _MILLION)


def format_cost(cost: Cost | None) -> str:
    """``$0.0123`` (four decimals below a dollar), or ``unknown``."""
    if cost is None:
        return "unknown"
    total = cost.total
    return f"${total:.4f}" if total < 1 else f"${total:.2f}"


__all__ = ["ModelPrice", "Cost", "PRICES", "PRICES_AS_OF", "set_price", "price_for", "cost_of", "format_cost"]
