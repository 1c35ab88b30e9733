"""docs/providers/: one page per wire protocol phi ships, each listing every field of the
integration contract (seed 000 REQ-174). The facts on each page are checked by its "Try it
offline" block, which tests/test_docs_runnable.py runs against the provider code, and its
"Environment" row here: it names exactly the variables the provider code reads; the stop-reason and
error tables agree with the provider modules' own tables."""

from __future__ import annotations

import importlib
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from phi import UserMessage
from phi.concurrency.cancel import CancellationToken
from phi.errors import ConfigError
from phi.providers import registry
from phi.providers.base import ProviderError, StreamConfig
from phi.providers.model_config import ModelConfig

from docs_blocks import blocks

PAGES = Path(__file__).resolve().parent.parent / "docs" / "providers"
SECTIONS = ("## At a glance", "## Configuration", "## Authentication", "## Request format", "## Streaming events",
            "## Stop reasons", "## Errors and retries", "## Capabilities", "## Quirks", "## Try it offline")
GLANCE = ("`ModelConfig.api`", "Endpoint", "Authentication", "Environment", "Request format", "Response format")


def page_for(api: str) -> Path:
    """The page whose "At a glance" table names ``api`` as its ModelConfig.api."""
    found = [page for page in PAGES.glob("*.md")
             if re.search(rf"^\| `ModelConfig\.api` \| `{re.escape(api)}` \|$", page.read_text(encoding="utf-8"), re.M)]
    assert len(found) == 1, f"{api}: {found}"
    return found[0]


def test_every_shipped_protocol_has_one_page() -> None:
    apis = set(registry.BUILTIN)
    pages = {page_for(api) for api in apis}
    assert len(apis) == 8 and pages == set(PAGES.glob("*.md"))


def test_every_page_lists_every_field_of_the_contract() -> None:
    for page in PAGES.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        positions = [text.find(section + "\n") for section in SECTIONS]
        assert -1 not in positions, f"{page.name}: missing {[s for s, p in zip(SECTIONS, positions) if p < 0]}"
        assert positions == sorted(positions), f"{page.name}: sections out of order"
        glance = text.split("## At a glance", 1)[1].split("\n## ", 1)[0]
        for row in GLANCE:
            assert re.search(rf"^\| {re.escape(row)} \| \S", glance, re.M), f"{page.name}: no {row!r} row"
        offline = text.split("## Try it offline", 1)[1]
        runnable = [block for block in blocks(offline) if block.runnable]
        assert runnable and all(block.output for block in runnable), f"{page.name}: the demo must show its output"


# --------------------------------------------------------------------------- environment variables

class RecordingEnviron(dict):
    """``os.environ`` stand-in that records every variable the provider code looks up."""

    def __init__(self, values: dict[str, str], seen: set[str]) -> None:
        super().__init__(values)
        self.seen = seen

    def get(self, key, default=None):  # type: ignore[override]
        self.seen.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.seen.add(key)
        return super().__getitem__(key)

    def __contains__(self, key) -> bool:
        self.seen.add(key)
        return super().__contains__(key)


def model_configs(api: str) -> list[tuple[ModelConfig, set[str]]]:
    """The page's model, built as its constructor row shows, plus the variants that read other
    variables; each with the variables to leave unset (to reach a fallback)."""
    made = {
        "anthropic_messages": [(ModelConfig.anthropic(), set())],
        "openai_completions": [(ModelConfig.openai(), set())],
        "openai_responses": [(ModelConfig.openai_responses(), set())],
        "azure_openai_responses": [(ModelConfig.azure_openai("dep"), set()),
                                   (ModelConfig.azure_openai("dep", options={"auth": "entra"}), set())],
        "google_generative_ai": [(ModelConfig.google(), set())],
        "google_vertex": [(ModelConfig.vertex(), set())],
        "bedrock_converse_stream": [(ModelConfig.bedrock(), set()),
                                    (ModelConfig.bedrock(), {"AWS_BEARER_TOKEN_BEDROCK"})],  # SigV4
        "proxy": [(ModelConfig.proxy("https://proxy.test/stream", "claude-sonnet-4-5"), set())],
    }
    return made[api]


def variables_read(api: str, monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """Every environment variable a request of ``api`` looks up, found by starting from an empty
    environment and setting each variable the code asked for until the request can be built (it is
    never sent: ``run_stream`` is replaced)."""
    sent: list[Any] = []
    for target in registry.BUILTIN.values():
        importlib.import_module(target.partition(":")[0], registry.__package__)
    for module in list(sys.modules.values()):
        if getattr(module, "__name__", "").startswith("phi.providers.") and hasattr(module, "run_stream"):
            monkeypatch.setattr(module, "run_stream", lambda request, *rest: sent.append(request))
    seen: set[str] = set()
    for model, withheld in model_configs(api):
        values: dict[str, str] = {}
        for _ in range(10):
            monkeypatch.setattr(os, "environ", RecordingEnviron(values, seen))
            config = StreamConfig(model, messages=[UserMessage.from_text("hi")])
            try:
                registry.ProviderRegistry.default().get(model.api).stream(config, lambda event: None,
                                                                          CancellationToken())
                break
            except (ProviderError, ConfigError):
                values = {name: "https://endpoint.test" if "ENDPOINT" in name or "BASE_URL" in name
                          else "value-for-test" for name in seen - withheld}
        else:
            raise AssertionError(f"{api}: no request could be built from the variables {sorted(seen)}")
    assert len(sent) == len(model_configs(api)), api
    return seen


@pytest.mark.parametrize("api", sorted(registry.BUILTIN))
def test_the_environment_row_lists_exactly_the_variables_the_code_reads(api: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    glance = page_for(api).read_text(encoding="utf-8").split("## At a glance", 1)[1].split("\n## ", 1)[0]
    row = re.search(r"^\| Environment \| (.*)$", glance, re.M)
    assert row is not None
    listed = set(re.findall(r"`([A-Z][A-Z0-9_]{2,})`", row.group(1)))
    assert listed == variables_read(api, monkeypatch)


# --------------------------------------------------------------------------- mapping tables

# The provider tables a page documents: its stop-reason paragraph and its error table.
STOP_TABLES = {"anthropic_messages": ("phi.providers.anthropic", "STOP_REASONS"),
               "openai_completions": ("phi.providers.openai", "FINISH_REASONS"),
               "bedrock_converse_stream": ("phi.providers.bedrock", "STOP_REASONS"),
               "google_generative_ai": ("phi.providers.google", "FINISH_REASONS")}
ERROR_TABLES = {"anthropic_messages": ("phi.providers.anthropic", "ERROR_KINDS"),
                "bedrock_converse_stream": ("phi.providers.bedrock", "EXCEPTION_KINDS")}
BACKTICKED = re.compile(r"`([^`]+)`")


def section(api: str, heading: str) -> str:
    return page_for(api).read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]


def documented_stop_reasons(text: str) -> dict[str, str]:
    """``a``, ``b`` → ``stop``; … pieces of the first paragraph (``anything else`` rules are skipped)."""
    paragraph = text.strip().split("\n\n", 1)[0].replace("\n", " ")
    found: dict[str, str] = {}
    for piece in re.split(r";|\.\s", paragraph):
        if "→" in piece:
            left, right = piece.split("→", 1)
            target = BACKTICKED.search(right)
            assert target is not None, piece
            found.update({name: target.group(1) for name in BACKTICKED.findall(left)})
    return found


def documented_error_kinds(text: str) -> dict[str, str]:
    """Rows ``| `a` (…), `b` | `kind` … |`` of the page's error table."""
    found: dict[str, str] = {}
    for first, second in re.findall(r"^\| (`[^|]*) \| (`[^|]*)\|$", text, re.M):
        kind = BACKTICKED.search(second)
        assert kind is not None
        found.update({name: kind.group(1) for name in BACKTICKED.findall(first)})
    return found


def check_table(documented: dict[str, str], table: dict[str, Any]) -> list[str]:
    """Every entry of ``table`` documented with its value; every documented entry the table has agrees."""
    value = {key: (entry[0] if isinstance(entry, tuple) else entry).value for key, entry in table.items()}
    problems = [f"{key} not documented" for key in value if key not in documented]
    problems += [f"{key}: page says {shown}, code says {value[key]}" for key, shown in documented.items()
                 if key in value and value[key] != shown]
    return problems


@pytest.mark.parametrize("api", sorted(STOP_TABLES))
def test_stop_reasons_on_the_page_are_the_codes(api: str) -> None:
    module, table = STOP_TABLES[api]
    assert not check_table(documented_stop_reasons(section(api, "Stop reasons")),
                           getattr(importlib.import_module(module), table))


@pytest.mark.parametrize("api", sorted(ERROR_TABLES))
def test_error_kinds_on_the_page_are_the_codes(api: str) -> None:
    module, table = ERROR_TABLES[api]
    assert not check_table(documented_error_kinds(section(api, "Errors and retries")),
                           getattr(importlib.import_module(module), table))


def test_a_wrong_mapping_is_found() -> None:
    text = "`end_turn` → `stop`; `max_tokens` → `stop`; anything else → `stop`.\n\nMore.\n"
    documented = documented_stop_reasons(text)
    assert documented == {"end_turn": "stop", "max_tokens": "stop"}
    from phi.providers.anthropic import STOP_REASONS

    problems = check_table(documented, STOP_REASONS)
    assert "max_tokens: page says stop, code says length" in problems and "tool_use not documented" in problems
    table = "| `error.type` | kind |\n|---|---|\n| `rate_limit_error` | `network` |\n"
    assert documented_error_kinds(table) == {"rate_limit_error": "network"}
