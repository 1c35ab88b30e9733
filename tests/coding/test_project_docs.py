"""Project document discovery (seed 004 §6.5) on real git repositories built in a temp dir."""

from __future__ import annotations

import logging
import os

import pytest

from phi.coding.project_docs import (DEFAULT_BUDGET_BYTES, discover_project_docs, find_project_docs,
                                     truncation_marker)

from .git_repo import commit_all, init_repo, isolated_git, needs_git, write  # noqa: F401 (fixture)

pytestmark = [needs_git, pytest.mark.usefixtures("isolated_git")]

OWN = {"openai": ".codex/instructions.md", "anthropic": "CLAUDE.md", "gemini": "GEMINI.md"}


@pytest.fixture
def nested(tmp_path):
    """A repository with every kind of document at the root, in ``app/`` and in ``app/web/``."""
    root = init_repo(tmp_path / "repo")
    for directory in ("", "app/", "app/web/"):
        where = directory.rstrip("/") or "root"
        write(root, directory + "AGENTS.md", f"agents at {where}\n")
        for profile, name in OWN.items():
            write(root, directory + name, f"{profile} notes at {where}\n")
    write(root, "elsewhere/AGENTS.md", "agents in a sibling directory\n")
    commit_all(root, "docs everywhere")
    return root


@pytest.mark.parametrize("profile", sorted(OWN))
def test_each_profile_loads_agents_md_and_only_its_own_file_root_first(nested, profile):
    docs = find_project_docs(nested / "app" / "web", profile)
    own = OWN[profile]
    assert [d.path for d in docs] == ["AGENTS.md", own, f"app/AGENTS.md", f"app/{own}",
                                      "app/web/AGENTS.md", f"app/web/{own}"]
    text = discover_project_docs(nested / "app" / "web", profile)
    order = [text.index(f"agents at root"), text.index(f"{profile} notes at root"),
             text.index("agents at app\n"), text.index(f"{profile} notes at app\n"),
             text.index("agents at app/web"), text.index(f"{profile} notes at app/web")]
    assert order == sorted(order)
    for other in set(OWN) - {profile}:
        assert f"{other} notes" not in text
    assert "sibling directory" not in text  # only the path from the root to the working directory


def test_working_directory_at_the_root_loads_only_the_root_documents(nested):
    assert [d.path for d in find_project_docs(nested, "anthropic")] == ["AGENTS.md", "CLAUDE.md"]


def test_untracked_and_uncommitted_documents_count_too(nested):
    write(nested, "app/web/AGENTS.md", "agents at app/web, edited\n")
    write(nested, "app/web/deeper/CLAUDE.md", "brand new, never committed\n")
    text = discover_project_docs(nested / "app" / "web" / "deeper", "anthropic")
    assert "agents at app/web, edited" in text and "brand new, never committed" in text
    assert text.index("agents at app/web, edited") < text.index("brand new, never committed")


def test_unknown_profile_loads_agents_md_only(nested):
    assert [d.path for d in find_project_docs(nested / "app", "mistral")] == ["AGENTS.md", "app/AGENTS.md"]


def test_no_documents_gives_empty_text(tmp_path):
    root = init_repo(tmp_path / "empty")
    write(root, "README.md", "not an instruction file\n")
    (root / "src").mkdir()
    assert discover_project_docs(root / "src", "openai") == ""


def test_non_git_directory_uses_only_the_working_directory(tmp_path):
    write(tmp_path, "AGENTS.md", "above the working directory\n")
    work = tmp_path / "work"
    write(work, "AGENTS.md", "in the working directory\n")
    write(work, "GEMINI.md", "gemini here\n")
    text = discover_project_docs(work, "gemini")
    assert "in the working directory" in text and "gemini here" in text
    assert "above the working directory" not in text
    assert [d.path for d in find_project_docs(work, "gemini")] == ["AGENTS.md", "GEMINI.md"]


def test_missing_working_directory_gives_empty_text(tmp_path):
    assert discover_project_docs(tmp_path / "does-not-exist", "openai") == ""


def test_budget_overflow_truncates_with_the_marker_and_drops_later_documents(tmp_path):
    root = init_repo(tmp_path / "big")
    write(root, "AGENTS.md", "R" * 20_000 + "\nEND OF ROOT\n")
    write(root, "pkg/AGENTS.md", "P" * 20_000 + "\nEND OF PKG\n")
    write(root, "pkg/sub/AGENTS.md", "the deepest document\n")
    text = discover_project_docs(root / "pkg" / "sub", "openai")
    assert text.endswith("[Project instructions truncated at 32KB]")
    assert "END OF ROOT" in text and "END OF PKG" not in text and "the deepest document" not in text
    body = text[:-len("\n\n" + truncation_marker(DEFAULT_BUDGET_BYTES))]
    assert len(body.encode("utf-8")) <= DEFAULT_BUDGET_BYTES
    assert len(body.encode("utf-8")) > DEFAULT_BUDGET_BYTES - 200  # the budget is used, not wasted
    assert body.count("<project_doc") == body.count("</project_doc>") == 2  # the cut document is closed


def test_budget_that_fits_exactly_has_no_marker(tmp_path):
    root = init_repo(tmp_path / "fit")
    write(root, "AGENTS.md", "x" * 100)
    full = discover_project_docs(root, "openai", budget_bytes=10_000)
    size = len(full.encode("utf-8"))
    assert discover_project_docs(root, "openai", budget_bytes=size) == full
    cut = discover_project_docs(root, "openai", budget_bytes=size - 1)
    assert cut.endswith(f"[Project instructions truncated at {size - 1} bytes]")
    assert "x" * 99 in cut and "x" * 100 not in cut


def test_truncation_never_splits_a_character(tmp_path):
    root = init_repo(tmp_path / "utf8")
    write(root, "AGENTS.md", "é" * 40_000)  # two bytes each
    for budget in (4096, 4097, 4098, 4099):
        text = discover_project_docs(root, "openai", budget_bytes=budget)
        body = text[:text.rindex("\n\n[Project instructions truncated")]
        assert len(body.encode("utf-8")) <= budget
        assert "\ufffd" not in text


def test_budget_must_be_positive(tmp_path):
    with pytest.raises(ValueError):
        discover_project_docs(tmp_path, "openai", budget_bytes=0)


def test_binary_and_non_utf8_documents_are_skipped_with_a_log_line(tmp_path, caplog):
    root = init_repo(tmp_path / "odd")
    write(root, "AGENTS.md", b"\x00\x01binary")
    write(root, "CLAUDE.md", b"caf\xe9 latin-1")
    write(root, "sub/AGENTS.md", "\ufeffreadable, with a BOM\n")
    with caplog.at_level(logging.WARNING, logger="phi.coding.project_docs"):
        docs = find_project_docs(root / "sub", "anthropic")
    assert [(d.path, d.text) for d in docs] == [("sub/AGENTS.md", "readable, with a BOM\n")]
    assert sum("not UTF-8 text" in r.getMessage() for r in caplog.records) == 2


def test_a_directory_named_like_a_document_is_skipped(tmp_path):
    root = init_repo(tmp_path / "dir")
    (root / "AGENTS.md").mkdir()
    write(root, "CLAUDE.md", "claude\n")
    assert [d.path for d in find_project_docs(root, "anthropic")] == ["CLAUDE.md"]


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="symlinks are not available on this platform")
def test_symlink_leaving_the_repository_is_not_followed(tmp_path):
    secret = write(tmp_path, "outside/secret.txt", "do not leak this\n")
    root = init_repo(tmp_path / "repo")
    os.symlink(secret, root / "AGENTS.md")
    write(root, "shared.md", "shared inside the repo\n")
    os.symlink(root / "shared.md", root / "CLAUDE.md")
    text = discover_project_docs(root, "anthropic")
    assert "do not leak this" not in text and "shared inside the repo" in text


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are not available on this platform")
def test_a_named_pipe_is_skipped_without_blocking(tmp_path):
    root = init_repo(tmp_path / "fifo")
    os.mkfifo(root / "AGENTS.md")
    write(root, "GEMINI.md", "gemini\n")
    assert [d.path for d in find_project_docs(root, "gemini")] == ["GEMINI.md"]
