"""Links between the pages of docs/ resolve — files and #anchors — and docs/index.md reaches every
page."""

from __future__ import annotations

import re
from pathlib import Path

from docs_blocks import DOCS, FENCE, pages

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    return re.sub(r"\s", "-", re.sub(r"[^\w\s-]", "", text))


def links(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))  # code blocks hold no links
    return LINK.findall(text)


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def broken(page: Path) -> list[str]:
    found = []
    for target in links(page):
        if re.match(r"[a-z]+:", target):
            continue  # http(s):, mailto:
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            found.append(target)
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            found.append(target)
    return found


def test_every_link_resolves() -> None:
    problems = {str(page.relative_to(DOCS)): broken(page) for page in pages()}
    assert not {name: bad for name, bad in problems.items() if bad}


def test_the_index_reaches_every_page() -> None:
    seen, todo = set(), [DOCS / "index.md"]
    while todo:
        page = todo.pop()
        if page in seen or not page.exists() or page.suffix != ".md":
            continue
        seen.add(page)
        todo += [(page.parent / target.partition("#")[0]).resolve() for target in links(page)
                 if not re.match(r"[a-z]+:", target) and target.partition("#")[0]]
    assert set(pages()) <= seen, sorted(str(p.relative_to(DOCS)) for p in set(pages()) - seen)


def test_a_broken_link_or_anchor_is_found(tmp_path: Path) -> None:
    page = tmp_path / "a.md"
    (tmp_path / "b.md").write_text("# Title here\n\n## The `x` part\n", encoding="utf-8")
    page.write_text("[ok](b.md#the-x-part) [no file](c.md) [no anchor](b.md#nothing) [web](https://x.y)\n"
                    "```\n[in code](d.md)\n```\n", encoding="utf-8")
    assert broken(page) == ["c.md", "b.md#nothing"]
