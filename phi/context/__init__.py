"""SPEC §8 — context management: token estimates, compaction, trackers and limits.

* CTX-1 tokens — :func:`estimate_tokens`, :func:`content_tokens`, :func:`message_tokens`,
  :class:`TokenCounter`, :class:`HeuristicTokenCounter`;
* CTX-2 compaction — :class:`ContextConfig`, :func:`compact_messages` and its levels,
  :class:`CompactionStrategy`, :class:`DefaultCompaction`, and :class:`IncrementalCompaction` (the
  same cascade with running token totals, one per run);
* CTX-1 / LOOP-10 trackers and limits — :class:`ContextTracker`, :class:`ExecutionTracker`,
  :class:`ExecutionLimits`.
"""

from .compaction import (
    OMISSION_PREFIX,
    SUMMARY_PREFIX,
    CompactionStrategy,
    DefaultCompaction,
    compact_messages,
    compact_with,
    keep_within_budget,
    level1_truncate_tool_outputs,
    level2_summarize_old_turns,
    level3_drop_middle,
    message_groups,
    overflow_budget,
    truncate_lines,
)
from .config import CallableTokenCounter, ContextConfig, ExecutionLimits
from .incremental import IncrementalCompaction
from .tokens import (
    HeuristicTokenCounter,
    TokenCounter,
    content_tokens,
    estimate_tokens,
    image_tokens,
    message_tokens,
    total_tokens,
)
from .tracker import ContextTracker, ExecutionTracker, usage_context_tokens

__all__ = [
    "OMISSION_PREFIX",
    "SUMMARY_PREFIX",
    "CallableTokenCounter",
    "CompactionStrategy",
    "ContextConfig",
    "ContextTracker",
    "DefaultCompaction",
    "ExecutionLimits",
    "ExecutionTracker",
    "IncrementalCompaction",
    "HeuristicTokenCounter",
    "TokenCounter",
    "compact_messages",
    "compact_with",
    "content_tokens",
    "estimate_tokens",
    "image_tokens",
    "keep_within_budget",
    "level1_truncate_tool_outputs",
    "level2_summarize_old_turns",
    "level3_drop_middle",
    "message_groups",
    "message_tokens",
    "overflow_budget",
    "total_tokens",
    "truncate_lines",
    "usage_context_tokens",
]
