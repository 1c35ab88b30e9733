"""The layered system prompt of a coding session (SPEC §14 CODE-5; seed 004 §6.1, §9.8).

Layers, in order, later ones taking precedence:

1. the profile's base instructions (:mod:`phi.coding.instructions`, or ``base`` when the profile
   object supplies its own text);
2. the ``<environment>`` block (:mod:`phi.coding.environment_context`) followed by the git
   snapshot (:mod:`phi.coding.git_context`), both taken when the prompt is built;
3. the tool descriptions, when the caller passes ``tool_summary`` (a profile may instead keep
   them with its base instructions);
4. the project documents for the profile (:mod:`phi.coding.project_docs`);
5. the user's override, last, under a heading that says it takes precedence.

Empty layers are left out; layers are separated by a blank line.
"""

from __future__ import annotations

import datetime
import os

from ..tools.environment import ExecutionEnvironment
from ..tools.sandbox import SandboxUnavailable
from .environment_context import environment_block
from .git_context import root_and_snapshot
from .instructions import base_instructions
from .project_docs import DEFAULT_BUDGET_BYTES, discover_project_docs
from .sandboxing import helper_sandbox

__all__ = ["build_system_prompt", "USER_OVERRIDE_HEADING"]

USER_OVERRIDE_HEADING = ("# Instructions from the user\n"
                         "These come last and take precedence over everything above.")


def build_system_prompt(profile: str, env: ExecutionEnvironment, *, model: str, user_override: str | None = None,
                        cwd: str | os.PathLike[str] | None = None, knowledge_cutoff: str | None = None,
                        base: str | None = None, tool_summary: str | None = None,
                        today: datetime.date | None = None,
                        project_doc_budget: int = DEFAULT_BUDGET_BYTES) -> str:
    """The system prompt for ``profile`` running in ``env`` (a ``phi.tools.environment.ExecutionEnvironment``).

    ``cwd`` is where the git snapshot and project documents are looked for (default: the
    environment's working directory). A blank ``user_override`` or ``tool_summary`` adds nothing.
    """
    where = os.fspath(cwd) if cwd is not None else env.working_directory()
    try:  # git runs what the repository's config says: inside the sandbox when commands are
        sandbox, use_git = helper_sandbox(env), True
    except SandboxUnavailable:
        sandbox, use_git = None, False
    root, snapshot = root_and_snapshot(where, sandbox=sandbox) if use_git else (None, None)
    layers = [
        base if base is not None else base_instructions(profile),
        environment_block(env, model=model, knowledge_cutoff=knowledge_cutoff, today=today, git=snapshot),
        snapshot.render() if snapshot is not None else "",
        tool_summary or "",
        discover_project_docs(where, profile, project_doc_budget, sandbox=sandbox, use_git=False,
                              known_root=root),
        f"{USER_OVERRIDE_HEADING}\n\n{user_override.strip()}" if user_override and user_override.strip() else "",
    ]
    return "\n\n".join(layer.strip("\n") for layer in layers if layer.strip())
