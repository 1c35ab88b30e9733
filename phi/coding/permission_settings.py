"""The settings files the permission rules come from (SPEC §14 CODE-8, §15 CLI-14; issue 34 item 4).

The project's ``.phi/settings.json`` in the workspace, then the user's ``$PHI_HOME/settings.json``
(``~/.phi``, where phi keeps its sessions and history), each::

    {"permissions": {"allow": ["shell(npm test *)"], "ask": [...], "deny": ["read_file(.env)"]}}

A file that is not there holds no rules. A file that is not valid JSON, a key of ``permissions``
other than ``allow``, ``ask`` and ``deny``, or a rule phi cannot read is a
:class:`~phi.coding.permissions.PermissionRuleError` naming the file and the entry; other top-level
keys are left to other settings.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Mapping, cast

from ..json_values import is_array
from .permissions import EFFECTS, PermissionRule, PermissionRuleError, PermissionRules

PROJECT_SETTINGS = os.path.join(".phi", "settings.json")


def project_settings_path(workspace: str | os.PathLike[str]) -> Path:
    """The project's settings file: ``.phi/settings.json`` in the workspace."""
    return Path(workspace) / PROJECT_SETTINGS


def user_settings_path(env: Mapping[str, str] | None = None) -> Path:
    """The user's settings file: ``$PHI_HOME/settings.json``, ``PHI_HOME`` defaulting to ``~/.phi``."""
    environment = os.environ if env is None else env
    return Path(os.path.expanduser(environment.get("PHI_HOME") or "~/.phi")) / "settings.json"


def read_settings_rules(path: str | os.PathLike[str], source: str | None = None,
                        content: bytes | None = None) -> list[PermissionRule]:
    """The rules of one settings file (none when it does not exist), each with ``source`` (default
    ``file PATH``); :class:`PermissionRuleError` naming the file and the entry for anything wrong.
    ``content``: the file's bytes, already read (the caller checked their trust)."""
    shown = os.fspath(path)
    try:
        text = (Path(path).read_bytes() if content is None else content).decode("utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as error:
        raise PermissionRuleError(f"cannot read it ({error})", shown) from None
    try:
        settings: object = json.loads(text)
    except json.JSONDecodeError as error:
        raise PermissionRuleError(f"not valid JSON: {error.msg} (line {error.lineno}, column {error.colno})",
                                  shown) from None
    if not isinstance(settings, dict):
        raise PermissionRuleError("the settings must be a JSON object ({\"permissions\": {...}})", shown)
    permissions = cast("dict[str, object]", settings).get("permissions")
    if permissions is None:
        return []
    if not isinstance(permissions, dict):
        raise PermissionRuleError("must be an object with allow, ask and deny lists", shown, "permissions")
    label = source if source is not None else f"file {shown}"
    rules: list[PermissionRule] = []
    for key, entries in cast("dict[str, object]", permissions).items():
        where = f"permissions.{key}"
        if key not in EFFECTS:
            raise PermissionRuleError(f"unknown key {key!r}; the keys are allow, ask and deny", shown, where)
        if not is_array(entries):
            raise PermissionRuleError("must be a list of rules such as \"shell \\\"npm test *\\\"\"", shown, where)
        for index, entry in enumerate(entries):
            if not isinstance(entry, str):
                raise PermissionRuleError(f"a rule is a string, not {json.dumps(entry)[:80]}", shown,
                                          f"{where}[{index}]")
            try:
                rules.append(PermissionRule.parse(str(key), entry, label))
            except PermissionRuleError as error:
                raise PermissionRuleError(str(error), shown, f"{where}[{index}]") from None
    return rules


def settings_files(workspace: str | os.PathLike[str], env: Mapping[str, str] | None = None
                   ) -> list[tuple[str, Path]]:
    """``(kind, path)`` of the settings files read for ``workspace``: ``project`` then ``user`` (one
    file once, when the workspace is the home of phi)."""
    project, user = project_settings_path(workspace), user_settings_path(env)
    same = os.path.realpath(project) == os.path.realpath(user)
    return [("project", project)] + ([] if same else [("user", user)])


def load_permission_rules(workspace: str | os.PathLike[str] = ".", env: Mapping[str, str] | None = None
                          ) -> PermissionRules:
    """The rules of the project's and the user's settings files (see the module docstring), rooted
    at ``workspace``; their sources are ``project file PATH`` and ``user file PATH``."""
    rules: list[PermissionRule] = []
    for kind, path in settings_files(workspace, env):
        rules += read_settings_rules(path, f"{kind} file {path}")
    return PermissionRules(rules, workspace)


__all__ = ["PROJECT_SETTINGS", "project_settings_path", "user_settings_path", "read_settings_rules", "settings_files",
           "load_permission_rules"]
