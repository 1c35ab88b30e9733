"""docs/providers/: one page per wire protocol phi ships, each listing every field of the
integration contract (seed 000 REQ-174). The facts on each page are checked by its "Try it
offline" block, which tests/test_docs_runnable.py runs against the provider code."""

from __future__ import annotations

import re
from pathlib import Path

from phi.providers import registry

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
