"""The exported page in headless Chromium (issue 15 acceptance): no console errors (a script error,
a CSP violation and a blocked load are all console messages), the page's script ran to its end
(``<body data-ready="1">``) and nothing hostile ran (no ``data-pwned``), the DOM after the script
shows the conversation and the loop tree, and a screenshot is saved as a test artifact.

Chromium is Debian's ``chromium`` (installed by scripts/install-debian-peers where possible); without
a chromium binary these tests are skipped with that reason."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from export_helpers import HOSTILE
from page_parser import parse_page

from phi.export.command import main

BROWSER = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
pytestmark = pytest.mark.skipif(BROWSER is None, reason="no chromium binary on PATH (scripts/install-debian-peers "
                                                        "installs Debian's chromium when run as root with apt)")
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
_CONSOLE = re.compile(r":CONSOLE[:(]")


def chromium(page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
               f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0", "--window-size=1280,1600",
               "--virtual-time-budget=3000", *args, page.as_uri()]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def console_messages(run: subprocess.CompletedProcess) -> list[str]:
    return [line for line in run.stderr.splitlines() if _CONSOLE.search(line)]


@pytest.fixture(scope="module")
def exported(recorded, tmp_path_factory):
    out = tmp_path_factory.mktemp("browser") / "session.html"
    assert main([recorded.session_id, "--html", str(out), "--store", recorded.store.directory]) == 0
    return out


def test_page_runs_without_console_errors_and_shows_conversation_and_tree(exported, recorded, tmp_path):
    run = chromium(exported, tmp_path / "profile", "--dump-dom")
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run) == []
    dom = parse_page(run.stdout)
    body = dom.find("body")
    assert body.attrs.get("data-ready") == "1" and "data-pwned" not in body.attrs
    main_text = dom.find("main").text()
    assert "Please update the notes " + HOSTILE in main_text and "All done" in main_text
    assert "+beta patched" in main_text and "child found: beta patched" in main_text
    tree = dom.find("nav", id="tree")
    assert len(tree.find_all("a")) == 4 and tree.find("li", "sub-agent") and tree.find("li", "parallel-group")
    assert [n.tag for n in dom.find_all("script")] == ["script"] and dom.find_all("img") == []


def test_screenshot_is_saved_as_an_artifact(exported, tmp_path, capsys):
    ARTIFACTS.mkdir(exist_ok=True)
    shot = ARTIFACTS / "export-session.png"
    shot.unlink(missing_ok=True)
    run = chromium(exported, tmp_path / "profile", f"--screenshot={shot}")
    assert run.returncode == 0, run.stderr[-2000:]
    assert console_messages(run) == []
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    with capsys.disabled():
        print(f"\nexport screenshot: {shot}")


def test_the_console_check_sees_a_script_the_policy_blocks(exported, tmp_path):
    """The check above can fail: a page whose script differs from the one the CSP hash allows logs
    the violation, and the script does not run."""
    tampered = tmp_path / "tampered.html"
    tampered.write_text(exported.read_text(encoding="utf-8").replace('body.setAttribute("data-ready", "1");',
                                                                    'body.setAttribute("data-ready", "2");'),
                        encoding="utf-8")
    run = chromium(tampered, tmp_path / "profile", "--dump-dom")
    assert any("Content Security Policy" in line for line in console_messages(run))
    assert "data-ready" not in parse_page(run.stdout).find("body").attrs


@pytest.fixture
def browser(tmp_path):
    from cdp import Browser

    opened = Browser(BROWSER, tmp_path / "cdp-profile")
    yield opened
    opened.close()


def test_page_works_in_the_browser(exported, browser):
    """Over the DevTools protocol: no console call, exception or log entry; the tree and the
    conversation are laid out; thinking can be hidden; a tree link opens the collapsed sub-agent run."""
    session = browser.open(exported.as_uri())
    js = lambda expression: browser.evaluate(session, expression)  # noqa: E731
    assert js("document.body.getAttribute('data-ready')") == "1"
    for selector in ("nav#tree", "main#conversation"):
        width, height = js(f"(r => [r.width, r.height])(document.querySelector('{selector}').getBoundingClientRect())")
        assert width > 100 and height > 100, selector
    assert js("document.querySelectorAll('section.loop').length") == 4
    assert js("document.querySelectorAll('nav#tree a').length") == 4
    thinking = "getComputedStyle(document.querySelector('details.thinking')).display"
    assert js(thinking) != "none"
    js("document.getElementById('toggle-thinking').click()")
    assert js(thinking) == "none"
    js("document.getElementById('toggle-thinking').click()")
    js("document.getElementById('collapse-all').click()")
    assert js("[...document.querySelectorAll('main details')].every(d => !d.open)")
    js("document.querySelector('nav#tree a[data-loop-id$=\".sub.1\"]').click()")
    child = "document.querySelector('section.loop[data-loop-id$=\".sub.1\"]')"
    assert js(f"{child}.classList.contains('current')")
    assert js(f"(r => r.height)({child}.getBoundingClientRect())") > 0  # its tool call was opened
    assert js("document.body.hasAttribute('data-pwned')") is False
    assert browser.problems() == []
    assert not [e for e in browser.seen if e["method"] == "Page.javascriptDialogOpening"]


def test_problems_are_reported_over_the_protocol(tmp_path, browser):
    """The protocol check can fail: a script error and a console.error are both seen."""
    page = tmp_path / "broken.html"
    page.write_text("<!DOCTYPE html><html><body><script>nope()</script><script>console.error('boom')</script>"
                    "</body></html>")
    browser.open(page.as_uri())
    kinds = sorted(e["method"] for e in browser.problems())
    assert kinds == ["Runtime.consoleAPICalled", "Runtime.exceptionThrown"]
