"""Every code block in docs/ marked runnable runs, offline, and prints what its page says (issue 15).

The markers are described in ``tests/docs_blocks.py``. A page that needs something outside the
process (a web API) gets it from ``SETUPS``: a context manager that starts it and returns the text
substitutions that point the page's code at it.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Callable, ContextManager, Iterator

import pytest

from docs_blocks import DOCS, ROOT, Block, blocks, lines_match, pages, run_page

pytestmark = pytest.mark.timeout(240)


@contextlib.contextmanager
def petstore() -> Iterator[dict[str, str]]:
    """docs/openapi.md reads the public Swagger Petstore: a local server answers in its place with
    the real Petstore 3.0 document (tests/fixtures/openapi) and one pet."""
    sys.path.insert(0, str(ROOT / "tests" / "openapi"))
    from openapi_helpers import FIXTURES, ApiServer, Reply

    spec = (FIXTURES / "swagger-petstore-3.0.yaml").read_bytes()
    pets = [{"id": 1, "name": "rex", "photoUrls": [], "status": "available"}]

    def reply(request) -> Reply:
        if request.path == "/api/v3/openapi.json":
            return Reply(body=spec, content_type="application/yaml")
        if request.path == "/api/v3/pet/findByStatus":
            return Reply(body=json.dumps(pets).encode())
        return Reply(status=404, body=b"{}")

    server = ApiServer()
    server.reply = reply
    try:
        yield {"https://petstore3.swagger.io/api/v3": server.url + "/api/v3"}
    finally:
        server.close()


SETUPS: dict[str, Callable[[], ContextManager[dict[str, str]]]] = {"openapi.md": petstore}
RUNNABLE = [page for page in pages() if any(block.runnable for block in blocks(page.read_text(encoding="utf-8")))]


def name(page: Path) -> str:
    return str(page.relative_to(DOCS))


@pytest.mark.parametrize("page", RUNNABLE, ids=name)
def test_runnable_blocks_run_and_print_what_the_page_shows(page: Path, tmp_path: Path) -> None:
    setup = SETUPS.get(name(page), contextlib.nullcontext)
    with setup() as substitutions:
        results = run_page(page, tmp_path, substitutions or {})
    for block, printed in results:
        if block.output is not None:
            assert lines_match(block.output, printed), (
                f"{name(page)} line {block.line}: the block printed\n{printed}\nbut the page shows\n{block.output}")


@pytest.mark.parametrize("page", pages(), ids=name)
def test_every_python_block_compiles(page: Path) -> None:
    for block in blocks(page.read_text(encoding="utf-8")):
        if block.language == "python" and "fragment" not in block.info:
            compile("\n" * (block.line - 1) + block.code, str(page), "exec")
        assert not (block.runnable and "sketch" in block.info), f"{page}:{block.line}: a sketch cannot be runnable"


def test_guides_with_examples_mark_them_runnable() -> None:
    """The pages whose examples were run by per-guide tests before keep being run (none silently dropped)."""
    expected = {"getting-started.md", "subagents.md", "sessions.md", "skills.md", "evaluation.md", "openapi.md",
                "mcp.md", "operations.md", "tools.md", "coding.md", "cli.md", "export.md"}
    assert expected <= {name(page) for page in RUNNABLE}
    getting_started = blocks((DOCS / "getting-started.md").read_text(encoding="utf-8"))
    assert all(block.runnable for block in getting_started if block.language == "python")


def test_output_matching_fails_on_a_difference() -> None:
    assert lines_match("a\n...\nd\n", "a\nb\nc\nd\n")
    assert lines_match("GET https://x/pets → 200 ...\n", "GET https://x/pets → 200 [{}]\n")
    assert not lines_match("a\nd\n", "a\nb\nd\n")
    assert not lines_match("a\n", "a\nb\n")
    assert not lines_match("a\n...\nz\n", "a\nb\n")


def test_a_failing_block_fails_the_run(tmp_path: Path) -> None:
    page = tmp_path / "bad.md"
    page.write_text("```python runnable\nprint('one')\n```\n```output\none\n```\n\n"
                    "```python runnable\nraise SystemExit('broken example')\n```\n", encoding="utf-8")
    parsed = blocks(page.read_text(encoding="utf-8"))
    assert [b.output for b in parsed] == ["one\n", None]
    (tmp_path / "work").mkdir()
    with pytest.raises(AssertionError, match="broken example"):
        run_page(page, tmp_path / "work")


def test_blocks_run_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-not-for-docs")
    page = tmp_path / "env.md"
    page.write_text("```python runnable\nimport os\nprint(os.environ.get('ANTHROPIC_API_KEY'), os.getcwd())\n```\n",
                    encoding="utf-8")
    (tmp_path / "work").mkdir()
    [(block, printed)] = run_page(page, tmp_path / "work")
    assert printed == f"None {tmp_path / 'work'}\n"
