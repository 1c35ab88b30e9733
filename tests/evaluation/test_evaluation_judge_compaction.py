"""Fitting the judge's prompt into its budget: the three tiers, the two iterations, the warning, and
the winner kept whole (seed 000 REQ-202, REQ-208)."""

from __future__ import annotations

from evaluation_helpers import branch, fresh_context, prompts, reply, run_parallel

from phi.context import ContextConfig, estimate_tokens
from phi.context.tokens import USER_OVERHEAD
from phi.evaluation import LlmJudgeEvaluation
from phi.evaluation.judge_prompt import (
    compact_for_judge,
    fair_shares,
    fit_text,
    keep_ends,
    keep_first_last_paragraph,
    keep_last_lines,
)
from phi.types import AssistantMessage, TextContent, UserMessage

LINES = "\n".join(f"line {i}" for i in range(100))


def test_tier_1_keeps_the_last_80_lines():
    cut = keep_last_lines(LINES)
    assert cut.split("\n") == ["[... 20 earlier lines omitted ...]"] + [f"line {i}" for i in range(20, 100)]
    assert keep_last_lines("a\nb") == "a\nb"


def test_tier_2_keeps_the_first_and_last_paragraph():
    text = "First para\nstill first.\n\nSecond.\n  \nThird.\n\n\nLast one."
    assert keep_first_last_paragraph(text) == "First para\nstill first.\n\n[... 2 paragraphs omitted ...]\n\nLast one."
    assert keep_first_last_paragraph("one\n\ntwo") == "one\n\ntwo"


def test_tier_3_keeps_both_ends_within_the_limit():
    text = "a" * 100 + "b" * 100
    cut = keep_ends(text, 20, estimate_tokens)
    assert estimate_tokens(cut) <= 20
    assert cut.startswith("aaa") and cut.endswith("bbb") and "characters omitted ...]" in cut
    assert keep_ends(text, 0, estimate_tokens) == "[... 200 characters omitted ...]"
    assert keep_ends("short", 5, estimate_tokens) == "short"
    wide = "é" * 300  # two bytes a character: the first guess is too long and must shrink
    assert estimate_tokens(keep_ends(wide, 30, estimate_tokens)) <= 30


def test_fit_text_stops_at_the_first_tier_that_fits():
    assert fit_text(LINES, estimate_tokens(LINES), estimate_tokens) == LINES
    tier1 = keep_last_lines(LINES)
    assert fit_text(LINES, estimate_tokens(tier1), estimate_tokens) == tier1
    # 5 paragraphs of 30 lines: 154 lines with the blank ones between them
    paragraphs = "\n\n".join("\n".join(f"p{p} line {i}" for i in range(30)) for p in range(5))
    tier2 = keep_first_last_paragraph(keep_last_lines(paragraphs))
    assert fit_text(paragraphs, estimate_tokens(tier2), estimate_tokens) == tier2
    assert tier2.startswith("[... 74 earlier lines omitted ...]") and tier2.endswith("p4 line 29")
    tight = fit_text(paragraphs, 40, estimate_tokens)
    assert estimate_tokens(tight) <= 40 and "characters omitted" in tight


def test_fair_shares_divide_the_budget_and_pass_on_what_short_texts_do_not_need():
    assert fair_shares([10, 100, 100], 150) == [10, 70, 70]
    assert fair_shares([50, 50, 50], 90) == [30, 30, 30]
    assert fair_shares([5, 5], 100) == [5, 5]
    assert fair_shares([5, 5], -3) == [0, 0]


def test_compact_for_judge_leaves_what_fits_alone():
    assert compact_for_judge("prior", ["a", "b"], 100, estimate_tokens) == ("prior", ["a", "b"], True)


def test_iteration_1_compacts_only_the_prior_context():
    # the answer is longer than the prior context, yet only the prior context is shortened
    responses = ["\n".join(f"answer line {i}" for i in range(300)), "short"]
    room = estimate_tokens(keep_last_lines(LINES)) + sum(estimate_tokens(r) for r in responses)
    prior, out, fits = compact_for_judge(LINES, responses, room, estimate_tokens)
    assert fits and out == responses and prior == keep_last_lines(LINES)


def test_iteration_2_compacts_every_text_into_its_share():
    long_answer = "\n".join(f"answer line {i}" for i in range(300))
    prior, out, fits = compact_for_judge(LINES, [long_answer, "short"], 300, estimate_tokens)
    assert fits
    assert out[1] == "short"  # a text within its share is left alone
    assert out[0] != long_answer and out[0].endswith("answer line 299")
    assert estimate_tokens(prior) + sum(estimate_tokens(o) for o in out) <= 300


def test_compact_for_judge_says_when_nothing_fits():
    prior, out, fits = compact_for_judge(LINES, [LINES, LINES], 3, estimate_tokens)
    assert not fits


def _long(tag, lines=200):
    return "\n".join(f"{tag} line {i}" for i in range(lines))


def _judge(max_tokens, answer="2"):
    config = ContextConfig(max_context_tokens=max_tokens, system_prompt_tokens=100)
    return LlmJudgeEvaluation(branch([answer], "judge", context_config=config))


def test_a_small_budget_compacts_the_responses_and_the_winner_stays_whole():
    judge = _judge(100 + 600)
    configs = [branch([reply(_long("A"))], "a"), branch([reply(_long("B"))], "b")]
    run = run_parallel(prompts("Which?"), configs, judge, context=fresh_context())
    received = judge.judge_config.provider.calls[0].messages[0].content[0].text
    assert estimate_tokens(received) + USER_OVERHEAD <= 600
    assert received.startswith("Original query:\nWhich?\n\nResponse 1:\n")
    assert "A line 199" in received and "B line 199" in received and "A line 0\n" not in received
    assert received.count("earlier lines omitted") == 2
    assert run.of("ProgressMessage") == []
    assert run.result.selected_config_index == 1
    assert run.result.text == _long("B")  # the judge saw a compacted copy; the result is the original
    assert run.result.messages[-1].content[0].text == _long("B")


def test_iteration_1_shortens_a_long_prior_conversation_and_keeps_the_answers_verbatim():
    history = [UserMessage.from_text(_long("old question")), AssistantMessage([TextContent(_long("old answer"))])]
    judge = _judge(100 + 400)
    configs = [branch([reply("Short answer A.")], "a"), branch([reply("Short answer B.")], "b")]
    run_parallel(prompts("Now?"), configs, judge, context=fresh_context(messages=history))
    received = judge.judge_config.provider.calls[0].messages[0].content[0].text
    assert received.startswith("Prior conversation context:\n")
    assert received.endswith("Original query:\nNow?\n\nResponse 1:\nShort answer A.\n\nResponse 2:\nShort answer B.\n\n"
                              "Which response answers the query best? Reply with the number of that response only "
                              "(1 to 2).")
    assert "old answer line 199" in received and "old question line 0\n" not in received
    assert estimate_tokens(received) + USER_OVERHEAD <= 400


def test_a_prompt_that_cannot_fit_is_sent_anyway_with_a_warning_inside_the_judges_run():
    judge = _judge(100 + 20)
    configs = [branch([reply(_long("A"))], "a"), branch([reply(_long("B"))], "b")]
    context = fresh_context()
    run = run_parallel(prompts("A question far too long for a twenty token budget, " * 3), configs, judge,
                       context=context)
    judge_events = run.of_loop(f"{context.session_id}.judge.1")
    assert [e.type for e in judge_events[:2]] == ["AgentStart", "ProgressMessage"]
    warning = judge_events[1].text
    assert warning.startswith("LLM judge: the judge's prompt needs about ") and "more than its budget of 16" in warning
    assert len(judge.judge_config.provider.calls) == 1  # judged anyway
    assert run.result.selected_config_index == 1
