"""The ``<environment>`` block of the system prompt (SPEC §14 CODE-5; seed 004 §6.3).

One line per fact, in the seed's order: working directory, whether it is a git repository, the git
branch, platform, OS version, today's date, the model and its knowledge cutoff. The block depends
only on its inputs (pass ``today`` and ``git`` to make it fully reproducible). Two lines are left
out rather than filled with a placeholder: ``Git branch`` outside a repository and ``Knowledge
cutoff`` when it is not known.
"""

from __future__ import annotations

import datetime
import enum
from typing import Final, Literal

from ..tools.environment import ExecutionEnvironment
from .git_context import GitSnapshot, git_snapshot

__all__ = ["environment_block", "UNSET"]


class _Unset(enum.Enum):
    # an enum member, so that ``git is UNSET`` narrows the type of ``git``
    UNSET = "UNSET"

    def __repr__(self) -> str:
        return "UNSET"


#: Default of ``git``: take a snapshot of the environment's working directory.
UNSET: Final = _Unset.UNSET


def _one_line(value: object) -> str:
    """``value`` as text on a single line, so no value can end the block early or add a line."""
    return " ".join(str(value).splitlines())


def environment_block(env: ExecutionEnvironment, *, model: str, knowledge_cutoff: str | None = None,
                      today: datetime.date | None = None,
                      git: GitSnapshot | None | Literal[_Unset.UNSET] = UNSET) -> str:
    """The ``<environment>`` block for ``env`` (a :class:`phi.tools.environment.ExecutionEnvironment`).

    ``today`` defaults to the local date; ``git`` to :func:`git_snapshot` of the environment's
    working directory (pass None to state that it is not a repository, or a snapshot taken before).
    """
    cwd = env.working_directory()
    snapshot = git_snapshot(cwd) if git is UNSET else git
    date = today if today is not None else datetime.date.today()
    lines = ["<environment>", f"Working directory: {_one_line(cwd)}",
             f"Is git repository: {'true' if snapshot is not None else 'false'}"]
    if snapshot is not None:
        lines.append(f"Git branch: {_one_line(snapshot.branch_label())}")
    lines += [f"Platform: {_one_line(env.platform())}", f"OS version: {_one_line(env.os_version())}",
              f"Today's date: {date.isoformat()}", f"Model: {_one_line(model)}"]
    if knowledge_cutoff:
        lines.append(f"Knowledge cutoff: {_one_line(knowledge_cutoff)}")
    lines.append("</environment>")
    return "\n".join(lines)
