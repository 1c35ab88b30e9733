"""A tool made per session from one ``def`` (a closure over the session's state, run again each
session): each gets exactly what its own definition says — its annotations as resolved now, its
defaults, its own schema — and keeps nothing of its session alive once dropped (SPEC TOOL-1, TOOL-2;
docs/many-sessions.md). Found by the issue-36 attack on a per-definition cache, since removed; kept
so that no cache can come back that breaks them."""

# no "from __future__ import annotations" here: the tools below annotate with closure values

import dataclasses
import gc
import sys
import types
import weakref
from typing import Any, Literal, Union

from phi.tools.function_tool import DecoratedTool, tool


@dataclasses.dataclass
class Apple:
    weight: int


@dataclasses.dataclass
class Pear:
    weight: int


def _union_tool(first: type, second: type) -> DecoratedTool[..., Any]:
    def describe(fruit: Union[first, second]) -> str:  # type: ignore[valid-type]
        """Describe a fruit."""
        return type(fruit).__name__

    return tool(describe)


def test_each_session_converts_with_its_own_union_order() -> None:
    args = {"fruit": {"weight": 1}}  # fits both: the first member of the union wins
    assert _union_tool(Apple, Pear).execute(args, None).content[0].text == "Apple"  # type: ignore[arg-type, union-attr]
    assert _union_tool(Pear, Apple).execute(args, None).content[0].text == "Pear"  # type: ignore[arg-type, union-attr]


def test_each_session_shows_its_own_literal_order() -> None:
    def make(options: tuple[str, ...]) -> DecoratedTool[..., Any]:
        def pick(mode: Literal[options]) -> str:  # type: ignore[valid-type]
            return str(mode)

        return tool(pick)

    assert make(("fast", "careful")).parameters["properties"]["mode"]["enum"] == ["fast", "careful"]
    assert make(("careful", "fast")).parameters["properties"]["mode"]["enum"] == ["careful", "fast"]


_MODULE = '''
from __future__ import annotations
import dataclasses

@dataclasses.dataclass
class Query:
    text: str

def make_tool():
    def search(query: Query) -> str:
        return ",".join(sorted(vars(query)))
    return search
'''


def test_a_string_annotation_resolves_to_what_the_module_binds_now() -> None:
    module = types.ModuleType("phi_test_rebound_module")
    sys.modules[module.__name__] = module
    try:
        exec(compile(_MODULE, "<module>", "exec"), module.__dict__)
        assert "text" in tool(module.make_tool()).parameters["properties"]["query"]["properties"]
        exec("@dataclasses.dataclass\nclass Query:\n    words: list[str]\n", module.__dict__)  # a cell run again
        again = tool(module.make_tool())
        assert list(again.parameters["properties"]["query"]["properties"]) == ["words"]
        assert again.execute({"query": {"words": ["a"]}}, None).content[0].text == "words"  # type: ignore[arg-type, union-attr]
    finally:
        del sys.modules[module.__name__]


class _SessionState:
    """What a session's namespace holds (its connection, its files, ...)."""


def test_a_dropped_tool_keeps_its_session_namespace_nowhere() -> None:
    source = 'def lookup(key: str) -> str:\n    """Look a key up."""\n    return type(STATE).__name__ + key\n'
    code = next(c for c in compile(source, "<session tool>", "exec").co_consts if isinstance(c, types.CodeType))
    for _ in range(2):  # the second session's def is one phi has seen before
        state = _SessionState()
        alive = weakref.ref(state)
        namespace = {"STATE": state, "__builtins__": __builtins__}
        fn = types.FunctionType(code, namespace, "lookup")
        fn.__annotations__ = {"key": str, "return": str}
        made = tool(fn)
        assert made.execute({"key": "k"}, None).content[0].text == "_SessionStatek"  # type: ignore[arg-type, union-attr]
        was = gc.isenabled()
        gc.disable()
        try:
            del made, fn, namespace, state
            assert alive() is None  # freed by reference counting: nothing of phi's holds it
        finally:
            if was:
                gc.enable()
