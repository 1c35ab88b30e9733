"""The mutants ``scripts/mutants.py`` plants: one per behavioural statement of SPEC §3-8 and §13.

A mutant is named by the requirement it breaks and a letter (``LOOP-8a``); ``what`` quotes or
paraphrases the SPEC statement the change reverses. Edits are ``(old, new)`` pairs applied to one file
under ``phi/``; each ``old`` must occur exactly once there (``mutants.py --check`` verifies it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# SPEC section of each requirement prefix, and its title in the report
SECTIONS: dict[str, str] = {"3": "Events", "4": "The loop", "5": "Tools", "6": "Cancellation",
                            "7": "Providers/errors", "8": "Context", "13.1": "Sub-agents", "13.2": "Sessions",
                            "13.3": "Parallel eval"}
_SECTION_OF = {"EVT": "3", "LOOP": "4", "TOOL": "5", "CANCEL": "6", "ERR": "7", "CTX": "8", "SUB": "13.1",
               "SESS": "13.2", "EVAL": "13.3"}


@dataclass(frozen=True)
class Mutant:
    key: str  # requirement id + letter
    file: str  # relative to phi/
    edits: tuple[tuple[str, str], ...]
    what: str  # the SPEC statement the mutant breaks
    judge: str = "suite"  # or "session-tests"
    cites: str = ""  # the requirement, when the key does not name it (a blind set's "blind-1/01")

    @property
    def requirement(self) -> str:
        return self.cites or re.sub(r"[a-z]+$", "", self.key)

    @property
    def section(self) -> str:
        return _SECTION_OF.get(self.requirement.split("-")[0], "")


def m(key: str, file: str, old: str, new: str, what: str) -> Mutant:
    return Mutant(key, file, ((old, new),), what, "session-tests" if key.startswith("SESS") else "suite")


def mm(key: str, file: str, edits: list[tuple[str, str]], what: str) -> Mutant:
    return Mutant(key, file, tuple(edits), what, "session-tests" if key.startswith("SESS") else "suite")


RUN = "loop/run.py"
TOOLS = "loop/tool_execution.py"
ARGUMENTS = "loop/arguments.py"
STREAM = "loop/reply_stream.py"
VIEW = "loop/llm_view.py"
IDENTITY = "loop/identity.py"
QUEUES = "concurrency/queues.py"
CANCEL = "concurrency/cancel.py"
RETRY = "providers/retry.py"
EVENTS = "events.py"
TYPES = "types.py"
TRACKER = "context/tracker.py"
SUBAGENT = "subagent.py"
PARALLEL = "evaluation/parallel.py"
STRATEGIES = "evaluation/strategies.py"
MODEL = "evaluation/model.py"
JUDGE = "evaluation/judge.py"
RECORDER = "session/recorder.py"
RECORDER_STATE = "session/recorder_state.py"
JSON_STORE = "session/json_store.py"

_TURN_CHECKS = ("                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n"
                "                if self.limit_reached():\n                    return RunOutcome.LIMIT\n"
                "                if config.before_turn is not None and config.before_turn(context.messages, turn_index)"
                " is False:\n                    return RunOutcome.VETOED\n")
_RECHECK = ("                if config.before_turn is not None and self.cancel.is_cancelled():  # aborted while it ran "
            "(CANCEL-4)\n                    return RunOutcome.ABORTED\n")
_AFTER_TURN = ("                if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:\n"
               "                    self.take(STEERING)  # no tool ran, so the steering source was not read (LOOP-8)\n")
_FAILED_TURN = ("                    self.end_turn(reply, [])\n"
                "                    # no queue is read after an error or abort (LOOP-17)\n")
_UPDATE_HOOK = ("        if config.before_tool_execution_update is not None and \\\n"
                "                config.before_tool_execution_update(call.name, call.id, text) is False:\n            "
                "return\n")
_AFTER_LOOP = "        if config.after_loop is not None:\n            config.after_loop(context.messages, self.usage)\n"
_GIVE_BACK = ("            for message in messages:\n                if announce:\n                    "
              "self.append(message)\n"
              "                else:\n                    self.record(message)\n")

MUTANTS: list[Mutant] = [
    # ================================================================ §3 events
    m("EVT-1a", EVENTS, 'return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"',
      "return str(seconds)", "event timestamps are RFC 3339 UTC strings"),
    m("EVT-1b", EVENTS, "        out[name] = codec[0](value) if codec is not None and value is not None else value",
      '        out[name.replace("_id", "Id")] = codec[0](value) if codec is not None and value is not None else value',
      "event JSON fields are snake_case"),
    m("EVT-2a", RUN, "self.emit(AgentStart(identity.agent_id, identity.session_id, loop_id, context.parent_loop_id,",
      "self.emit(AgentStart(identity.agent_id, identity.session_id, loop_id, None,",
      "AgentStart carries parent_loop_id"),
    m("EVT-2b", RUN, "context.continuation_kind if self.continuation else None, metadata=config.metadata",
      "context.continuation_kind, metadata=config.metadata",
      "AgentStart.continuation_kind is null for agent_loop"),
    m("EVT-2c", RUN, "else None, metadata=config.metadata))", "else None, metadata=None))",
      "AgentStart carries the configured metadata"),
    m("EVT-2d", RUN, "self.emit(TurnEnd(self.loop_id, reply,", 'self.emit(TurnEnd("", reply,',
      "every variant but AgentStart and the parallel pair carries the run's loop_id"),
    m("EVT-2e", TYPES, 'return {self.kind.capitalize(): {"tag": self.tag}}',
      'return {"kind": self.kind.capitalize(), "tag": self.tag}',
      'continuation_kind JSON is "Default", {"Rerun": {"tag"}} or {"Branch": {"tag"}}'),
    m("EVT-3a", RUN, "                self.emit(AgentEnd(loop_id, [], Usage(), rejection=rejection, "
      "outcome=RunOutcome.REJECTED))\n", "",
      "exactly one AgentEnd, last (also after a rejection)"),
    mm("EVT-3b", RUN, [
        ("        self.emit(AgentStart(identity.agent_id, identity.session_id, loop_id, context.parent_loop_id,\n"
         "                             context.continuation_kind if self.continuation else None, "
         "metadata=config.metadata))\n        if prompts:\n            rejection = self.apply_input_filters(prompts)\n",
         "        if prompts:\n            rejection = self.apply_input_filters(prompts)\n"
         "        self.emit(AgentStart(identity.agent_id, identity.session_id, loop_id, context.parent_loop_id,\n"
         "                             context.continuation_kind if self.continuation else None, "
         "metadata=config.metadata))\n        if prompts:\n")],
       "AgentStart is the first event: input filters run after it"),
    m("EVT-4a", RUN, "self.emit(AgentEnd(loop_id, list(self.new_messages), self.usage, outcome=outcome))",
      "self.emit(AgentEnd(loop_id, list(self.new_messages[len(prompts):]), self.usage, outcome=outcome))",
      "AgentEnd.messages lists every message the run appended, prompts included"),
    m("EVT-4b", RUN, "            config.after_loop(context.messages, self.usage)\n        return self.new_messages\n",
      "            config.after_loop(context.messages, self.usage)\n        return list(context.messages)\n",
      "the run returns exactly its new messages"),
    m("EVT-4c", RUN, 'self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))',
      'self.record(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))',
      "every appended message is announced (the limit notice)"),
    m("EVT-4d", RUN, "            results.append(message)\n            self.append(message)\n",
      "            results.append(message)\n            self.record(message)\n",
      "every appended message is announced (tool results)"),
    m("EVT-5a", RUN, 'if kind is not None and kind.kind == "branch":', 'if kind is not None and kind.kind == "rerun":',
      "a branch continuation's first turn is triggered by Branch, any other continuation's by Continuation"),
    m("EVT-5b", RUN, "        if self.continuation:\n            return TurnTrigger.CONTINUATION",
      "        if self.continuation:\n            return self.config.first_turn_trigger",
      "the first turn of a continuation is triggered by Continuation"),
    m("EVT-5c", RUN, "                trigger = TurnTrigger.CONTINUATION\n", "",
      "later turns are triggered by Continuation"),
    m("EVT-5d", RUN, "        turn_index = 0\n", "        turn_index = 1\n", "turn_index counts from 0"),
    m("EVT-5e", RUN, "                turn_index += 1\n", "", "turn_index counts the turns"),
    mm("EVT-6a", STREAM, [("UpdateSegment.start(self.loop_id, kind, event.index, event.partial, event.delta)",
                           "UpdateSegment.start(self.loop_id, kind, event.index + 1, event.partial, event.delta)"),
                          ("StreamDelta(kind, event.delta, event.index)", "StreamDelta(kind, event.delta, event.index "
                                                                          "+ 1)")],
       "a delta's index is its content block"),
    m("EVT-6b", STREAM, '    StreamEventKind.TOOLCALL_DELTA: "toolCall",', '    StreamEventKind.TOOLCALL_DELTA: '
                                                                           '"text",',
      "toolCall deltas are typed toolCall"),
    m("EVT-6c", STREAM, '    StreamEventKind.THINKING_DELTA: "thinking",', '    StreamEventKind.THINKING_DELTA: '
                                                                           '"text",',
      "thinking deltas are typed thinking"),
    m("EVT-7a", STREAM, "        if not self.visible:\n            self.visible = True\n"
      "            self.emit(MessageStart(self.loop_id, self._before",
      "        if True:\n            self.visible = True\n            self.emit(MessageStart(self.loop_id, "
      "self._before",
      "one MessageStart, with the first delta"),
    m("EVT-7b", RUN, "        return Attempt(None, failure, stream.visible)",
      "        return Attempt(None, failure, True)",
      "an attempt that fails before any delta leaves no trace (and may be retried)"),
    m("EVT-7c", STREAM, "        if not self.visible:\n            self.visible = True\n"
      "            self.emit(MessageStart(self.loop_id, reply))",
      "        if False:\n            self.visible = True\n            self.emit(MessageStart(self.loop_id, reply))",
      "a reply without deltas gets its MessageStart with MessageEnd"),
    m("EVT-8a", RUN, "self.end_turn(reply, self.run_tools(reply, runner))",
      "self.end_turn(reply, self.run_tools(reply, runner)[:0])", "TurnEnd carries the turn's toolResult messages"),
    m("EVT-8b", RUN, "self.end_turn(reply, self.run_tools(reply, runner))",
      "self.end_turn(reply, self.run_tools(reply, runner)[::-1])", "TurnEnd's tool results are in call order"),
    m("EVT-8c", RUN, "self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))",
      "self.emit(TurnEnd(self.loop_id, reply, self.usage, tool_results))", "TurnEnd carries the turn's usage"),
    m("EVT-9a", RUN, "                    return RunOutcome.VETOED", "                    return RunOutcome.COMPLETED",
      "a before_turn veto ends the run vetoed"),
    m("EVT-9b", RUN, "                    return RunOutcome.LIMIT", "                    return RunOutcome.COMPLETED",
      "a limit ends the run with outcome limit"),
    m("EVT-9c", RUN, "                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n"
      "                if not more_tool_calls",
      "                if self.cancel.is_cancelled():\n                    return RunOutcome.COMPLETED\n"
      "                if not more_tool_calls",
      "cancellation seen at a turn's end ends the run aborted"),
    m("EVT-9d", RUN, "return RunOutcome.ERROR if reply.stop_reason == StopReason.ERROR else RunOutcome.ABORTED",
      "return RunOutcome.ABORTED", "an error reply ends the run with outcome error"),
    m("EVT-9e", RUN, "self.emit(AgentEnd(loop_id, [], Usage(), outcome=RunOutcome.VETOED))",
      "self.emit(AgentEnd(loop_id, [], Usage(), outcome=RunOutcome.COMPLETED))",
      "a before_loop veto ends the run vetoed"),
    m("EVT-9f", RUN, "rejection=rejection, outcome=RunOutcome.REJECTED", "rejection=rejection, "
                                                                         "outcome=RunOutcome.VETOED",
      "a rejection ends the run rejected"),
    m("EVT-9g", RUN, "return RunOutcome.ERROR if reply.stop_reason == StopReason.ERROR else RunOutcome.ABORTED",
      "return RunOutcome.ERROR if reply.stop_reason == StopReason.ERROR else RunOutcome.COMPLETED",
      "a reply that ended aborted ends the run aborted"),

    # ================================================================ §4 the loop
    # §4.1: a hook that returns nothing counts as continue
    m("LOOP-1a", IDENTITY, "int(tail) - 1 if tail.isdigit() else 0", "int(tail) if tail.isdigit() else 0",
      "before_loop's loop_index is N - 1"),
    m("LOOP-1b", RUN, "            self.emit(AgentEnd(loop_id, [], Usage(), outcome=RunOutcome.VETOED))\n",
      "            self.emit(AgentStart(identity.agent_id, identity.session_id, loop_id))\n"
      "            self.emit(AgentEnd(loop_id, [], Usage(), outcome=RunOutcome.VETOED))\n",
      "a before_loop veto emits only AgentEnd"),
    m("LOOP-1c", RUN, "outcome=RunOutcome.VETOED))\n            return []\n",
      "outcome=RunOutcome.VETOED))\n            return list(prompts)\n", "a before_loop veto returns []"),
    m("LOOP-1d", RUN, "config.before_loop(context.messages, identity.loop_index)",
      "config.before_loop(context.messages + prompts, identity.loop_index)",
      "before_loop runs before the prompts are appended"),
    m("LOOP-1e", RUN, "outcome=RunOutcome.VETOED))\n            return []\n",
      "outcome=RunOutcome.VETOED))\n            if config.after_loop is not None:\n"
      "                config.after_loop(context.messages, Usage())\n            return []\n",
      "after a before_loop veto no after_loop runs"),
    m("LOOP-1f", RUN, "config.before_loop(context.messages, identity.loop_index) is False",
      "not config.before_loop(context.messages, identity.loop_index)",
      "a hook that returns nothing counts as continue (before_loop)"),
    m("LOOP-2a", RUN, '        text = "\\n".join(\n', '        text = " ".join(\n',
      "filters see the prompts' text blocks joined with \\n"),
    m("LOOP-2b", RUN, "block.text for m in prompts if isinstance(m, UserMessage) for block in m.content",
      "block.text for m in prompts if hasattr(m, 'content') for block in m.content",
      "filters see the text of user prompts only"),
    m("LOOP-2c", RUN, "for m in prompts if isinstance(m, UserMessage) for block in m.content if",
      "for m in prompts if isinstance(m, UserMessage) for block in m.content[:1] if",
      "filters see every text block of a prompt"),
    m("LOOP-2d", RUN, '            if result.action == "reject":\n',
      '            if result.action == "reject" and flt is self.config.input_filters[-1]:\n',
      "the first reject wins"),
    m("LOOP-2e", RUN, "outcome=RunOutcome.REJECTED))\n                return []\n",
      "outcome=RunOutcome.REJECTED))\n                if config.after_loop is not None:\n"
      "                    config.after_loop(context.messages, Usage())\n                return []\n",
      "a rejection does not call after_loop"),
    m("LOOP-2f", RUN, 'content=[*prompt.content, TextContent("\\n".join(warnings))]',
      'content=[*prompt.content, TextContent(" ".join(warnings))]', "warning lines are joined with \\n"),
    m("LOOP-2g", RUN, "            for i in range(len(prompts) - 1, -1, -1):", "            for i in "
                                                                               "range(len(prompts)):",
      "warnings go onto the last user prompt"),
    m("LOOP-2h", RUN, 'content=[*prompt.content, TextContent("\\n".join(warnings))]',
      "content=[*prompt.content, *(TextContent(w) for w in warnings)]", "warnings become one text block"),
    m("LOOP-2i", RUN, "self.emit(AgentEnd(loop_id, [], Usage(), rejection=rejection,",
      "self.emit(AgentEnd(loop_id, list(prompts), Usage(), rejection=rejection,", "a rejection ends with messages []"),
    m("LOOP-2j", RUN, "self.emit(InputRejected(loop_id, rejection))", 'self.emit(InputRejected(loop_id, "rejected"))',
      "InputRejected carries the filter's reason"),
    m("LOOP-2k", RUN, '                warnings.append(f"[Warning: {result.text}]")',
      '                warnings.append(f"Warning: {result.text}")', "a warning line reads [Warning: text]"),
    m("LOOP-3a", RUN, "    if not context.agent_id or not context.session_id:", "    if not context.agent_id:",
      "continue refuses a context without session_id"),
    m("LOOP-3b", RUN, "last = next((m for m in reversed(context.messages) if not isinstance(m, ExtensionMessage)), "
                      "None)",
      "last = next((m for m in reversed(context.messages)), None)",
      "continue looks at the last non-extension message"),
    m("LOOP-3c", RUN, "    if last is None:\n        raise InvalidContinue(", "    if False:\n        raise "
                                                                              "InvalidContinue(",
      "continue refuses a context without messages"),
    m("LOOP-3d", RUN, "        context.continuation_kind = ContinuationKind.default()",
      "        pass", "a context with no continuation kind continues as Default"),
    m("LOOP-3e", RUN, "    if isinstance(last, AssistantMessage):\n",
      "    if isinstance(last, AssistantMessage) and last.tool_calls:\n",
      "continue refuses a context that ends with an assistant message"),
    m("LOOP-20a", RUN, "    if not prompts:\n        raise InvalidPrompt(", "    if prompts is None:\n        raise "
                                                                            "InvalidPrompt(",
      "agent_loop refuses an empty prompt list"),
    m("LOOP-4a", RUN, _TURN_CHECKS,
      "                if self.limit_reached():\n                    return RunOutcome.LIMIT\n"
      "                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n"
      "                if config.before_turn is not None and config.before_turn(context.messages, turn_index)"
      " is False:\n                    return RunOutcome.VETOED\n",
      "each turn checks cancellation before the limits"),
    m("LOOP-4b", RUN, _TURN_CHECKS,
      "                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n"
      "                if config.before_turn is not None and config.before_turn(context.messages, turn_index)"
      " is False:\n                    return RunOutcome.VETOED\n"
      "                if self.limit_reached():\n                    return RunOutcome.LIMIT\n",
      "each turn checks the limits before calling before_turn"),
    m("LOOP-4c", RUN, _TURN_CHECKS,
      "                if config.before_turn is not None and config.before_turn(context.messages, turn_index)"
      " is False:\n                    return RunOutcome.VETOED\n"
      "                if self.cancel.is_cancelled():\n                    return RunOutcome.ABORTED\n"
      "                if self.limit_reached():\n                    return RunOutcome.LIMIT\n",
      "each turn checks cancellation before calling before_turn"),
    m("LOOP-4d", RUN, _TURN_CHECKS + _RECHECK + "                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n",
      "                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n" + _TURN_CHECKS + _RECHECK,
      "TurnStart comes after the checks"),
    mm("LOOP-4e", RUN, [("            self.record(prompt)\n            self.unannounced.append(prompt)\n",
                         "            self.unannounced.append(prompt)\n"),
                        ("            announce(self.emit, self.loop_id, self.unannounced.pop(0))",
                         "            self.append(self.unannounced.pop(0))")],
       "prompts are appended to the context before the first turn's checks"),
    m("LOOP-4f", RUN, "                self.deliver_pending()\n                self.compact_if_configured()\n",
      "                self.compact_if_configured()\n                self.deliver_pending()\n",
      "pending messages are appended before compaction"),
    m("LOOP-4g", RUN, "                self.deliver_pending()\n                self.compact_if_configured()\n",
      "                self.deliver_pending()\n", "the context is compacted before each model call, if configured"),
    mm("LOOP-5a", RUN, [("            self.emit(AgentEnd(loop_id, list(self.new_messages), self.usage, "
                         "outcome=outcome))\n",
                         "            if config.after_loop is not None:\n"
                         "                config.after_loop(context.messages, self.usage)\n"
                         "            self.emit(AgentEnd(loop_id, list(self.new_messages), self.usage, "
                         "outcome=outcome))\n"),
                        (_AFTER_LOOP + "        return self.new_messages\n", "        return self.new_messages\n")],
       "after_loop runs after AgentEnd"),
    m("LOOP-5b", RUN, _AFTER_LOOP, _AFTER_LOOP.replace("is not None:", "is not None and outcome != RunOutcome.ERROR:"),
      "after_loop runs after an error"),
    m("LOOP-5c", RUN, _AFTER_LOOP, _AFTER_LOOP.replace("is not None:", "is not None and outcome != "
                                                                       "RunOutcome.ABORTED:"),
      "after_loop runs after an abort"),
    m("LOOP-5d", RUN, _AFTER_LOOP, _AFTER_LOOP.replace("is not None:", "is not None and outcome != RunOutcome.LIMIT:"),
      "after_loop runs after a limit"),
    m("LOOP-5e", RUN, _AFTER_LOOP, _AFTER_LOOP.replace("is not None:", "is not None and outcome != RunOutcome.VETOED:"),
      "after_loop runs after a before_turn veto"),
    m("LOOP-5f", RUN, "            self.give_back_pending(announce=False)\n        except Exception:",
      "            pass\n        except Exception:", "an exception: queued messages the run had taken are given back"),
    m("LOOP-5g", RUN, "        for message in unanswered_call_results(self.context.messages, known):",
      "        for message in []:", "an exception: every unanswered call of the last reply gets a result"),
    m("LOOP-5h", RUN, "        known = self.runner.answered if self.runner is not None else None",
      "        known = None", "an exception: a call that had finished keeps its own result"),
    m("LOOP-5i", TOOLS, "        text = TRUNCATED_CALL if message.stop_reason == StopReason.LENGTH else ABORTED",
      "        text = ABORTED", "an exception: the calls of a length reply get the TOOL-9 text"),
    m("LOOP-5j", RUN, "        except BaseException:\n            self.unwind()\n            raise\n",
      "        except BaseException as error:\n            self.unwind()\n"
      "            raise InvalidContinue(f'the run failed: {error}') from error\n",
      "an exception reaches the caller unchanged"),
    m("LOOP-5k", TOOLS, "                    if ex.token is not None:\n                        ex.token.cancel(wait=False)\n",
      "                    pass\n", "an exception: tools still running are cancelled"),
    m("LOOP-5l", RUN, "        for message in unanswered_call_results(self.context.messages, known):\n"
      "            self.record(message)",
      "        for message in unanswered_call_results(self.context.messages, known):\n"
      "            self.append(message)", "an exception: the missing results are appended without events"),
    m("LOOP-6a", RUN, "                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n                "
                      "self.announce_prompts()\n",
      "                self.announce_prompts()\n                self.emit(TurnStart(self.loop_id, turn_index, "
      "trigger))\n",
      "prompts are announced right after the first TurnStart"),
    m("LOOP-6b", RUN, "        self.announce_prompts()\n        self.give_back_pending(announce=True)\n"
      '        self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))\n',
      "        self.give_back_pending(announce=True)\n"
      '        self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))\n        '
      'self.announce_prompts()\n',
      "undelivered prompts are announced before the limit notice"),
    m("LOOP-6c", RUN, "            self.announce_prompts()  # if no turn started, prompts are announced before "
                      "AgentEnd\n", "",
      "prompts of a run that ends before any turn are announced before AgentEnd"),
    m("LOOP-7a", RUN, "            while more_tool_calls or self.pending:", "            while more_tool_calls:",
      "pending steering continues the run"),
    m("LOOP-7b", RUN, "            if not self.take(FOLLOW_UP):", "            if True:",
      "the follow-up source is read when the run would end"),
    m("LOOP-7c", RUN, "                more_tool_calls = bool(reply.tool_calls)\n",
      "                more_tool_calls = bool(reply.tool_calls) or reply.stop_reason == StopReason.LENGTH\n",
      "a length reply without tool calls does not continue the run"),
    m("LOOP-7d", RUN, "                more_tool_calls = bool(reply.tool_calls)\n",
      "                more_tool_calls = bool(reply.tool_calls) and reply.stop_reason != StopReason.STOP\n",
      "a reply with tool calls continues the run whatever its stop reason"),
    m("LOOP-8a", RUN, "        self.take(STEERING)  # steering queued before the run",
      "        pass  # steering queued before the run", "steering queued before the run is read before the first turn"),
    m("LOOP-8b", RUN, "if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:",
      "if reply.stop_reason == StopReason.LENGTH:", "steering is read after a turn without tool calls"),
    m("LOOP-8c", RUN, "if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:", "if not more_tool_calls:",
      "steering is read after a length turn"),
    m("LOOP-8d", RUN, "if not more_tool_calls or reply.stop_reason == StopReason.LENGTH:", "if True:",
      "steering is not read again after a turn whose tools ran (TOOL-3 read it)"),
    mm("LOOP-8e", RUN, [("                self.end_turn(reply, self.run_tools(reply, runner))\n",
                         "                results = self.run_tools(reply, runner)\n"
                         "                if not reply.tool_calls or reply.stop_reason == StopReason.LENGTH:\n"
                         "                    self.take(STEERING)\n"
                         "                self.end_turn(reply, results)\n"),
                        (_AFTER_TURN, "")],
       "steering is read after after_turn"),
    m("LOOP-8f", RUN, _AFTER_TURN, _AFTER_TURN.replace("self.take(STEERING)", "self.take(STEERING), "
                                                                              "self.take(FOLLOW_UP)"),
      "steering and follow-up are not read together: follow-up only when no steering is pending"),
    m("LOOP-8g", RUN, _AFTER_TURN, _AFTER_TURN.replace("self.take(STEERING)", "self.take(FOLLOW_UP) or "
                                                                              "self.take(STEERING)"),
      "steering is read before the follow-up source"),
    mm("LOOP-8h", RUN, [("        self.take(STEERING)  # steering queued before the run", "        pass  # steering "
                                                                                          "queued before the run"),
                        ("                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n",
                         "                if turn_index == 0:\n                    self.take(STEERING)\n"
                         "                self.emit(TurnStart(self.loop_id, turn_index, trigger))\n")],
       "the steering read before the first turn happens before before_turn"),
    m("LOOP-9a", QUEUES, "            if self.mode == QueueMode.ALL:", "            if False:",
      "all mode hands out every queued message"),
    m("LOOP-9b", QUEUES, "                items = [self._items.popleft()]",
      "                items = list(self._items)\n                self._items.clear()",
      "one_at_a_time mode hands out one message per read"),
    m("LOOP-9c", QUEUES, "                items = list(self._items)\n                self._items.clear()",
      "                items = [self._items.popleft() for _ in range(min(2, len(self._items)))]",
      "all mode hands out every queued message, however many"),
    m("LOOP-10a", TRACKER, 'return f"Max turns reached ({turns}/{limits.max_turns})"',
      'return f"Max turns reached ({limits.max_turns})"', "the turn limit notice reads Max turns reached (t/max)"),
    m("LOOP-10b", TRACKER, "turns >= limits.max_turns", "turns > limits.max_turns", "a limit is reached at equality"),
    m("LOOP-10c", TYPES, "return self.total_tokens or (self.input + self.output + self.cache_read + self.cache_write)",
      "return self.total_tokens or (self.input + self.output)",
      "without total_tokens the token limit counts input + output + cache"),
    m("LOOP-10d", RUN, "                    self.tracker.record_turn(reply.usage.tokens())",
      "                    self.tracker.record_turn(0)", "the token limit sums the replies' tokens"),
    mm("LOOP-10e", RUN, [("        if config.execution_limits is not None:  # the duration limit counts from here "
                          "(LOOP-10)\n"
                          "            from ..context.tracker import ExecutionTracker\n\n"
                          "            self.tracker = ExecutionTracker(config.execution_limits, config.clock)\n", ""),
                         ("        for prompt in prompts:\n            self.record(prompt)\n",
                          "        if config.execution_limits is not None:\n"
                          "            from ..context.tracker import ExecutionTracker\n\n"
                          "            self.tracker = ExecutionTracker(config.execution_limits, config.clock)\n"
                          "        for prompt in prompts:\n            self.record(prompt)\n")],
       "the duration counts from just before AgentStart"),
    m("LOOP-10f", TRACKER, 'return f"Max tokens reached ({tokens}/{limits.max_total_tokens})"',
      'return f"Max tokens reached ({limits.max_total_tokens})"', "the token limit notice reads Max tokens reached "
                                                                  "(n/max)"),
    mm("LOOP-11a", RUN, [("        if config.transform_context is not None:\n            messages = "
                          "config.transform_context(list(messages))\n",
                          "        api_key = config.get_api_key(config.model_config.provider) if config.get_api_key is "
                          "not None else None\n"
                          "        if config.transform_context is not None:\n            messages = "
                          "config.transform_context(list(messages))\n"),
                         ("            llm_messages = config.convert_to_llm(list(messages))\n"
                          "        api_key = config.get_api_key(config.model_config.provider) if config.get_api_key is "
                          "not None else None\n",
                          "            llm_messages = config.convert_to_llm(list(messages))\n")],
       "transform_context runs before get_api_key"),
    m("LOOP-11b", RUN, "            messages = config.transform_context(list(messages))",
      "            config.transform_context(list(messages))", "the provider receives what transform_context returned"),
    m("LOOP-11c", RUN, "            context.system_prompt,\n", '            "",\n', "the provider receives the system "
                                                                                    "prompt"),
    m("LOOP-11d", RUN, "            config.max_tokens,\n            config.temperature,\n",
      "            None,\n            None,\n", "the provider receives the model settings"),
    m("LOOP-11e", RUN, "[tool_definition(tool) for tool in context.tools]", "[tool_definition(tool) for tool in "
                                                                            "context.tools][:1]",
      "the provider receives every tool definition"),
    m("LOOP-11f", RUN, "api_key = config.get_api_key(config.model_config.provider) if",
      "api_key = config.get_api_key(config.model_config.id) if", "get_api_key is asked for the provider"),
    m("LOOP-11g", RUN, "            config.cache_config,\n            api_key,\n", "            config.cache_config,\n "
                                                                                   "           None,\n",
      "the provider receives the api key"),
    m("LOOP-11h", "loop/tool.py", "    return ToolDefinition(tool.name, tool.description, tool.parameters)",
      '    return ToolDefinition(tool.name, "", tool.parameters)', "a tool definition carries the description"),
    m("LOOP-12a", VIEW, "        if isinstance(message, ExtensionMessage):\n            continue",
      "        if isinstance(message, ExtensionMessage):\n            pass", "extension messages are not sent to a "
                                                                             "model"),
    m("LOOP-12b", VIEW, "        if isinstance(message, AssistantMessage) and message.stop_reason in FAILED_STOPS:",
      "        if False:", "tool calls of failed replies are stripped from the model's view"),
    m("LOOP-12c", VIEW, "            if not kept:\n                continue", "            if not kept:\n              "
                                                                              "  pass",
      "a failed reply left empty is dropped from the model's view"),
    m("LOOP-12d", VIEW, "isinstance(message, AssistantMessage) and message.stop_reason in FAILED_STOPS:",
      "isinstance(message, AssistantMessage) and message.stop_reason in (*FAILED_STOPS, StopReason.LENGTH):",
      "only error and aborted replies lose their tool calls"),
    m("LOOP-12e", VIEW, "kept: list[Content] = [b for b in message.content if not isinstance(b, ToolCall)]",
      "kept: list[Content] = [b for b in message.content if type(b).__name__ == 'TextContent']",
      "a failed reply keeps its thinking in the model's view (only tool calls are removed)"),
    m("LOOP-13a", IDENTITY, "        number = _loop_counters.pop(key, 0) + 1", "        number = "
                                                                               "_loop_counters.pop(key, 0) + 2",
      "N counts from 1"),
    m("LOOP-13b", IDENTITY, "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)",
      "re.sub(r'[^A-Za-z0-9.-]', '-', config.model_config.id)", "the model slug turns every other character into -"),
    m("LOOP-13c", IDENTITY, '        segment += ".thinking"', '        segment += ""', "a thinking level adds "
                                                                                       ".thinking"),
    m("LOOP-13d", IDENTITY, "    if config.config_id:\n        return config.config_id", "    if False:\n        "
                                                                                         "return config.config_id",
      "a configured config_id is used"),
    m("LOOP-13e", IDENTITY, "    agent_id = context.agent_id = context.agent_id or random_uuid()",
      "    agent_id = context.agent_id or random_uuid()", "generated ids are written back to the context"),
    m("LOOP-14a", RUN, "        self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))\n"
      "        if self.config.after_turn is not None:\n            self.config.after_turn(self.context.messages, "
      "reply.usage)",
      "        if self.config.after_turn is not None:\n            self.config.after_turn(self.context.messages, "
      "reply.usage)\n"
      "        self.emit(TurnEnd(self.loop_id, reply, reply.usage, tool_results))", "after_turn runs after TurnEnd"),
    m("LOOP-14b", RUN, "            config.after_loop(context.messages, self.usage)",
      "            config.after_loop(self.new_messages, self.usage)", "after_loop receives the whole context"),
    m("LOOP-14c", RUN, "if reply.stop_reason == StopReason.ERROR and config.on_error is not None:",
      "if config.on_error is not None:", "on_error fires for error replies only"),
    m("LOOP-14d", RUN, "                    if reply.stop_reason == StopReason.ERROR and config.on_error is not None:\n"
      "                        config.on_error(reply.error_message or \"\")\n                    self.end_turn(reply, "
      "[])\n",
      "                    self.end_turn(reply, [])\n"
      "                    if reply.stop_reason == StopReason.ERROR and config.on_error is not None:\n"
      "                        config.on_error(reply.error_message or \"\")\n",
      "on_error runs before the error turn's TurnEnd"),
    m("LOOP-14e", RUN, "            self.config.after_turn(self.context.messages, reply.usage)",
      "            self.config.after_turn(self.context.messages, self.usage)", "after_turn receives the turn's usage"),
    m("LOOP-14f", RUN, "            self.config.after_turn(self.context.messages, reply.usage)",
      "            self.config.after_turn(self.new_messages, reply.usage)", "after_turn receives the whole context"),
    m("LOOP-14g", RUN, "config.before_turn(context.messages, turn_index) is False",
      "config.before_turn(self.new_messages, turn_index) is False", "before_turn receives the whole context"),
    mm("LOOP-14h", TOOLS, [("        if config.before_tool_execution is not None and config.before_tool_execution(",
                            "        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))\n"
                            "        ex.started = True\n"
                            "        if config.before_tool_execution is not None and config.before_tool_execution("),
                           ("        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))\n"
                            "        ex.started = True\n        if self.cancel.is_cancelled():  # aborted by a "
                            "subscriber",
                            "        if self.cancel.is_cancelled():  # aborted by a subscriber")],
       "before_tool_execution runs before ToolExecutionStart"),
    m("LOOP-14i", TOOLS, "        self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, is_error, "
                         "result.child_loop_id))\n"
      "        if self.config.after_tool_execution is not None:\n"
      "            self.config.after_tool_execution(call.name, call.id, is_error)\n",
      "        if self.config.after_tool_execution is not None:\n"
      "            self.config.after_tool_execution(call.name, call.id, is_error)\n"
      "        self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, is_error, result.child_loop_id))\n",
      "after_tool_execution runs after ToolExecutionEnd"),
    m("LOOP-14j", TOOLS, "            self.config.after_tool_execution(call.name, call.id, is_error)",
      "            self.config.after_tool_execution(call.name, call.id, False)", "after_tool_execution receives "
                                                                                 "is_error"),
    m("LOOP-14k", TOOLS, _UPDATE_HOOK + "        self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, "
                                        "partial))\n",
      "        self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))\n" + _UPDATE_HOOK,
      "before_tool_execution_update runs before ToolExecutionUpdate"),
    m("LOOP-14l", TOOLS, "        self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))\n"
      "        if config.after_tool_execution_update is not None:\n"
      "            config.after_tool_execution_update(call.name, call.id, text)\n",
      "        if config.after_tool_execution_update is not None:\n"
      "            config.after_tool_execution_update(call.name, call.id, text)\n"
      "        self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))\n",
      "after_tool_execution_update runs after ToolExecutionUpdate"),
    mm("LOOP-14m", TOOLS, [("        self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, is_error, "
                            "result.child_loop_id))\n"
                            "        if self.config.after_tool_execution is not None:\n"
                            "            self.config.after_tool_execution(call.name, call.id, is_error)\n",
                            "        self.emit(ToolExecutionEnd(self.loop_id, call.id, call.name, result, is_error, "
                            "result.child_loop_id))\n"),
                           ("            for execution in self._run_group(group):\n                "
                            "on_message(_message(execution))\n",
                            "            for execution in self._run_group(group):\n                "
                            "on_message(_message(execution))\n"
                            "                if execution.started and self.config.after_tool_execution is not None:\n"
                            "                    self.config.after_tool_execution(execution.call.name, "
                            "execution.call.id, "
                            "execution.is_error)\n")],
       "after_tool_execution comes before the call's toolResult is announced"),
    m("LOOP-14n", RUN, '                        config.on_error(reply.error_message or "")',
      '                        config.on_error("")', "on_error receives the error message"),
    m("LOOP-14o", RUN, "        if self.config.after_turn is not None:\n            self.config.after_turn(",
      "        if self.config.after_turn is not None and reply.stop_reason not in FAILED_STOPS:\n"
      "            self.config.after_turn(", "after_turn runs after an error or aborted turn too"),
    m("LOOP-15a", RUN, "is False:\n                    return RunOutcome.VETOED", "is False:\n                    pass",
      "before_turn returning false ends the run"),
    m("LOOP-15b", RUN, "config.before_turn(context.messages, turn_index) is False",
      "not config.before_turn(context.messages, turn_index)",
      "a hook that returns nothing counts as continue (before_turn)"),
    m("LOOP-16a", RUN, "        self.usage = self.usage.combine(reply.usage)", "        self.usage = reply.usage",
      "AgentEnd.usage sums every reply"),
    m("LOOP-16b", RUN, "        self.usage = self.usage.combine(reply.usage)",
      "        self.usage = self.usage if reply.stop_reason in FAILED_STOPS else self.usage.combine(reply.usage)",
      "AgentEnd.usage counts failed replies too"),
    m("LOOP-17a", RUN, "                if reply.stop_reason in FAILED_STOPS:\n",
      "                if reply.stop_reason == StopReason.ERROR:\n", "the tool calls of an aborted reply do not run"),
    m("LOOP-17b", RUN, _FAILED_TURN, _FAILED_TURN + "                    self.take(STEERING)\n",
      "no steering source is read after an error or aborted reply"),
    m("LOOP-17c", RUN, _FAILED_TURN, _FAILED_TURN + "                    self.take(FOLLOW_UP)\n",
      "no follow-up source is read after an error or aborted reply"),
    m("LOOP-17d", RUN, _FAILED_TURN, "                    self.usage = self.usage.combine(reply.usage)\n",
      "a failed reply's turn still ends with TurnEnd"),
    m("LOOP-18a", RUN, "            self.give_back_pending(announce=True)\n            self.emit(AgentEnd(",
      "            self.emit(AgentEnd(", "messages taken but not delivered are given back"),
    m("LOOP-18b", QUEUES, "            self._items.extendleft(reversed(kept))", "            self._items.extend(kept)",
      "given-back messages go to the front of their queue"),
    m("LOOP-18c", RUN, "                put_back(messages)", "                put_back(messages[::-1])",
      "given-back messages keep the order they were taken in"),
    m("LOOP-18d", QUEUES, "            self._items.extendleft(reversed(kept))", "            "
                                                                                "self._items.extendleft(kept)",
      "given-back messages keep the order they were taken in (queue side)"),
    m("LOOP-18e", RUN, _GIVE_BACK, _GIVE_BACK.replace("in messages:", "in messages[:0]:"),
      "a source that cannot take messages back gets them appended instead"),
    m("LOOP-18f", RUN, _GIVE_BACK, _GIVE_BACK.replace("if announce:", "if False:"),
      "... appended and announced before AgentEnd"),
    m("LOOP-18g", RUN, "        self.give_back_pending(announce=True)\n"
      '        self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))\n',
      '        self.append(UserMessage([TextContent(f"[Agent stopped: {reason}]")]))\n'
      "        self.give_back_pending(announce=True)\n", "... before a limit notice"),
    m("LOOP-18h", RUN, "            self.announce_prompts()  # if no turn started, prompts are announced before "
                       "AgentEnd\n"
      "            self.give_back_pending(announce=True)\n",
      "            self.give_back_pending(announce=True)\n"
      "            self.announce_prompts()  # if no turn started, prompts are announced before AgentEnd\n",
      "... after undelivered prompts"),
    m("LOOP-18i", RUN, "            self.give_back_pending(announce=False)\n        except Exception:",
      "            self.give_back_pending(announce=True)\n        except Exception:",
      "... or, when an exception ends the run, appended without events"),
    m("LOOP-18j", RUN, "        for queue, put_back in ((STEERING, self.config.put_back_steering_messages),\n"
      "                                (FOLLOW_UP, self.config.put_back_follow_up_messages)):",
      "        for queue, put_back in ((STEERING, self.config.put_back_follow_up_messages),\n"
      "                                (FOLLOW_UP, self.config.put_back_steering_messages)):",
      "a message goes back to its own source"),
    m("LOOP-19a", TOOLS, "                          lambda partial: inbox.put((_UPDATE, index, partial)),",
      "                          lambda partial: self._update(ex, partial),",
      "events are emitted on the loop's thread: tools post their updates to it"),

    # ================================================================ §5 tools
    m("TOOL-1a", TOOLS, "        ex.token = self.cancel.child_token()", "        ex.token = self.cancel",
      "a call's token is a child of the run's"),
    m("TOOL-1b", TOOLS, "        ctx = ToolContext(call.id, call.name, ex.token,", "        ctx = "
                                                                                   "ToolContext(call.name, call.name, "
                                                                                   "ex.token,",
      "execute receives the call id"),
    m("TOOL-2a", TOOLS, "        problem = validate_arguments(tool, call.arguments)\n", "        problem = None\n",
      "arguments are validated before execution"),
    m("TOOL-2b", TOOLS, 'INVALID_ARGS = "Invalid arguments for tool {name}: {reason}"',
      'INVALID_ARGS = "Invalid arguments for {name}: {reason}"', "Invalid arguments for tool {name}: {reason}"),
    m("TOOL-2c", ARGUMENTS, 'return f"arguments are not valid JSON: {raw[:200]!r}"', 'return f"bad JSON: {raw[:200]!r}"',
      "the reason for non-JSON arguments is arguments are not valid JSON: ..."),
    m("TOOL-3a", TOOLS, "        if mode == ToolExecution.PARALLEL:\n            groups = [calls]",
      "        if mode == ToolExecution.PARALLEL:\n            groups = [[call] for call in calls]",
      "parallel mode starts all calls at once and reads steering once, after all"),
    m("TOOL-3b", TOOLS, "            groups = [[call] for call in calls]\n        else:",
      "            groups = [calls]\n        else:", "sequential mode runs one call at a time"),
    m("TOOL-3c", TOOLS, "            size = max(1, self.config.batch_size)", "            size = max(1, "
                                                                             "self.config.batch_size + 1)",
      "batched mode runs groups of batch_size"),
    m("TOOL-3d", TOOLS, "            if poll_steering():\n", "            if len(groups) > 1 and poll_steering():\n",
      "parallel mode reads the steering source after the batch"),
    m("TOOL-4a", TOOLS, "            for ex in executions:  # failures found before execution end right away",
      "            for ex in []:  # failures found before execution end right away",
      "unknown tools and invalid arguments get a Start/End pair"),
    mm("TOOL-4b", TOOLS, [("        tool = self.tools.get(call.name)\n        if tool is None:\n"
                           "            ex.result, ex.is_error = error_result(NOT_FOUND.format(name=call.name)), True\n"
                           "            return ex\n", "        tool = self.tools.get(call.name)\n"),
                          ("        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))\n"
                           "        ex.started = True\n",
                           "        if self.tools.get(call.name) is None:\n"
                           "            ex.result, ex.is_error, ex.finished = "
                           "error_result(NOT_FOUND.format(name=call.name)), True, True\n"
                           "            return ex\n"
                           "        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, "
                           "call.arguments))\n        ex.started = True\n")],
       "an unknown tool's call also gets Start/End"),
    m("TOOL-4c", TOOLS, "            ex.result, ex.is_error = error_result(NOT_FOUND.format(name=call.name)), True\n   "
                        "         return ex\n",
      "            self._finish(ex, error_result(NOT_FOUND.format(name=call.name)), True)\n            return ex\n",
      "every Start of a batch precedes every End of it"),
    m("TOOL-4d", TOOLS, "            for i, call in enumerate(calls):\n                "
                        "executions.append(self._start(call, i, inbox))",
      "            for i, call in reversed(list(enumerate(calls))):\n                executions.insert(0, "
      "self._start(call, i, inbox))",
      "before_tool_execution and ToolExecutionStart go in call order"),
    m("TOOL-5a", TOOLS, "            for execution in self._run_group(group):", "            for execution in "
                                                                                "reversed(self._run_group(group)):",
      "results are announced in call order"),
    mm("TOOL-5b", TOOLS, [("        for n, group in enumerate(groups):\n            for execution in "
                           "self._run_group(group):\n"
                           "                on_message(_message(execution))\n",
                           "        done: list[_Execution] = []\n        for n, group in enumerate(groups):\n"
                           "            done += self._run_group(group)\n"
                           "            for execution in (done if n == len(groups) - 1 else []):\n"
                           "                on_message(_message(execution))\n")],
       "sequential/batched results are announced after each call/group"),
    m("TOOL-6a", TOOLS, "self._abandon(ex, error_result(TIMED_OUT.format(ms=ex.timeout_ms)))",
      "self._abandon(ex, error_result(ABORTED))", "a timed-out call gets Tool exceeded timeout of {N}ms"),
    m("TOOL-6b", TOOLS, '        ex.timeout_ms = getattr(tool, "timeout_ms", None) or config.tool_timeout_ms',
      '        ex.timeout_ms = config.tool_timeout_ms or getattr(tool, "timeout_ms", None)',
      "a tool's own timeout overrides the configured default"),
    m("TOOL-6c", TOOLS, "            if not ex.running:\n                continue  # a call that was already answered",
      "            if False:\n                continue  # a call that was already answered",
      "a call that has been answered emits nothing more"),
    m("TOOL-6d", TOOLS, "                self._abandon(ex, error_result(TIMED_OUT.format(ms=ex.timeout_ms)))",
      "                ex.deadline = None", "the run does not wait for a timed-out call"),
    m("TOOL-7a", TOOLS, 'NOT_FOUND = "Tool {name} not found"', 'NOT_FOUND = "Unknown tool {name}"',
      "Tool {name} not found"),
    m("TOOL-7b", TOOLS, 'RAISED = "Tool {name} raised {kind}: {message}"', 'RAISED = "Tool {name} failed: {message}"',
      "Tool {name} raised {ExceptionType}: {message}"),
    m("TOOL-7c", TOOLS, "        return error_result(_said(error)), True\n", '        return error_result(f"Error: '
                                                                           '{_said(error)}"), True\n',
      "a tool error's result is its own message"),
    m("TOOL-7d", TOOLS, "        return to_tool_result(value), False", "        return to_tool_result(value), True",
      "only failures are results with isError true"),
    m("TOOL-8a", TOOLS, "config.before_tool_execution(call.name, call.id, call.arguments) is False:",
      "config.before_tool_execution(call.name, call.id, call.arguments) is None:",
      "only an explicit false vetoes a call"),
    m("TOOL-8b", TOOLS, "            ex.result, ex.is_error, ex.finished = error_result(VETOED), True, True\n",
      "            ex.result, ex.is_error = error_result(VETOED), True\n"
      "            self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))\n"
      "            ex.started = True\n", "a vetoed call has no Start/End events"),
    m("TOOL-8c", TOOLS, 'VETOED = "Tool execution skipped by before_tool_execution hook."',
      'VETOED = "Skipped by before_tool_execution."', "Tool execution skipped by before_tool_execution hook."),
    m("TOOL-9a", RUN, "        if reply.stop_reason == StopReason.LENGTH:\n            runner.answer_truncated",
      "        if False:\n            runner.answer_truncated", "no call of a length reply runs"),
    m("TOOL-9b", TOOLS, '    "Tool call was not executed: the response hit the output token limit, so its arguments '
                        'may be "',
      '    "Tool call was not executed: the output token limit was hit, so its arguments may be "',
      "the TOOL-9 text"),
    m("TOOL-10a", TOOLS, "                config.before_tool_execution_update(call.name, call.id, text) is False:\n    "
                         "        return",
      "                config.before_tool_execution_update(call.name, call.id, text) is False:\n            pass",
      "before_tool_execution_update returning false drops the update"),
    m("TOOL-10b", TOOLS, "                config.before_tool_execution_update(call.name, call.id, text) is False:\n    "
                         "        return\n"
      "        self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))\n",
      "                config.before_tool_execution_update(call.name, call.id, text) is False:\n"
      "            pass\n        else:\n"
      "            self.emit(ToolExecutionUpdate(self.loop_id, call.id, call.name, partial))\n",
      "a dropped update skips the after-hook"),
    m("TOOL-10c", TOOLS, "                self.emit(ProgressMessage(self.loop_id, ex.call.id, ex.call.name, payload))",
      "                pass", "on_progress emits ProgressMessage"),
    m("TOOL-10d", TOOLS, "                self.emit(ProgressMessage(self.loop_id, ex.call.id, ex.call.name, payload))",
      '                self.emit(ProgressMessage(self.loop_id, ex.call.id, "", payload))',
      "ProgressMessage names the call's tool"),
    m("TOOL-11a", TOOLS, "            if poll_steering():\n", "            if poll_steering() and len(groups) == 1:\n",
      "steering after a call (group) skips the remaining calls"),
    m("TOOL-11b", TOOLS, 'SKIPPED_FOR_STEERING = "Skipped due to queued user message."',
      'SKIPPED_FOR_STEERING = "Skipped: the user sent a message."', "Skipped due to queued user message."),
    m("TOOL-11c", TOOLS, "                        on_message(_message_for(call, error_result(SKIPPED_FOR_STEERING), "
                         "True))",
      "                        self.emit(ToolExecutionStart(self.loop_id, call.id, call.name, call.arguments))\n"
      "                        on_message(_message_for(call, error_result(SKIPPED_FOR_STEERING), True))",
      "skipped calls have no Start/End events"),
    m("TOOL-12a", TOOLS, "list(result.content), is_error, details=result.details)", "list(result.content), is_error, "
                                                                                    "details=None)",
      "tool results keep details"),
    m("TOOL-12b", TOOLS, "result, is_error, result.child_loop_id))", "result, is_error, None))",
      "ToolExecutionEnd repeats child_loop_id"),
    m("TOOL-13a", RUN, "        elif calls:\n            allowed, refusal = allowed_calls(",
      "        elif calls and reply.stop_reason == StopReason.TOOL_USE:\n            allowed, refusal = allowed_calls(",
      "the calls of a reply that says stop run"),

    # ================================================================ §6 cancellation
    mm("CANCEL-1a", CANCEL, [("            pending.extend(reversed(list((children or {}).values())))", "            pass"),
                             ("            if token._cancelled:\n                return True\n            token = token._parent",
                              "            if token._cancelled:\n                return True\n            token = None")],
       "children are cancelled with their parent"),
    m("CANCEL-1b", CANCEL, "        callback()\n        return _nothing", "        return _nothing",
      "a callback registered on a cancelled token runs at once"),
    m("CANCEL-2a", STREAM, "        content = list(base.content) if base is not None else []",
      "        content = list(base.content) if base is not None and not cancelled else []",
      "an aborted reply keeps the content that had arrived"),
    m("CANCEL-2b", STREAM, "            stop, text = StopReason.ABORTED,", "            stop, text = StopReason.ERROR,",
      "a cancelled model call ends with stop reason aborted"),
    m("CANCEL-3a", TOOLS, "        if self.cancel.is_cancelled():\n            ex.result, ex.is_error, ex.finished = "
                          "error_result(ABORTED), True, True\n"
      "            return ex\n        if config.before_tool_execution",
      "        if config.before_tool_execution", "cancellation is checked before before_tool_execution"),
    m("CANCEL-3b", TOOLS, "        if self.cancel.is_cancelled():  # aborted while the hook ran (an approval prompt): "
                          "not started (CANCEL-3)\n"
      "            ex.result, ex.is_error, ex.finished = error_result(ABORTED), True, True\n            return "
      "ex\n", "",
      "cancellation is checked again after before_tool_execution returns"),
    mm("CANCEL-3c", TOOLS, [("        if self.cancel.is_cancelled():  # aborted by a subscriber of ToolExecutionStart: "
                             "it ends at once\n"
                             "            ex.result, ex.is_error = error_result(ABORTED), True\n            return "
                             "ex\n", ""),
                            ("    if ctx.cancel.is_cancelled():  # the last moment", "    if False:  # the last "
                                                                                     "moment")],
       "no tool begins executing once the run is cancelled (checks after ToolExecutionStart)"),
    m("CANCEL-3h", TOOLS, "        if self.cancel.is_cancelled():  # aborted by a subscriber of ToolExecutionStart: "
                          "it ends at once\n"
                          "            ex.result, ex.is_error = error_result(ABORTED), True\n            return ex\n", "",
      "a call found cancelled right after its ToolExecutionStart ends as aborted (not as not found or invalid)"),
    m("CANCEL-3d", TOOLS, "    if ctx.cancel.is_cancelled():  # the last moment", "    if False:  # the last moment",
      "cancellation is checked at the moment execute would be called"),
    m("CANCEL-3e", TOOLS, "grace_deadline = sync.monotonic() + self.config.tool_abort_grace_ms / 1000.0",
      "grace_deadline = sync.monotonic()", "running calls get a grace period to return their own result"),
    m("CANCEL-3f", TOOLS, "                self._finish(ex, *_outcome(ex.call, *payload))",
      "                self._finish(ex, *(_outcome(ex.call, *payload) if grace_deadline is None else "
      "(error_result(ABORTED), True)))", "a running call that returns within the grace period keeps its own result"),
    m("CANCEL-3g", TOOLS, "            if grace_deadline is not None and now >= grace_deadline:\n"
      "                self._abandon(ex, error_result(ABORTED))",
      "            if grace_deadline is not None and now >= grace_deadline:\n"
      "                self._abandon(ex, error_result(TIMED_OUT.format(ms=0)))",
      "a call still running after the grace period gets Tool execution aborted."),
    m("CANCEL-4b", RUN, _RECHECK, "",
      "a run aborted while before_turn runs ends before TurnStart, with no model call"),
    m("CANCEL-4a", RUN, "                if self.cancel.is_cancelled():\n                    return "
                        "RunOutcome.ABORTED\n"
      "                if self.limit_reached():",
      "                if self.cancel.is_cancelled() and turn_index > 0:\n                    return "
      "RunOutcome.ABORTED\n"
      "                if self.limit_reached():", "a run cancelled before its first turn makes no model call"),

    # ================================================================ §7 providers and errors
    m("ERR-1a", RETRY, "if failure.is_retryable() and retries < policy.max_retries:", "if retries < "
                                                                                      "policy.max_retries:",
      "only rate_limited and network errors are retried"),
    m("ERR-1b", RETRY, "if failure.is_retryable() and retries < policy.max_retries:",
      "if failure.is_retryable() and retries <= policy.max_retries:", "at most max_retries retries"),
    m("ERR-1c", "providers/base.py", "        return self.kind in (ErrorKind.RATE_LIMITED, ErrorKind.NETWORK)",
      "        return self.kind == ErrorKind.RATE_LIMITED", "network errors are retried"),
    m("ERR-2a", RETRY, "        if failure is None or result.visible or cancel.is_cancelled():",
      "        if failure is None or cancel.is_cancelled():", "an attempt is retried only while nothing of it is "
                                                              "visible"),
    m("ERR-2b", STREAM, "        base = reply or (self.partial if self.visible else None)", "        base = reply",
      "a failure after deltas keeps the partial content"),
    m("ERR-2c", STREAM, "        content = list(base.content) if base is not None else []",
      "        content = [b for b in base.content if type(b).__name__ != 'ThinkingContent'] if base is not None else "
      "[]",
      "a failure after deltas keeps the partial content, thinking included"),
    m("ERR-3a", STREAM, "            text = str(failure) if failure is not None else", '            text = "error" if '
                                                                                       'failure is not None else',
      "the error reply carries the error message"),
    m("ERR-3b", STREAM, "        base = reply or (self.partial if self.visible else None)",
      "        base = reply or self.partial", "a failure before any delta is an empty error reply"),
    m("ERR-4a", RETRY, "            overflow_retried = True\n", "            overflow_retried = False\n",
      "a second overflow of the same request is not retried"),
    m("ERR-4b", RETRY, "if failure.kind == ErrorKind.CONTEXT_OVERFLOW and on_overflow is not None and not "
                       "overflow_retried:",
      "if failure.kind == ErrorKind.CONTEXT_OVERFLOW and not overflow_retried:",
      "without context settings an overflow is not retried"),
    mm("ERR-4c", RETRY, [("        if failure is None or result.visible or cancel.is_cancelled():\n",
                          "        if failure is not None and failure.kind == ErrorKind.CONTEXT_OVERFLOW and "
                          "on_overflow is not None \\\n"
                          "                and not overflow_retried and not cancel.is_cancelled():\n"
                          "            overflow_retried = True\n            on_overflow()\n            continue\n"
                          "        if failure is None or result.visible or cancel.is_cancelled():\n")],
       "an overflow after deltas is not retried"),
    mm("ERR-4d", RUN, [("overflow = self.compact_after_overflow if self.config.context_config is not None else None",
                        "overflow = self.compact_after_overflow if self.config.context_config is not None "
                        "and not getattr(self, 'overflowed', False) else None"),
                       ("        self.compact_if_configured(tighter=True)\n",
                        "        self.compact_if_configured(tighter=True)\n        self.overflowed = True\n")],
       "each model call of a run gets its own overflow retry"),
    m("ERR-4e", RUN, "        budget = overflow_budget(messages, cfg) if tighter else None", "        budget = None",
      "after an overflow the context is compacted with a tighter budget"),

    # ================================================================ §8 context
    m("CTX-3a", RUN, "            messages[:] = compacted", "            self.context.messages = compacted",
      "compaction rewrites the caller's message list in place"),
    m("CTX-3b", RUN, "            messages[:] = compacted\n",
      "            messages[:] = compacted\n"
      "            self.new_messages[:] = [m for m in self.new_messages if any(m is c for c in compacted)]\n",
      "AgentEnd.messages and the return value are never compacted"),

    # ================================================================ §13.1 sub-agents
    m("SUB-1a", SUBAGENT, 'f"{session_id}.sub.1"', 'f"{session_id}.sub.0"', "the child's loop id is "
                                                                            "{session_id}.sub.1"),
    m("SUB-1b", SUBAGENT, "self.parent_loop_id or ctx.loop_id)", "self.parent_loop_id)",
      "the child's parent_loop_id is the calling loop's id"),
    m("SUB-1c", SUBAGENT, "first_turn_trigger=TurnTrigger.SUB_AGENT", "first_turn_trigger=TurnTrigger.USER",
      "the child's first turn is triggered by SubAgent"),
    m("SUB-1d", SUBAGENT, "ExecutionLimits(max_turns=self.max_turns,", "ExecutionLimits(max_turns=None,",
      "the child has a turn limit"),
    m("SUB-1e", SUBAGENT, "        if not isinstance(task, str) or not task.strip():", "        if not "
                                                                                       "isinstance(task, str):",
      "an empty or blank task is an error result"),
    m("SUB-1f", SUBAGENT, '            raise ToolError("task must be a non-empty string")',
      '            raise ToolError("no task")', "the empty-task error text"),
    m("SUB-1g", SUBAGENT, "        session_id = random_uuid()\n", "        session_id = ctx.loop_id.split('.')[0]\n",
      "the child has a new session id"),
    m("SUB-1h", SUBAGENT, "        context = AgentContext(self.system_prompt, [],", '        context = '
                                                                                    'AgentContext("", [],',
      "the child has its own system prompt"),
    m("SUB-2a", SUBAGENT, '                self.ctx.update("".join(self.text))', "                "
                                                                                 "self.ctx.update(delta.delta)",
      "the partial result is the child's reply text so far"),
    m("SUB-2b", SUBAGENT, "            self.ctx.progress(event.text)", "            pass",
      "child progress reaches the parent as ProgressMessage"),
    m("SUB-2c", SUBAGENT, "            self.turns += 1", "            self.turns += 2", "details.turns counts the "
                                                                                        "child's turns"),
    m("SUB-2d", SUBAGENT, "child_loop_id=context.loop_id)", "child_loop_id=None)", "the result carries child_loop_id"),
    m("SUB-2e", SUBAGENT, '        details = {"sub_agent": self.name, "turns": watcher.turns, "usage": '
                          'usage.to_json()}',
      '        details = {"sub_agent": self.name, "turns": watcher.turns}', "details carry the child's usage"),
    m("SUB-3a", SUBAGENT, "context, config, watcher.sink, ctx.cancel)", "context, config, watcher.sink, None)",
      "the child runs on the call's cancellation token"),
    m("SUB-4a", SUBAGENT, "    for message in reversed(messages):\n        if not isinstance(message, "
                          "AssistantMessage):",
      "    for message in messages:\n        if not isinstance(message, AssistantMessage):",
      "the final text is the last assistant message with text"),
    m("SUB-4b", SUBAGENT, 'NO_TEXT = "(sub-agent produced no text output)"', 'NO_TEXT = "(no output)"',
      "the fallback text"),
    m("SUB-4c", SUBAGENT, '    return f"{NO_TEXT}: error: {last_error}" if last_error else NO_TEXT', "    return NO_TE"
                                                                                                     "XT",
      "the fallback carries the failed reply's error"),
    m("SUB-4d", SUBAGENT, "                if self.depth + 1 >= self.max_depth:", "                if self.depth + 1 > "
                                                                                  "self.max_depth:",
      "sub-agent tools deeper than max_depth are left out of a child's tools"),
    m("SUB-4e", SUBAGENT, "        usage = Usage()\n        for message in messages:",
      "        if ctx.cancel.is_cancelled():\n            raise ToolError('sub-agent aborted')\n"
      "        usage = Usage()\n        for message in messages:",
      "an aborted child gives a result, never an error"),

    # ================================================================ §13.2 sessions (judged by tests/session)
    m("SESS-1a", RECORDER_STATE, "        record.messages = list(event.messages)", "        record.messages = "
                                                                             "list(event.messages)[1:]",
      "a loop record's messages are exactly AgentEnd.messages"),
    m("SESS-1b", RECORDER_STATE, "record.status = LoopStatus.REJECTED if event.rejection is not None else "
                           "LoopStatus.of_outcome(event.outcome)",
      "record.status = LoopStatus.COMPLETED", "a loop record's status comes from the outcome"),
    m("SESS-2a", RECORDER_STATE, "        if record.continuation_kind is not None or session.parent_spawn_ref is not None:\n",
      "        if session.parent_spawn_ref is not None:\n",
      "only a parent in another session with no continuation_kind makes the child a sub-agent spawn"),
    m("SESS-2b", RECORDER_STATE, "        return not (session_id in self._awaiting or "
                                 "self._open_groups.get(session_id) or self._open.get(session_id))",
      "        return not (self._open_groups.get(session_id) or self._open.get(session_id))",
      "a sub-agent session is held back (flush/drain) until its spawn is named"),
    m("SESS-2c", RECORDER, "                if session_id not in self._dirty or session_id in self._awaiting:",
      "                if session_id not in self._dirty:",
      "a sub-agent session is held back (flush_changes) until its spawn is named"),
    m("SESS-3a", RECORDER_STATE, "                record.status, record.ended_at = LoopStatus.ABORTED, ended",
      "                record.ended_at = ended", "a branch that never started becomes Aborted"),
    m("SESS-3b", RECORDER_STATE, "event.evaluation_usage, loop_id == event.selected_loop_id)", "event.evaluation_usage, "
                                                                                         "True)",
      "is_selected only on the winner"),
    m("SESS-4a", RECORDER, "            for session in ready:\n                self._forget(session)\n            "
                           "return sorted(ready, key=_created)",
      "            return sorted(ready, key=_created)", "drain forgets what it hands out"),
    m("SESS-4b", RECORDER, "                    if record is not None:\n                        record.status = "
                           "LoopStatus.ABORTED",
      "                    if record is not None:\n                        pass", "finalize marks open loops Aborted"),
    m("SESS-5a", "session/model.py", "    out.update(session.extra)", "    pass", "unknown keys are kept"),
    m("SESS-6a", JSON_STORE, "sorted((-mtime, sid) for sid, mtime in newest.items())",
      "sorted((mtime, sid) for sid, mtime in newest.items())", "list_ids is newest save first"),
    m("SESS-6b", JSON_STORE, "            latest[loop_id] = (first[0], first[1], loop)",
      "            latest[loop_id] = first",
      "save rewrites (as a new record) the loops that changed: the stored session has the saved version"),
    m("SESS-7a", "agent/recording.py", "list(messages), usage, outcome=RunOutcome.ERROR))",
      "list(messages), usage, outcome=RunOutcome.COMPLETED))",
      "a run that raises is recorded as ended with outcome error"),
    m("SESS-7b", "agent/recording.py", "        except Exception:\n            failed.add(session.session_id)\n"
                                       "            log.error(\"could not save session",
      "        except ArithmeticError:\n            failed.add(session.session_id)\n"
      "            log.error(\"could not save session",
      "a failing store never changes the run's result"),

    # ================================================================ §13.3 parallel evaluation
    m("EVAL-1a", PARALLEL, "emit(ParallelLoopEnd(session_id, selected.loop_id, decision.index, usage, unended=",
      "emit(ParallelLoopEnd(session_id, selected.loop_id, 0, usage, unended=", "ParallelLoopEnd names the selected "
                                                                               "config index"),
    m("EVAL-1b", PARALLEL, "emit(ParallelLoopEnd(session_id, selected.loop_id, decision.index, usage, unended=",
      "emit(ParallelLoopEnd(session_id, selected.loop_id, decision.index, Usage(), unended=",
      "ParallelLoopEnd carries the evaluation's usage"),
    m("EVAL-1c", PARALLEL, '[b.context.loop_id or "" for b in branches]', '[b.context.loop_id or "" for b in '
                                                                          'branches][::-1]',
      "ParallelLoopStart lists the branches' loop ids, in config order"),
    m("EVAL-1d", PARALLEL, 'loop_id = f"{session}.{segment}.{next_loop_number(session, segment)}"',
      'loop_id = f"{random_uuid()}.{segment}.{next_loop_number(session, segment)}"',
      "each branch has its own loop id in the base session"),
    m("EVAL-2a", PARALLEL, "context = AgentContext(base.system_prompt, list(base.messages), base.tools,",
      "context = AgentContext(base.system_prompt, base.messages, base.tools,",
      "each branch works on its own copy; the base context's messages are never changed"),
    m("EVAL-3a", PARALLEL, "    if not prompts:\n        check_can_continue(base_context)", "    if False:\n        "
                                                                                            "check_can_continue(base_c"
                                                                                            "ontext)",
      "a continuation's preconditions are checked before anything is emitted"),
    m("EVAL-4a", PARALLEL, "        branches.append(Branch(i, config, context, cancel.child_token(), owner=threading.get_ident()))",
      "        branches.append(Branch(i, config, context, CancellationToken(), owner=threading.get_ident()))",
      "cancelling aborts every branch"),
    m("EVAL-4b", "evaluation/branch.py", "        except BaseException as exc:  # kept in the branch's outcome; the other branches "
                           "go on\n"
      "            self.exception = exc\n",
      "        except BaseException as exc:  # kept in the branch's outcome; the other branches go on\n"
      "            self.exception = None\n", "a branch that raised keeps that in its outcome (and is not selected)"),
    m("EVAL-5a", MODEL, "    return good or list(range(len(outcomes)))", "    return list(range(len(outcomes)))",
      "a failed branch is selected only when every branch failed"),
    m("EVAL-5b", STRATEGIES, "        if count != 1:", "        if count < 1:", "Transparent with more than one config "
                                                                                "fails before anything runs"),
    m("EVAL-5c", MODEL, "    return good or list(range(len(outcomes)))", "    return good or "
                                                                         "list(range(len(outcomes)))[::-1]",
      "when every branch failed, the first branch (config order) is selected"),
    m("EVAL-5d", MODEL, "        return self.exception is None and self.outcome == RunOutcome.COMPLETED",
      "        return self.exception is None and self.outcome != RunOutcome.ERROR",
      "a branch that ended by a limit (or abort, veto) failed"),
    m("EVAL-5e", STRATEGIES, "        return _by_tokens(outcomes, min, \"fewest tokens\"), Usage()",
      "        return _by_tokens(outcomes, max, \"fewest tokens\"), Usage()", "TokenEfficient selects the fewest "
                                                                              "tokens"),
    m("EVAL-6a", JUDGE, "    number = int(match.group())", "    number = int(_INTEGER.findall(answer)[-1])",
      "the judge's first integer selects"),
    m("EVAL-6b", JUDGE, "[], (), first.agent_id, first.session_id)", "[], (), first.agent_id, None)",
      "the judge runs in the branches' session"),
    m("EVAL-6c", JUDGE, "            if warning:\n                self.emit(ProgressMessage(", "            if "
                                                                                               "False:\n               "
                                                                                               " self.emit(ProgressMes"
                                                                                               "sage(",
      "no integer selects the first candidate, with a ProgressMessage"),
    m("EVAL-6d", JUDGE, "[final_text(outcomes[i].new_messages) for i in indices]",
      "[transcript(outcomes[i].new_messages) for i in indices]",
      "the judge sees each branch's final answer only"),
    # ================================================================ §3 events and §4 the loop, clause by clause and
    # in each direction (issue 32). The suite missed all of these but LOOP-10l and LOOP-10m (the other direction of a
    # limit boundary, listed so that every limit has both); each is killed by a fixture written for it.
    m("EVT-2f", TYPES, '        return {self.kind.capitalize(): {"tag": self.tag}}',
      '        return {self.kind.capitalize(): {"tag": self.tag}} if self.tag is not None else self.kind.capitalize()',
      'a continuation kind with a null tag keeps its shape {"Branch": {"tag": null}}'),
    m("EVT-5f", RUN, "                trigger = TurnTrigger.CONTINUATION\n",
      "                trigger = self.first_turn_trigger() if self.continuation else TurnTrigger.CONTINUATION\n",
      "later turns of a branch continuation are triggered by Continuation, not Branch"),
    m("LOOP-2l", RUN, "            if rejection is not None:\n                self.emit(InputRejected(loop_id, rejection))\n",
      "            if rejection is not None:\n                context.messages.extend(prompts)\n"
      "                self.emit(InputRejected(loop_id, rejection))\n",
      "a rejected run does not append its prompts to the context"),
    m("LOOP-2m", RUN, "        if prompts:\n            rejection = self.apply_input_filters(prompts)",
      "        if prompts or self.continuation:\n            rejection = self.apply_input_filters(prompts or "
      "[m for m in context.messages if isinstance(m, UserMessage)][-1:])",
      "input filters run for agent_loop only, not on a continuation"),
    m("LOOP-2n", RUN, "                if isinstance(prompt, UserMessage):\n                    prompts[i] = replace(",
      "                if True:\n                    prompts[i] = replace(",
      "warnings go onto the last user prompt, not onto a later prompt of another role"),
    m("LOOP-3f", RUN, "    if not context.agent_id or not context.session_id:", "    if not context.session_id:",
      "continue refuses a context without agent_id"),
    m("LOOP-3g", RUN, "    if isinstance(last, AssistantMessage):\n",
      "    if isinstance(last, AssistantMessage) and last.stop_reason not in (StopReason.ERROR, StopReason.ABORTED):\n",
      "continue refuses a context whose last message is an assistant message, an error reply too"),
    m("LOOP-5m", RUN, "        except BaseException:\n            self.unwind()\n            raise\n",
      "        except BaseException:\n            self.unwind()\n            if config.after_loop is not None:\n"
      "                config.after_loop(context.messages, self.usage)\n            raise\n",
      "an exception ends the run at once: no further hook, after_loop included"),
    m("LOOP-5n", RUN, "            result = run_filter(flt, text)\n",
      "            try:\n                result = run_filter(flt, text)\n            except Exception:\n"
      "                continue\n",
      "an exception raised by an input filter is not caught"),
    m("LOOP-5o", RUN, "            request = self.request = self.build_request()  # runs user hooks: their exceptions reach "
                      "the caller\n",
      "            try:\n                request = self.request = self.build_request()\n"
      "            except Exception as error:\n"
      "                return Attempt(None, ProviderError(ErrorKind.OTHER, str(error)), False)\n",
      "an exception raised by get_api_key is not a failed model call: it reaches the caller"),
    m("LOOP-7e", RUN, "                more_tool_calls = bool(reply.tool_calls)\n",
      "                more_tool_calls = bool(reply.tool_calls) or reply.stop_reason == StopReason.TOOL_USE\n",
      "a reply without tool calls does not continue the run, whatever its stop reason (toolUse)"),
    m("LOOP-8i", TOOLS, "            if poll_steering():\n",
      "            if (mode != ToolExecution.SEQUENTIAL or n + 1 < len(groups)) and poll_steering():\n",
      "sequential mode reads the steering source after each call, the last one included"),
    m("LOOP-8j", TOOLS, "            if poll_steering():\n",
      "            if (mode != ToolExecution.BATCHED or n + 1 < len(groups)) and poll_steering():\n",
      "batched mode reads the steering source after each group, the last one included"),
    m("LOOP-8k", RUN, "        self.take(STEERING)  # steering queued before the run",
      "        if not self.continuation:\n            self.take(STEERING)  # steering queued before the run",
      "steering queued before the run is read before the first turn of a continuation too"),
    m("LOOP-8l", RUN, "                    self.take(STEERING)  # no tool ran",
      "                    while self.take(STEERING): pass  # no tool ran",
      "after a turn without tool calls the steering source is read once"),
    m("LOOP-10g", TRACKER, "tokens >= limits.max_total_tokens", "tokens + 1 >= limits.max_total_tokens",
      "one token below the token limit the run goes on"),
    m("LOOP-10h", TRACKER, "if elapsed >= limits.max_duration:", "if elapsed > limits.max_duration:",
      "the duration limit is reached at equality"),
    m("LOOP-10i", TYPES, "return self.total_tokens or (self.input + self.output + self.cache_read + self.cache_write)",
      "return self.total_tokens or (self.input + self.output + self.reasoning + self.cache_read + self.cache_write)",
      "without total_tokens the token limit counts input + output + cache, not reasoning"),
    m("LOOP-10j", TYPES, "return self.total_tokens or (self.input + self.output + self.cache_read + self.cache_write)",
      "return self.input + self.output + self.cache_read + self.cache_write",
      "a reported total_tokens counts as reported"),
    mm("LOOP-10k", RUN, [("        if config.execution_limits is not None:  # the duration limit counts from here "
                          "(LOOP-10)\n"
                          "            from ..context.tracker import ExecutionTracker\n\n"
                          "            self.tracker = ExecutionTracker(config.execution_limits, config.clock)\n", ""),
                         ("        identity = ensure_identity(context, config)\n",
                          "        identity = ensure_identity(context, config)\n"
                          "        if config.execution_limits is not None:\n"
                          "            from ..context.tracker import ExecutionTracker\n\n"
                          "            self.tracker = ExecutionTracker(config.execution_limits, config.clock)\n")],
       "the duration counts from just before AgentStart, not from before before_loop"),
    m("LOOP-10l", TRACKER, "tokens >= limits.max_total_tokens", "tokens > limits.max_total_tokens",
      "the token limit is reached at equality"),
    m("LOOP-10m", TRACKER, "turns >= limits.max_turns", "turns + 1 >= limits.max_turns",
      "one turn below the turn limit the run goes on"),
    m("LOOP-11i", RUN, "        api_key = config.get_api_key(config.model_config.provider) if config.get_api_key is not None "
                       "else None\n",
      "        if not hasattr(self, 'api_key'):\n            self.api_key = config.get_api_key(config.model_config.provider) "
      "if config.get_api_key is not None else None\n        api_key = self.api_key\n",
      "get_api_key is called before each model call, not once per run"),
    m("LOOP-11j", RUN, "        if config.transform_context is not None:\n            messages = "
                       "config.transform_context(list(messages))\n",
      "        if config.transform_context is not None and not hasattr(self, 'transformed'):\n"
      "            self.transformed = True\n            messages = config.transform_context(list(messages))\n",
      "transform_context is called before each model call, not once per run"),
    m("LOOP-11k", RUN, "            messages = config.transform_context(list(messages))",
      "            context.messages[:] = config.transform_context(list(messages))",
      "what transform_context returns goes to the provider, not into the history"),
    m("LOOP-13f", IDENTITY, "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)",
      "re.sub(r'[^a-z0-9-]', '-', config.model_config.id.lower())", "the model slug keeps the case of ASCII letters"),
    m("LOOP-13g", IDENTITY, "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)",
      "re.sub(r'[^A-Za-z0-9-]+', '-', config.model_config.id)", "each other character becomes one - (runs are kept)"),
    m("LOOP-13h", IDENTITY, "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)",
      "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id).strip('-')",
      "each other character becomes - (at the ends too)"),
    m("LOOP-13i", IDENTITY, "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)",
      "''.join(c if c.isalnum() or c == '-' else '-' for c in config.model_config.id)",
      "the slug keeps ASCII letters and digits only (not other Unicode letters)"),
    m("LOOP-13j", IDENTITY, "re.sub(r'[^A-Za-z0-9-]', '-', config.model_config.id)",
      "re.sub(rb'[^A-Za-z0-9-]', b'-', config.model_config.id.encode()).decode()",
      "the slug replaces characters, not UTF-8 bytes"),
    m("LOOP-13k", IDENTITY, "    segment = f\"{provider}.{re.sub(",
      "    segment = f\"{re.sub(r'[^A-Za-z0-9-]', '-', provider)}.{re.sub(",
      "only the model id is slugged: the provider is used as is"),
    mm("LOOP-13l", IDENTITY, [("    if config.config_id:\n        return config.config_id\n", ""),
                             ("    segment = f\"{provider}", "    segment = config.config_id or f\"{provider}")],
       "a configured config_id is used as is: a thinking level adds .thinking only to {provider}.{model_slug}"),
    # ================================================================ issue 32: §5 tools, §6 cancellation,
    # §13.1 sub-agents, §13.3 parallel evaluation, clause by clause (each killed by a fixture of that round)
    m("TOOL-2d", "providers/base.py", "    return value if isinstance(value, dict) and depth(value) <= MAX_DEPTH else",
      "    return value if depth(value) <= MAX_DEPTH else",
      "argument text that is JSON but not an object is kept as {__raw_arguments: text} and fails validation"),
    m("TOOL-4e", TOOLS,
      "        if self.config.after_tool_execution is not None:\n"
      "            self.config.after_tool_execution(call.name, call.id, is_error)",
      "        if self.config.after_tool_execution is not None and (call.name in self.tools or "
      "_text_of(result) == ABORTED):\n            self.config.after_tool_execution(call.name, call.id, is_error)",
      "a call to an unknown tool gets after_tool_execution after its ToolExecutionEnd, like any call"),
    m("TOOL-4f", TOOLS,
      "        if self.config.after_tool_execution is not None:\n"
      "            self.config.after_tool_execution(call.name, call.id, is_error)",
      "        if self.config.after_tool_execution is not None and not "
      "_text_of(result).startswith(\"Invalid arguments for tool \"):\n"
      "            self.config.after_tool_execution(call.name, call.id, is_error)",
      "a call with invalid arguments gets after_tool_execution after its ToolExecutionEnd, like any call"),
    m("TOOL-10e", TOOLS,
      "            elif kind == _PROGRESS:\n"
      "                self.emit(ProgressMessage(self.loop_id, ex.call.id, ex.call.name, payload))",
      "            elif kind == _PROGRESS:\n"
      "                if self.config.before_tool_execution_update is None or \\\n"
      "                        self.config.before_tool_execution_update(ex.call.name, ex.call.id, payload) "
      "is not False:\n"
      "                    self.emit(ProgressMessage(self.loop_id, ex.call.id, ex.call.name, payload))",
      "progress is not an update: the update hooks neither see nor drop it"),
    m("TOOL-11e", TOOLS,
      "                        on_message(_message_for(call, error_result(SKIPPED_FOR_STEERING), True))",
      "                        if self.config.before_tool_execution is not None:\n"
      "                            self.config.before_tool_execution(call.name, call.id, call.arguments)\n"
      "                        on_message(_message_for(call, error_result(SKIPPED_FOR_STEERING), True))",
      "calls skipped for steering run no tool hook"),
    m("CANCEL-3i", TOOLS, "            if self.cancel.is_cancelled():\n"
                          "                continue  # the remaining calls are answered as aborted by _start\n", "",
      "once cancelled, the remaining calls are aborted: no steering read turns them into skipped calls"),
    m("SUB-1i", SUBAGENT, '    "required": ["task"],\n', '    "required": [],\n',
      "a sub-agent call without a task fails validation (TOOL-2)"),
    m("SUB-1j", SUBAGENT, "        if not isinstance(task, str) or not task.strip():",
      "        if not isinstance(task, str) or not task:", "a blank task is the error result"),
    m("SUB-1k", SUBAGENT, "self.parent_loop_id or ctx.loop_id)", "ctx.loop_id or self.parent_loop_id)",
      "the child's parent_loop_id is the configured one when one is configured"),
    m("SUB-1l", SUBAGENT, "    max_turns: int = 10\n", "    max_turns: int = 25\n",
      "the child's turn limit is 10 by default"),
    m("SUB-2f", SUBAGENT, "                usage = usage.combine(message.usage)",
      "                usage = message.usage",
      "details.usage is the usage of all the child's replies"),
    m("SUB-4f", SUBAGENT, '        if texts:\n            return "\\n".join(texts)\n',
      '        if texts:\n            return "\\n".join(texts)\n        if not message.error_message:\n'
      "            break\n",
      "the final text is that of the last assistant message with text"),
    m("SUB-4g", SUBAGENT, "                tool = replace(tool, depth=self.depth + 1, max_depth=self.max_depth,",
      "                tool = replace(tool, depth=self.depth, max_depth=self.max_depth,",
      "a nested sub-agent tool counts one level deeper"),
    m("SUB-4h", SUBAGENT, "    max_depth: int = 1\n", "    max_depth: int = 2\n", "max_depth is 1 by default"),
    m("EVAL-5f", STRATEGIES,
      "    best = pick(candidate_indices(outcomes), key=lambda i: outcomes[i].usage.tokens())",
      "    best = pick(range(len(outcomes)), key=lambda i: outcomes[i].usage.tokens())",
      "TokenEfficient and Elaborate rank only the successful branches while any succeeded"),
    m("EVAL-5g", STRATEGIES, '        return _by_tokens(outcomes, min, "fewest tokens"), Usage()',
      "        best = min(range(len(outcomes)), key=lambda i: outcomes[i].usage.tokens())\n"
      '        return EvaluationDecision.select(best, "fewest tokens"), Usage()',
      "TokenEfficient never selects a failed branch while one succeeded"),
    m("EVAL-5h", STRATEGIES, '        return _by_tokens(outcomes, max, "most tokens"), Usage()',
      "        best = max(range(len(outcomes)), key=lambda i: outcomes[i].usage.tokens())\n"
      '        return EvaluationDecision.select(best, "most tokens"), Usage()',
      "Elaborate never selects a failed branch while one succeeded"),
    m("EVAL-5i", STRATEGIES, '        return _by_tokens(outcomes, max, "most tokens"), Usage()',
      '        return _by_tokens(outcomes, min, "most tokens"), Usage()', "Elaborate selects the most tokens"),
    m("EVAL-5j", STRATEGIES,
      "    best = pick(candidate_indices(outcomes), key=lambda i: outcomes[i].usage.tokens())",
      "    best = pick(candidate_indices(outcomes)[::-1], key=lambda i: outcomes[i].usage.tokens())",
      "a tie on tokens goes to the earlier branch"),
    m("EVAL-5k", STRATEGIES,
      "    best = pick(candidate_indices(outcomes), key=lambda i: outcomes[i].usage.tokens())",
      "    if not any(outcome.succeeded for outcome in outcomes):\n"
      '        return EvaluationDecision.select(0, "no branch succeeded")\n'
      "    best = pick(candidate_indices(outcomes), key=lambda i: outcomes[i].usage.tokens())",
      "every branch failed: TokenEfficient and Elaborate still rank them all by tokens"),
    m("EVAL-5l", MODEL,
      "        return self.exception is None and self.outcome == RunOutcome.COMPLETED",
      "        return self.exception is None and self.outcome not in (RunOutcome.ERROR, RunOutcome.LIMIT, "
      "RunOutcome.ABORTED)", "a branch vetoed by before_turn failed"),
    m("EVAL-5m", MODEL,
      "        return self.exception is None and self.outcome == RunOutcome.COMPLETED",
      "        return self.exception is None and self.outcome not in (RunOutcome.ERROR, RunOutcome.LIMIT, "
      "RunOutcome.VETOED)", "a branch whose reply ended aborted failed"),
    m("EVAL-5n", STRATEGIES, "        if count != 1:", "        if count >= 1:", "Transparent runs exactly one config"),
    m("EVAL-6e", JUDGE, "        pool = candidate_indices(outcomes)\n", "        pool = list(range(len(outcomes)))\n",
      "the judge is shown only the successful branches"),
    m("EVAL-6f", JUDGE, "            return EvaluationDecision.select(pool[choice],",
      "            return EvaluationDecision.select(choice,", "the judge's number counts the responses it was shown"),
    m("EVAL-6g", JUDGE, "        if len(pool) == 1:", "        if len(outcomes) == 1:",
      "no judge runs for a single successful branch"),
    m("EVAL-6h", JUDGE, "        if not outcomes[pool[0]].succeeded:", "        if False:",
      "no judge runs when every branch failed"),
    m("EVAL-6i", JUDGE, "        prior = base[:last]\n", "        prior = base\n",
      "continue mode: the query is the last user message, the prior context what came before it"),
    m("EVAL-6j", JUDGE, "        if needed <= budget:\n", "        if True:\n",
      "a judge prompt that does not fit its budget even compacted gets a ProgressMessage"),
]

# Survivors that are not gaps in the suite: behaviour the protocol cannot observe, with the reason.
OPEN: dict[str, str] = {
    "LOOP-5k": "unobservable: once the exception ends the run nothing more is emitted and no protocol line "
               "follows, so whether a tool still running saw its token cancelled leaves no trace",
    "LOOP-13e": "unobservable: the driver's context line carries the context's messages, not its ids (a context "
                "line with agent_id and session_id, README §2, would make it observable)",
    "CANCEL-1b": "unobservable: the loop registers its callbacks before anything it waits for can start (the "
                 "tool-call inbox before the calls), and a token made from a cancelled one reports cancelled through "
                 "its parent (CANCEL-1), so a callback registered on an already cancelled token changes no event; "
                 "tests/loop/test_loop_cancel_channel.py tests it",
    "CANCEL-3d": "not deterministic: this last check matters only for an abort that lands between a call's "
                 "hand-over to a worker and the worker starting it, a moment no event or hook marks; CANCEL-3c "
                 "(no check after ToolExecutionStart at all) is killed",
    "ERR-3b": "not scriptable: the partial message of an attempt differs from nothing only when a provider reports "
              "a block's start and fails before its first delta, and the scripted provider (README §1.4) checks "
              "for its scripted failure before it starts a block",
}
