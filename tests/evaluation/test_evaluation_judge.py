"""LlmJudgeEvaluation: the prompt the judge receives, its answer, its fallbacks, its events
(seed 000 REQ-201, REQ-207, REQ-209)."""

from __future__ import annotations

from evaluation_helpers import branch, fresh_context, prompts, reply, run_parallel

from phi.concurrency.cancel import CancellationToken
from phi.evaluation import LlmJudgeEvaluation, PickFirstEvaluation
from phi.evaluation.judge import DEFAULT_JUDGE_SYSTEM_PROMPT, parse_choice
from phi.types import AssistantMessage, TextContent, ToolResultMessage, Usage, UserMessage

CLOSING = "Which response answers the query best? Reply with the number of that response only (1 to {n})."


def _judge(*answers, **settings):
    return LlmJudgeEvaluation(branch(list(answers), "judge", **settings))


def _judge_prompt(strategy, call=0):
    request = strategy.judge_config.provider.calls[call]
    assert len(request.messages) == 1
    return request.messages[0].content[0].text


def test_the_judge_sees_the_query_and_each_final_answer_numbered():
    judge = _judge({"blocks": [{"type": "text", "chunks": ["2"]}], "usage": {"input": 40, "total_tokens": 41}})
    configs = [branch([reply("Four.")], "a"), branch([reply("It is 4.")], "b")]
    context = fresh_context()
    run = run_parallel(prompts("What is 2+2?"), configs, judge, context=context)
    assert _judge_prompt(judge) == (
        "Original query:\nWhat is 2+2?\n\n"
        "Response 1:\nFour.\n\n"
        "Response 2:\nIt is 4.\n\n" + CLOSING.format(n=2))
    assert judge.judge_config.provider.calls[0].system_prompt == DEFAULT_JUDGE_SYSTEM_PROMPT
    assert judge.judge_config.provider.calls[0].tools == []
    result = run.result
    assert (result.selected_config_index, result.selected_loop_id) == (1, f"{context.session_id}.b.1")
    assert result.evaluation_usage == Usage(input=40, total_tokens=41)
    assert run.events[-1].evaluation_usage == result.evaluation_usage
    assert result.reason == "the judge chose response 2"


def test_the_judge_runs_in_the_branches_session_between_the_branches_and_the_end():
    judge = _judge("1")
    configs = [branch([reply("x")], "a"), branch([reply("y")], "b")]
    context = fresh_context()
    sid = context.session_id
    run = run_parallel(prompts("q"), configs, judge, context=context)
    judge_start = [e for e in run.of("AgentStart") if e.loop_id == f"{sid}.judge.1"][0]
    assert (judge_start.session_id, judge_start.agent_id, judge_start.parent_loop_id) == (sid, "ag", None)
    judge_events = run.of_loop(f"{sid}.judge.1")
    first = run.events.index(judge_events[0])
    last = run.events.index(judge_events[-1])
    assert run.events[first:last + 1] == judge_events  # the judge's run is not interleaved with anything
    assert all(run.events.index(e) < first for e in run.of_loop(f"{sid}.a.1") + run.of_loop(f"{sid}.b.1"))
    assert last == len(run.events) - 2 and run.types[-1] == "ParallelLoopEnd"


def test_tool_calls_results_and_earlier_turns_are_stripped_and_prompts_joined():
    tool_turn = {"blocks": [{"type": "text", "chunks": ["Let me look."]},
                            {"type": "toolCall", "id": "t1", "name": "missing", "arguments": {"q": 1}}]}
    thinking = {"blocks": [{"type": "thinking", "chunks": ["hmm"]}, {"type": "text", "chunks": ["Final B."]}]}
    configs = [branch([tool_turn, reply("Final A.")], "a"), branch([thinking], "b")]
    judge = _judge("1")
    run_parallel(prompts("part one", "part two"), configs, judge)
    assert _judge_prompt(judge) == (
        "Original query:\npart one\npart two\n\n"
        "Response 1:\nFinal A.\n\n"
        "Response 2:\nFinal B.\n\n" + CLOSING.format(n=2))


def test_an_earlier_conversation_becomes_prior_context():
    history = [UserMessage.from_text("hello"), AssistantMessage([TextContent("hi there")]),
               ToolResultMessage("t0", "clock", [TextContent("12:00")])]
    judge = _judge("1")
    configs = [branch([reply("A")], "a"), branch([reply("B")], "b")]
    run_parallel(prompts("what time?"), configs, judge, context=fresh_context(messages=history))
    assert _judge_prompt(judge) == (
        "Prior conversation context:\nUser: hello\n\nAssistant: hi there\n\nTool result (clock): 12:00\n\n"
        "Original query:\nwhat time?\n\n"
        "Response 1:\nA\n\nResponse 2:\nB\n\n" + CLOSING.format(n=2))


def test_continue_mode_takes_the_query_from_the_last_user_message_of_the_context():
    history = [UserMessage.from_text("first"), AssistantMessage([TextContent("answer one")]),
               UserMessage.from_text("second")]
    judge = _judge("2")
    configs = [branch([reply("A")], "a"), branch([reply("B")], "b")]
    run = run_parallel([], configs, judge, context=fresh_context(messages=history))
    assert _judge_prompt(judge) == (
        "Prior conversation context:\nUser: first\n\nAssistant: answer one\n\n"
        "Original query:\nsecond\n\n"
        "Response 1:\nA\n\nResponse 2:\nB\n\n" + CLOSING.format(n=2))
    assert run.result.selected_config_index == 1


def test_continue_mode_without_earlier_conversation_has_no_prior_section():
    judge = _judge("1")
    configs = [branch([reply("A")], "a"), branch([reply("B")], "b")]
    run_parallel([], configs, judge, context=fresh_context(messages=[UserMessage.from_text("only")]))
    assert _judge_prompt(judge).startswith("Original query:\nonly\n\n")


def test_failed_branches_are_not_shown_and_numbers_map_back_to_configs():
    configs = [branch([reply("A")], "a"), branch([{"error": {"kind": "api", "message": "x"}}], "b"),
               branch([reply("C")], "c")]
    judge = _judge("Response 2 is the best.")
    run = run_parallel(prompts("q"), configs, judge)
    assert _judge_prompt(judge) == "Original query:\nq\n\nResponse 1:\nA\n\nResponse 2:\nC\n\n" + CLOSING.format(n=2)
    assert run.result.selected_config_index == 2 and run.result.text == "C"


def _fallback_case(answer_script):
    judge = _judge(answer_script)
    configs = [branch([{"error": {"kind": "api", "message": "x"}}], "a"), branch([reply("B")], "b"),
               branch([reply("C")], "c")]
    context = fresh_context()
    run = run_parallel(prompts("q"), configs, judge, context=context)
    judge_id = f"{context.session_id}.judge.1"
    progress = run.of("ProgressMessage")
    assert len(progress) == 1 and progress[0].loop_id == judge_id and progress[0].tool_name == "llm_judge"
    judge_types = [e.type for e in run.of_loop(judge_id)]
    assert judge_types[-2:] == ["ProgressMessage", "AgentEnd"]  # inside the judge's run
    assert run.result.selected_config_index == 1  # the first successful branch
    return progress[0].text, run.result.reason


def test_an_answer_without_a_number_falls_back_to_the_first_successful_branch():
    text, reason = _fallback_case("None of them is good.")
    assert text == ("LLM judge: the judge's answer has no number: 'None of them is good.'; "
                    "selecting the first successful branch (config 1)")
    assert reason == text.removeprefix("LLM judge: ")


def test_an_out_of_range_answer_falls_back():
    text, _ = _fallback_case("7")
    assert "the judge answered 7, which is not a response number (1 to 2)" in text


def test_a_failing_judge_falls_back_and_says_why():
    text, _ = _fallback_case({"error": {"kind": "auth", "message": "judge key revoked"}})
    assert "the judge's run failed" in text and "judge key revoked" in text


def test_with_one_successful_branch_no_judge_runs():
    judge = _judge("1")
    configs = [branch([{"error": {"kind": "api", "message": "x"}}], "a"), branch([reply("B")], "b")]
    run = run_parallel(prompts("q"), configs, judge)
    assert judge.judge_config.provider.calls == []
    assert run.result.selected_config_index == 1 and run.result.evaluation_usage == Usage()


def test_with_no_successful_branch_no_judge_runs():
    judge = _judge("2")
    configs = [branch([{"error": {"kind": "api", "message": "x"}}], "a"),
               branch([{"error": {"kind": "api", "message": "y"}}], "b")]
    run = run_parallel(prompts("q"), configs, judge)
    assert judge.judge_config.provider.calls == [] and run.result.selected_config_index == 0
    assert run.result.reason == "no branch succeeded; nothing to judge"


def test_a_single_failed_branch_is_not_called_successful():
    run = run_parallel(prompts("q"), [branch([{"error": {"kind": "api", "message": "x"}}], "a")], _judge("1"))
    assert run.result.reason == "no branch succeeded; nothing to judge"
    pick = run_parallel(prompts("q"), [branch([{"error": {"kind": "api", "message": "x"}}], "a")],
                        PickFirstEvaluation())
    assert pick.result.reason == "no branch succeeded: the first branch"


def test_cancel_after_the_branches_skips_the_judge():
    cancel = CancellationToken()
    ends = []

    def sink(event):
        if event.type == "AgentEnd":
            ends.append(event)
            if len(ends) == 2:
                cancel.cancel()

    judge = _judge("2")
    run = run_parallel(prompts("q"), [branch([reply("A")], "a"), branch([reply("B")], "b")], judge,
                       cancel=cancel, sink=sink)
    assert judge.judge_config.provider.calls == []
    assert run.result.selected_config_index == 0 and run.result.reason == "cancelled before the judge ran"


def test_a_custom_system_prompt_replaces_the_default():
    judge = LlmJudgeEvaluation(branch(["1"], "judge"), system_prompt="Pick the shortest.")
    run_parallel(prompts("q"), [branch([reply("A")]), branch([reply("B")])], judge)
    assert judge.judge_config.provider.calls[0].system_prompt == "Pick the shortest."


def test_parse_choice_reads_the_first_integer():
    assert parse_choice("2", 3) == (1, "")
    assert parse_choice("Response 3, clearly.", 3) == (2, "")
    assert parse_choice("I prefer 1 over 2", 2) == (0, "")
    assert parse_choice("-1", 2)[0] is None
    assert parse_choice("0", 2)[0] is None
    assert parse_choice("", 2) == (None, "the judge's answer has no number (it is empty)")


def test_a_sink_failing_during_the_judges_run_is_re_raised_unchanged():
    class Stop(Exception):
        pass

    def sink(event):
        if event.type == "AgentStart" and event.loop_id.endswith(".judge.1"):
            raise Stop("consumer gave up")

    judge = _judge("1")
    run = run_parallel(prompts("q"), [branch([reply("A")], "a"), branch([reply("B")], "b")], judge,
                       context=fresh_context(), sink=sink)
    assert type(run.error) is Stop
    assert "ParallelLoopEnd" not in run.types
