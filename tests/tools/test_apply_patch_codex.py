"""apply_patch agrees with the real codex binary (SPEC §9.5; issue 10 item 8).

Each divergence class found by the differential fuzz has a tiny hand-written case below. The
expected results are constants observed with codex 0.169.0 (npm ``@openai/codex``, the
``--codex-run-as-apply-patch`` mode); phi is checked against them always, and the binary itself is
checked against them whenever scripts/install-codex could install it. The last test replays a
slice of the generated differential fuzz (the full run is ``scripts/apply-patch-fuzz``).
"""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest

from .codex_oracle import compare, find_codex, run_codex, run_phi, scratch_base
from .patchgen import generate_case

ORACLE, WHY_NOT = find_codex()
needs_codex = pytest.mark.skipif(ORACLE is None, reason=WHY_NOT)
SUMMARY = "Success. Updated the following files:\n"


def P(*lines: str) -> str:
    return "\n".join(["*** Begin Patch", *lines, "*** End Patch"]) + "\n"


UPDATE = "*** Update File: f.txt"
START = {"f.txt": b"a\nb\n"}

# name: (files before, patch, files after — None when codex refuses the patch, summary on success)
CASES: dict[str, tuple[dict[str, bytes], str, dict[str, bytes] | None, str]] = {
    # context lines keep the file's own text and line ending
    "context_keeps_indentation": (
        {"f.py": b"def f():\n    x = 1\n    return x\n"},
        P("*** Update File: f.py", "@@", " x = 1", "-    return x", "+    return 2"),
        {"f.py": b"def f():\n    x = 1\n    return 2\n"}, "M f.py"),
    "context_keeps_crlf": (
        {"f.txt": b"a\nb\r\nc\n"}, P(UPDATE, "@@", " b", "+x"), {"f.txt": b"a\nb\r\nx\nc\n"}, "M f.txt"),
    "context_keeps_curly_quotes": (
        {"f.txt": "it’s “done”\nnext\n".encode()}, P(UPDATE, "@@", " it's \"done\"", "-next", "+then"),
        {"f.txt": "it’s “done”\nthen\n".encode()}, "M f.txt"),
    # an unterminated last line gets a line ending before anything is added after it
    "append_after_unterminated_line": ({"f.txt": b"a"}, P(UPDATE, "@@", "+b"), {"f.txt": b"a\nb\n"}, "M f.txt"),
    "append_after_unterminated_crlf_line": (
        {"f.txt": b"a\r\nb"}, P(UPDATE, "@@", "+c"), {"f.txt": b"a\r\nb\r\nc\r\n"}, "M f.txt"),
    # an End of File chunk may not reach back into lines an earlier chunk already used
    "end_of_file_chunk_cannot_overlap": (
        {"f.txt": b"a\nb\nc\n"}, P(UPDATE, "@@", "-b", "+B", "@@", " b", "-c", "+C", "*** End of File"), None, ""),
    # @@ lines: trailing whitespace is not part of the context, and '@@<tab>' is a bare @@
    "header_context_is_right_trimmed": (
        {"f.txt": b"x \nq\nx\nq\n"}, P(UPDATE, "@@ x ", "-q", "+Q"), {"f.txt": b"x \nq\nx\nQ\n"}, "M f.txt"),
    "header_with_trailing_tab": (START, P(UPDATE, "@@\t", "-b", "+B"), {"f.txt": b"a\nB\n"}, "M f.txt"),
    # insertions at the same place: ordered by where their replacement starts, then patch order
    "same_position_insertions_in_patch_order": (
        START, P(UPDATE, "@@", "+x", "@@", " b", "+y"), {"f.txt": b"a\nb\nx\ny\n"}, "M f.txt"),
    "replacement_sorts_before_pure_addition": (
        START, P(UPDATE, "@@", "+x", "@@", "-b", "+B"), {"f.txt": b"a\nB\nx\n"}, "M f.txt"),
    # whitespace-only and blank lines before the first chunk are context lines of that chunk
    "whitespace_only_update_hunk": ({"f.txt": b"a\nb"}, P(UPDATE, " "), {"f.txt": b"a\nb\n"}, "M f.txt"),
    "blank_line_before_first_chunk_is_context": (START, P(UPDATE, "", "-b", "+B"), None, ""),
    "tab_line_between_chunks_is_an_error": (START, P(UPDATE, "@@", "-a", "+A", "\t", "@@", "-b", "+B"), None, ""),
    "whitespace_after_end_of_file_chunk_is_skipped": (
        START, P(UPDATE, "@@", "-b", "+B", "*** End of File", "\t", "*** Add File: g.txt", "+x"),
        {"f.txt": b"a\nB\n", "g.txt": b"x\n"}, "A g.txt\nM f.txt"),
    # *** End of File lines right after the header are ignored (also before *** Move to:)
    "end_of_file_right_after_header": (START, P(UPDATE, "*** End of File", "-a", "+A"), {"f.txt": b"A\nb\n"}, "M f.txt"),
    "end_of_file_before_move": (
        START, P(UPDATE, "*** End of File", "*** Move to: g.txt", "@@", "-a", "+A"), {"g.txt": b"A\nb\n"}, "M g.txt"),
    "move_target_is_right_trimmed": (
        {"f.txt": b"a\n"}, P(UPDATE, "*** Move to: g.txt  ", "@@", "-a", "+A"), {"g.txt": b"A\n"}, "M g.txt"),
    # a lone CR ends a line; the file's first line ending is its preferred one
    "lone_cr_is_a_line_ending": ({"f.txt": b"a\rb\nc\n"}, P(UPDATE, "@@", "-c", "+C"), {"f.txt": b"a\rb\nC\r"}, "M f.txt"),
    "lone_cr_only_file": ({"f.txt": b"a\rb\rc"}, P(UPDATE, "@@", "-b", "+B"), {"f.txt": b"a\rB\rc\r"}, "M f.txt"),
    # patch text: CRLF is normalised first, so '\r\r\n' loses both carriage returns
    "patch_line_ending_cr_cr_lf": (
        {}, "*** Begin Patch\r\n*** Add File: g.txt\r\n+x\r\r\n+y\r\r\r\n*** End Patch\r\n",
        {"g.txt": b"x\ny\r\n"}, "A g.txt"),
    # a doubled end marker is accepted; anything but blank lines after an early one is not
    "doubled_end_marker": (
        START, P(UPDATE, "@@", "-a", "+A", "*** End Patch", " "), {"f.txt": b"A\nb\n"}, "M f.txt"),
    "operation_after_early_end_marker": (
        START, P("*** Add File: g.txt", "+x", "*** End Patch", "*** Add File: h.txt", "+y"), None, ""),
    # the summary lists added, then modified, then deleted files
    "summary_grouped_by_kind": (
        {"d.txt": b"x\n", "m.txt": b"x\n"}, P("*** Delete File: d.txt", "*** Update File: m.txt", "@@", "-x", "+y",
                                              "*** Add File: n.txt", "+z"),
        {"m.txt": b"y\n", "n.txt": b"z\n"}, "A n.txt\nM m.txt\nD d.txt"),
}


def files_of(outcome, root: str = "work/") -> dict[str, bytes]:
    return {path[len(root):]: data for path, data in outcome.tree.items()
            if path.startswith(root) and data is not None}


def check(outcome, files: dict[str, bytes], expected: dict[str, bytes] | None, summary: str) -> None:
    if expected is None:
        assert not outcome.ok, outcome.output
        assert files_of(outcome) == files  # refused without touching anything
    else:
        assert outcome.ok, outcome.output
        assert files_of(outcome) == expected
        assert outcome.output == SUMMARY + summary


@pytest.mark.parametrize("name", sorted(CASES))
def test_phi_matches_codex_observation(name: str, tmp_path: Path):
    files, patch, expected, summary = CASES[name]
    check(run_phi(tmp_path / "sandbox", files, patch), files, expected, summary)


@needs_codex
@pytest.mark.parametrize("name", sorted(CASES))
def test_observations_still_hold_for_codex(name: str, tmp_path: Path):
    files, patch, expected, summary = CASES[name]
    check(run_codex(ORACLE, tmp_path / "sandbox", files, patch), files, expected, summary)


SELF_MOVE = ({"f.txt": b"a\n"}, P(UPDATE, "*** Move to: ./f.txt", "@@", "-a", "+A"))


def test_move_onto_own_path_keeps_the_file(tmp_path: Path):
    """Intended divergence: codex writes the file, then deletes it as the move's source."""
    outcome = run_phi(tmp_path / "sandbox", *SELF_MOVE)
    check(outcome, SELF_MOVE[0], {"f.txt": b"A\n"}, "M ./f.txt")


@needs_codex
def test_codex_loses_a_file_moved_onto_itself(tmp_path: Path):
    outcome = run_codex(ORACLE, tmp_path / "sandbox", *SELF_MOVE)
    check(outcome, SELF_MOVE[0], {}, "M ./f.txt")


@needs_codex
@pytest.mark.parametrize("patch, intended", [
    (P("*** Add File: ../outside.txt", "+x"), "confinement"),
    (P("*** Update File: f.txt", "*** Move to: ../f.txt", "@@", "-a", "+A"), "confinement"),
    (SELF_MOVE[1], "self-move"),
], ids=["add-outside", "move-outside", "self-move"])
def test_intended_differences_are_judged_as_such(patch: str, intended: str, tmp_path: Path):
    verdict = compare(ORACLE, tmp_path / "sandbox", SELF_MOVE[0], patch)
    assert verdict.agree and verdict.intended == intended, verdict.problem
    assert verdict.codex.ok and not (verdict.phi.ok and intended == "confinement")


SLICE = 500


@needs_codex
def test_differential_fuzz_slice():
    """Generated realistic and adversarial patches: phi ends exactly where codex ends."""
    problems = []
    with tempfile.TemporaryDirectory(dir=scratch_base()) as scratch:
        for index in range(SLICE):
            case_id = f"suite:{index}"
            case = generate_case(random.Random(case_id))
            verdict = compare(ORACLE, Path(scratch) / "sandbox", case.files, case.patch)
            if not verdict.agree:
                problems.append(f"{case_id} ({case.kind}): {verdict.problem} — replay: "
                                f"scripts/apply-patch-fuzz --case {case_id}")
    assert not problems, "\n".join(problems)
