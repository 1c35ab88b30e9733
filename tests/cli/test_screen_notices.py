"""Issue 35 item 6 in a pty: the approved change is shown once, counts of one say "1 line", a
``/compact`` that cut nothing says the conversation is unchanged, and an automatic compaction is
said before the context gauge drops."""

from __future__ import annotations

import re

from coding.wire import Call, Turn

PAGE = 50 - 4  # the preview's page: the pty's LINES (terminal_helpers) less the question's rows


def test_the_approved_diff_is_shown_once_and_one_more_line_is_singular(launch, model, project):
    content = "".join(f"row {i}\n" for i in range(PAGE - 3 + 1))  # (3 diff header rows): one row past the page
    model.script("Write the big file", Turn("", [Call("write_file", {"file_path": "big.txt", "content": content})]),
                 Turn("Written."))
    phi = launch()
    phi.prompt()
    phi.send_line("Write the big file")
    phi.expect(r"… 1 more line: \[space\] next page")
    phi.send(" ")
    phi.expect(r"\[a\]lways for this session: ")
    phi.send("y")
    phi.expect("Written.")
    phi.prompt()
    shown = phi.text[phi._mark:]
    assert shown.count("+++ b/big.txt") == 1, shown  # the preview; not again under the call's line
    assert "more lines" not in shown
    assert (project / "big.txt").read_text() == content


def test_one_diff_line_past_the_cap_is_singular(launch, model):
    from phi.cli.render import DIFF_LINES

    content = "".join(f"row {i}\n" for i in range(DIFF_LINES - 3 + 1))
    model.script("Write it", Turn("", [Call("write_file", {"file_path": "cap.txt", "content": content})]),
                 Turn("Done."))
    phi = launch("--approve", "off")
    phi.prompt()
    phi.exchange("Write it", r"… 1 more diff line \(/show 1\)", "Done.")


def test_compact_that_cannot_cut_anything_says_the_conversation_is_unchanged(launch, model):
    model.script("Hi", Turn("Hello."), Turn("Still here."))  # the summary request ("USER: Hi…") has none: it fails
    phi = launch()
    phi.prompt()
    phi.exchange("Hi", "Hello.")
    phi.exchange("/compact", r"the summary call failed: .* could not be cut mechanically either: it is unchanged "
                             r"\(~[\d,]+ tokens\)")
    shown = phi.text[phi._mark:]
    assert not re.search(r"~([\d,]+) → ~\1 tokens", shown), shown  # no "compacted" from a size to itself
    phi.exchange("And now", "Still here.")  # the conversation goes on as it was
    (last,) = model.requests_of("Hi")[-1:]
    assert [m["role"] for m in last["messages"]] == ["user", "assistant", "user"]
    assert "Summary" not in str(last["messages"])


def test_an_automatic_compaction_is_said_before_the_gauge_drops(launch, model, project):
    (project / "big.log").write_text("".join(f"log line {i}: something happened here\n" for i in range(600)))
    model.script("Read the log", Turn("", [Call("read_file", {"file_path": "big.log"})]), Turn("It repeats."))
    phi = launch("--approve", "off", "--context-window", "4000")
    phi.prompt()
    phi.send_line("Read the log")
    warning = phi.expect(r"Context usage at ~(\d+)% of the context window")
    assert int(warning.group(1)) > 100
    notice = phi.expect(r"compacted the conversation to stay under 85% of the context window: "
                        r"~([\d,]+) → ~([\d,]+) tokens")
    before, after = (int(group.replace(",", "")) for group in notice.groups())
    assert after < before
    phi.expect("It repeats.")
    gauge = phi.expect(r"context \[[█░]+\] (\d+)%")
    assert int(gauge.group(1)) < 85
    phi.prompt()
    assert phi.text.index(notice.group(0)) < phi.text.index("It repeats.")


# ----------------------------------------------------------------------------- the renderer's wrapping


def _renderer(width: int):
    import io

    from phi.cli.render import Renderer, Style

    out = io.StringIO()
    return Renderer(out, Style(False), width=lambda: width), out


def _stream(renderer, *deltas: str) -> None:
    for delta in deltas:
        renderer.on_event(type("E", (), {"kind": "assistant_text_delta", "data": {"delta": delta}})())
    renderer.on_event(type("E", (), {"kind": "assistant_text_end", "data": {}})())


def test_wrapping_counts_wide_characters_and_lets_a_word_wider_than_a_row_through():
    renderer, out = _renderer(21)  # rows of 20 columns
    _stream(renderer, "漢字漢字漢字 ", "漢字漢字漢字 abc ", "x" * 30, " end")
    rows = out.getvalue().splitlines()
    assert rows == ["漢字漢字漢字", "漢字漢字漢字 abc", "x" * 30, "end"]


def test_wrapping_keeps_the_indent_a_row_starts_with():
    renderer, out = _renderer(41)
    _stream(renderer, "Try:\n    def f():\n    ", "    return 1\n\tdone\n")
    assert out.getvalue().splitlines() == ["Try:", "    def f():", "        return 1", "\tdone"]


def test_a_line_written_aside_leaves_the_word_being_streamed_whole():
    renderer, out = _renderer(80)
    renderer.on_event(type("E", (), {"kind": "assistant_text_delta", "data": {"delta": "Say hi alph"}})())
    with renderer.aside():
        renderer.line("/help: the commands")
    _stream(renderer, "abetically, please.")
    assert out.getvalue().splitlines() == ["Say hi", "/help: the commands", "alphabetically, please."]


def test_without_a_width_the_stream_is_written_as_it_comes():
    import io

    from phi.cli.render import Renderer, Style

    out = io.StringIO()
    renderer = Renderer(out, Style(False))
    renderer.on_event(type("E", (), {"kind": "assistant_text_delta", "data": {"delta": "Say hi alph"}})())
    assert out.getvalue() == "Say hi alph"
