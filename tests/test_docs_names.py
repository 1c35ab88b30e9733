"""The API names the guides mention exist, and the signatures they show are the real ones (issue 15:
docs a developer can build from without reading the source; a renamed function or a changed default
must not leave a guide behind).

Checked in the hand-written pages of ``docs/`` (``docs/api/`` is generated from the code and has its
own staleness test, tests/test_docs_api.py):

* every ``phi.a.b`` dotted name in backticks resolves to a module or attribute;
* every ``` `Name.attr` ``` in backticks whose ``Name`` is a public phi name has that attribute;
* every call written in backticks or in a ```` ```python fragment ```` block, ``Name(...)`` or
  ``Name.method(...)`` with ``Name`` a public name of phi or of one of its packages, uses only
  parameter names the callable has; when it is written as a signature (a bare ``*`` in it, a
  ``name=...`` or a ``name=<its real default>``, a fragment block, or a plain block that is one
  keyword-only call such as a config class with a comment per field) every parameter it names
  exists and each literal default it shows is the real default.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from docs_blocks import DOCS, FENCE, blocks, pages

# Where a bare public name (``McpClient``, ``SkillSet``...) is looked up, in this order.
PACKAGES = ("phi", "phi.mcp", "phi.openapi", "phi.skills", "phi.session", "phi.evaluation", "phi.coding",
            "phi.context", "phi.tools", "phi.providers.model_config", "phi.providers.base", "phi.subagent")
# Receivers the pages use for instances: ``client.call_tool(...)`` is McpClient.call_tool.
RECEIVERS = {"client": "McpClient", "agent": "Agent", "toolset": "McpToolset", "recorder": "SessionRecorder",
             "skills": "SkillSet"}
DOTTED = re.compile(r"`(phi(?:\.[A-Za-z_]\w*)+)")
ATTRIBUTE = re.compile(r"`([A-Z]\w*)\.([A-Za-z_]\w*)")
CALL = re.compile(r"`((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*\([^`]*\))")
REPO_PATH = re.compile(r"`((?:tests|scripts|examples|phi|conformance)/[\w./-]*)")
GENERATED = ("tests/artifacts/",)  # written by test runs, not committed
FRAGMENT_CALL = re.compile(r"^((?:[A-Za-z_]\w*\.)?[A-Za-z_]\w*)\((.*?)\)\s*(?:->.*?)?(?:#.*)?$", re.S | re.M)


def guide_pages() -> list[Path]:
    return [page for page in pages() if page.relative_to(DOCS).parts[0] != "api"]


def prose(page: Path) -> str:
    return FENCE.sub("", page.read_text(encoding="utf-8"))


def resolve_dotted(dotted: str) -> bool:
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for name in parts[cut:]:
            if not hasattr(found, name):
                return False
            found = getattr(found, name)
        return True
    return False


def public(name: str) -> Any:
    """The object a bare public name stands for, or None."""
    for package in PACKAGES:
        module = importlib.import_module(package)
        exported = getattr(module, "__all__", None)
        found = getattr(module, name, None)
        if exported is not None and name in exported:
            return found
        if exported is None and not name.startswith("_") and getattr(found, "__module__", None) == package:
            return found  # defined in that module, not imported into it
    return None


def callee(written: str) -> Any:
    """What ``Name`` / ``Name.method`` / ``receiver.method`` refers to, or None when it is not phi's."""
    owner, _, method = written.rpartition(".")
    if not owner:
        return public(written)
    if owner.startswith("phi"):
        return getattr(importlib.import_module(owner), method, None) if resolve_dotted(written) else None
    found = public(RECEIVERS.get(owner, owner)) if owner in RECEIVERS or owner[0].isupper() else None
    return getattr(found, method, None) if found is not None else None


def parameters(args: str) -> ast.arguments | None:
    """The text between the parentheses read as a parameter list (``…`` and ``...`` as placeholders)."""
    text = args.replace("…", "...")
    try:
        return ast.parse(f"def f({text}): pass").body[0].args  # type: ignore[attr-defined]
    except SyntaxError:
        return None


def problems(written: str, args: str, signature_form: bool) -> Iterator[str]:
    target = callee(written)
    if target is None or not callable(target):
        return
    try:
        real = inspect.signature(target)
    except (TypeError, ValueError):
        return
    shown = parameters(args)
    if shown is None:
        return
    takes_any = any(p.kind is p.VAR_KEYWORD for p in real.parameters.values())
    listed = shown.posonlyargs + shown.args + shown.kwonlyargs
    defaults = dict(zip([a.arg for a in (shown.posonlyargs + shown.args)][-len(shown.defaults):] if shown.defaults
                        else [], shown.defaults))
    defaults.update({a.arg: d for a, d in zip(shown.kwonlyargs, shown.kw_defaults) if d is not None})
    signature_form = signature_form or any(shows_default(target, real, name, value) for name, value in defaults.items())
    for arg in listed:
        name = arg.arg
        if name not in real.parameters:
            if not takes_any and (signature_form or name in defaults):
                yield f"{written}: no parameter {name!r} (it has {list(real.parameters)})"
            continue
        if not signature_form or name not in defaults:
            continue
        try:
            value = ast.literal_eval(defaults[name])
        except ValueError:
            continue  # a name or an expression: not checked
        if value is Ellipsis:
            continue
        default = real_default(target, name, real.parameters[name].default)
        if default is inspect.Parameter.empty or default != value:
            yield f"{written}: {name}={value!r} shown, but the default is {default!r}"


def shows_default(target: Any, real: inspect.Signature, name: str, node: ast.expr) -> bool:
    """``name=...`` or ``name=<its real default>``: the text lists parameters, not a usage."""
    try:
        value = ast.literal_eval(node)
    except ValueError:
        return False
    if value is Ellipsis:
        return True
    return name in real.parameters and real_default(target, name, real.parameters[name].default) == value


def real_default(target: Any, name: str, default: Any) -> Any:
    """A parameter's default; for a dataclass field with a ``default_factory``, what it makes."""
    if dataclasses.is_dataclass(target) and repr(default) == "<factory>":
        field = {f.name: f for f in dataclasses.fields(target)}[name]
        return field.default_factory()  # type: ignore[misc]
    return default


def displayed_signature(code: str) -> tuple[str, str] | None:
    """A block that is one call with keyword arguments only (``OpenApiConfig(base_url=None, ...)``
    with a comment per field) shows a signature: its callee and argument text."""
    try:
        [statement] = ast.parse(code).body
    except (SyntaxError, ValueError):
        return None
    call = statement.value if isinstance(statement, ast.Expr) else None
    if not isinstance(call, ast.Call) or call.args or not call.keywords:
        return None
    callee_text = ast.unparse(call.func)
    return callee_text, ", ".join(ast.unparse(keyword) for keyword in call.keywords)


def call_problems(page: Path) -> list[str]:
    found: list[str] = []
    for text in CALL.findall(prose(page)):
        written, _, args = text.partition("(")
        found += problems(written, args[:-1], signature_form=re.search(r"(^|,)\s*\*\s*(,|$)", args[:-1]) is not None)
    for block in blocks(page.read_text(encoding="utf-8")):
        if block.language == "python" and "fragment" in block.info:
            for written, args in FRAGMENT_CALL.findall(block.code):
                found += problems(written, args, signature_form=True)
        elif block.language == "python" and not block.runnable and (shown := displayed_signature(block.code)):
            found += problems(*shown, signature_form=True)
    return found


def name(page: Path) -> str:
    return str(page.relative_to(DOCS))


@pytest.mark.parametrize("page", guide_pages(), ids=name)
def test_dotted_phi_names_resolve(page: Path) -> None:
    assert not [dotted for dotted in DOTTED.findall(prose(page)) if not resolve_dotted(dotted)]


@pytest.mark.parametrize("page", guide_pages(), ids=name)
def test_attributes_of_public_names_exist(page: Path) -> None:
    missing = []
    for owner, attribute in ATTRIBUTE.findall(prose(page)):
        found = public(owner)
        if found is not None and not hasattr(found, attribute):
            missing.append(f"{owner}.{attribute}")
    assert not missing


@pytest.mark.parametrize("page", guide_pages(), ids=name)
def test_calls_and_signatures_match_the_code(page: Path) -> None:
    assert not call_problems(page)


def missing_paths(page: Path) -> list[str]:
    root = DOCS.parent
    return [path for path in REPO_PATH.findall(prose(page))
            if not path.startswith(GENERATED) and not (root / path.rstrip(".")).exists()]


@pytest.mark.parametrize("page", guide_pages(), ids=name)
def test_repository_paths_exist(page: Path) -> None:
    """Files a guide points to (`tests/...`, `scripts/...`, `phi/...`) are there: a renamed test or
    script must not leave the page behind."""
    assert not missing_paths(page)


def test_the_tools_page_lists_the_real_deny_patterns() -> None:
    """docs/tools.md shows phi.tools.shell.DEFAULT_DENY_PATTERNS in a plain block, columns two or more
    spaces apart (a trailing parenthesised remark is not a pattern)."""
    from phi.tools.shell import DEFAULT_DENY_PATTERNS

    text = (DOCS / "tools.md").read_text(encoding="utf-8")
    [listing] = [block.code for block in blocks(text) if not block.language and "rm -r /" in block.code]
    shown = [word for line in listing.splitlines()
             for word in re.split(r" {2,}", re.sub(r" {2,}\(.*\)$", "", line).strip()) if word]
    assert shown == list(DEFAULT_DENY_PATTERNS)


def test_a_wrong_name_default_or_parameter_is_found(tmp_path: Path) -> None:
    page = tmp_path / "guide.md"
    page.write_text(
        "Use `phi.agent.Agent`, `phi.no_such_thing` and `RetryConfig.none()`, `RetryConfig.never()`.\n"
        "Defaults: `RetryConfig(max_retries=3, *, initial_delay_ms=500)`; `Agent(model=\"gpt-5\")` is fine,\n"
        "`RetryConfig(max_retrys=5)` is not, nor `RetryConfig.delay_for(n, retry_after_ms=...)`.\n\n"
        "Run by `tests/test_docs_runnable.py` and `tests/test_docs_gone.py`; see `tests/artifacts/x.png`.\n"
        "```python fragment\nMcpClient.connect_stdio(command, args=(), *, timeout=30.0, call_timeout=60.0)\n"
        "client.call_tool(name, arguments=None, *, deadline=None)\n```\n"
        "```python\nOpenApiConfig(\n    custom_headers={},  # a comment\n    timeout_secs=60.0,\n)\n```\n",
        encoding="utf-8")
    assert [d for d in DOTTED.findall(prose(page)) if not resolve_dotted(d)] == ["phi.no_such_thing"]
    assert [f"{o}.{a}" for o, a in ATTRIBUTE.findall(prose(page)) if not hasattr(public(o), a)] == ["RetryConfig.never"]
    assert missing_paths(page) == ["tests/test_docs_gone.py"]
    assert call_problems(page) == [
        "RetryConfig: initial_delay_ms=500 shown, but the default is 1000",
        "RetryConfig: no parameter 'max_retrys' (it has ['max_retries', 'initial_delay_ms', 'backoff_multiplier', "
        "'max_delay_ms', 'jitter', 'max_retry_after_ms'])",
        "RetryConfig.delay_for: no parameter 'n' (it has ['self', 'attempt', 'retry_after_ms'])",
        "McpClient.connect_stdio: call_timeout=60.0 shown, but the default is 300.0",
        "client.call_tool: no parameter 'deadline' (it has ['self', 'name', 'arguments', 'timeout', 'cancel', "
        "'on_progress', 'meta'])",
        "OpenApiConfig: timeout_secs=60.0 shown, but the default is 30.0",
    ]
