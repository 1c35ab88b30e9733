"""What one simulated scenario does, drawn from its seed (issue 30: a generator, not a scenario per bug).

A :class:`Scenario` is 1–4 agents and 1–3 actor threads. Each agent has random settings (tool
execution mode, tool timeout, abort grace, queue modes, limits), a random set of tools, maybe a tool
source, application subscribers, and *triggers*: "the n-th time application code is called at this
site, do this" — raise, block for a while, abort, reset, close, steer, follow up, veto, wait for
idle, start the next prompt. Actors do random operations on random agents (``plan.py`` draws how
many and of which kinds; ``world.py`` draws each one's details as it goes, from the actor's own
stream, so an actor's choices do not depend on the interleaving).

Nothing here names a known defect: every kind of application code phi calls is a site, and every
action is allowed at every site where it makes sense.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# Where phi calls application code. ``hook:*`` and ``subscriber:*`` run on the run's thread.
HOOKS = ("before_loop", "after_loop", "before_turn", "after_turn", "on_error", "before_tool_execution",
         "after_tool_execution", "before_tool_execution_update", "after_tool_execution_update")
VETO_HOOKS = ("before_loop", "before_turn", "before_tool_execution", "before_tool_execution_update")
CALLABLES = ("transform_context", "convert_to_llm", "get_api_key")
EVENTS = ("AgentStart", "TurnStart", "MessageStart", "MessageEnd", "ToolExecutionStart", "ToolExecutionUpdate",
          "ToolExecutionEnd", "TurnEnd", "AgentEnd", "ParallelLoopStart", "ParallelLoopEnd")
HOOK_SITES = tuple(f"hook:{h}" for h in HOOKS)
CALLABLE_SITES = tuple(f"call:{c}" for c in CALLABLES)
SUBSCRIBER_SITES = tuple(f"subscriber:{e}" for e in EVENTS)
TOOL_SITE, CANCEL_SITE, SOURCE_SITE = "tool", "cancel_callback", "source:tools"
RUN_THREAD_SITES = HOOK_SITES + CALLABLE_SITES + SUBSCRIBER_SITES  # run on the thread running the loop

# The kinds of tools an agent may have. Each is a real behaviour a tool author writes.
TOOL_KINDS = ("quick", "slow", "stubborn", "cooperative", "slow_cancel", "raising", "steering", "updating")

ACTIONS_AT = {
    "raise": RUN_THREAD_SITES + (TOOL_SITE, CANCEL_SITE, SOURCE_SITE),
    "block": RUN_THREAD_SITES + (CANCEL_SITE, SOURCE_SITE),
    "abort": RUN_THREAD_SITES + (TOOL_SITE, CANCEL_SITE),
    "reset": RUN_THREAD_SITES + (TOOL_SITE,),
    "close": ("subscriber:AgentEnd", "hook:after_loop", "subscriber:TurnEnd", TOOL_SITE),
    "steer": RUN_THREAD_SITES + (TOOL_SITE, CANCEL_SITE),
    "follow_up": RUN_THREAD_SITES + (TOOL_SITE, CANCEL_SITE),
    "veto": tuple(f"hook:{h}" for h in VETO_HOOKS),
    "wait_idle": SUBSCRIBER_SITES + ("hook:after_loop",),
    "prompt": ("subscriber:AgentEnd", "hook:after_loop", "subscriber:ParallelLoopEnd"),
}
ACTION_WEIGHTS = {"raise": 4, "block": 6, "abort": 4, "reset": 2, "close": 1, "steer": 3, "follow_up": 3, "veto": 2,
                  "wait_idle": 1, "prompt": 2}
ONCE_PER_RUN = ("hook:before_loop", "hook:after_loop", "subscriber:AgentStart", "subscriber:AgentEnd",
                "subscriber:ParallelLoopStart", "subscriber:ParallelLoopEnd")
BLOCK_SECONDS = (0.01, 0.2, 0.7, 1.5, 3.0, 6.0)

OPERATIONS = ("prompt_stream", "prompt_result", "run", "run_timeout", "parallel", "run_parallel_timeout", "steer",
              "follow_up", "abort", "reset", "close", "subscribe", "unsubscribe", "wait_idle", "resume", "sleep",
              "prompt_when_idle")
OPERATION_WEIGHTS = (5, 4, 4, 6, 2, 2, 4, 3, 4, 1, 1, 1, 1, 1, 1, 3, 3)


@dataclass
class Trigger:
    """Do ``action`` (with ``arg``) the ``nth`` time application code runs at ``site``."""

    site: str
    nth: int
    action: str
    arg: float = 0.0

    def describe(self) -> str:
        arg = f"({self.arg:g})" if self.action in ("block", "wait_idle") else ""
        return f"{self.action}{arg}@{self.site}#{self.nth}"


@dataclass
class AgentPlan:
    index: int
    tools: list[str]
    mode: str  # parallel | sequential | batched
    batch_size: int
    tool_timeout_ms: int | None
    grace_ms: int
    steering_mode: str
    follow_up_mode: str
    max_turns: int | None
    source: str | None  # None | quick | slow | hang | failing
    source_delay: float
    subscribers: int  # application subscribers besides the checking one
    triggers: list[Trigger]
    reply_seed: int
    p_tools: float  # chance a reply calls tools
    p_error: float
    max_rounds: int  # tool rounds per run before the model answers in text
    chunk_delay_ms: float
    retries: int
    compacts: bool  # a small ContextConfig: the history is compacted during runs (and after an overflow)

    def describe(self) -> str:
        parts = [f"agent{self.index}: tools={','.join(self.tools)} mode={self.mode}"]
        if self.mode == "batched":
            parts.append(f"batch={self.batch_size}")
        if self.tool_timeout_ms:
            parts.append(f"timeout={self.tool_timeout_ms}ms")
        parts.append(f"grace={self.grace_ms}ms")
        if self.source:
            parts.append(f"source={self.source}({self.source_delay:g}s)")
        if self.max_turns:
            parts.append(f"max_turns={self.max_turns}")
        if self.compacts:
            parts.append("compacts")
        parts.append(f"subscribers={self.subscribers}")
        parts += [t.describe() for t in self.triggers]
        return " ".join(parts)


@dataclass
class ActorPlan:
    index: int
    seed: int
    operations: int


@dataclass
class Scenario:
    seed: int
    agents: list[AgentPlan]
    actors: list[ActorPlan]
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        lines = [f"scenario {self.seed}: {len(self.agents)} agent(s), {len(self.actors)} actor(s)"]
        lines += ["  " + a.describe() for a in self.agents]
        lines += [f"  actor{a.index}: {a.operations} operations" for a in self.actors]
        return "\n".join(lines)


def _trigger(rng: random.Random) -> Trigger:
    actions = list(ACTION_WEIGHTS)
    action = rng.choices(actions, [ACTION_WEIGHTS[a] for a in actions])[0]
    site = rng.choice(ACTIONS_AT[action])
    nth = 1 if site in ONCE_PER_RUN or rng.random() < 0.5 else rng.choice((2, 3, 4, 6))
    arg = 0.0
    if action == "block":
        arg = rng.choice(BLOCK_SECONDS)
    elif action == "wait_idle":
        arg = rng.choice((0.1, 1.0, 3.0))
    return Trigger(site, nth, action, arg)


def make_agent(rng: random.Random, index: int) -> AgentPlan:
    tools = sorted(set(rng.sample(TOOL_KINDS, rng.randint(1, 5))))
    mode = rng.choice(("parallel", "parallel", "sequential", "batched"))
    source = rng.choice((None, None, None, "quick", "slow", "hang", "failing"))
    return AgentPlan(
        index=index, tools=tools, mode=mode, batch_size=rng.choice((1, 2, 3)),
        tool_timeout_ms=rng.choice((None, None, 50, 100, 300, 1000, 4000)),
        grace_ms=rng.choice((1000, 1000, 100, 300, 2000)),
        steering_mode=rng.choice(("one_at_a_time", "all")), follow_up_mode=rng.choice(("one_at_a_time", "all")),
        max_turns=rng.choice((None, None, None, 2, 4)),
        source=source, source_delay={None: 0.0, "quick": 0.0, "slow": rng.choice((0.3, 1.0, 3.0)),
                                     "hang": rng.choice((40.0, 90.0)), "failing": 0.0}[source],
        subscribers=rng.choice((0, 1, 1, 2)),
        triggers=[_trigger(rng) for _ in range(rng.choice((0, 1, 2, 2, 3, 4, 5)))],
        reply_seed=rng.getrandbits(32), p_tools=rng.choice((0.3, 0.6, 0.9)), p_error=rng.choice((0.0, 0.0, 0.1, 0.3)),
        max_rounds=rng.choice((1, 1, 2, 3)), chunk_delay_ms=rng.choice((0.0, 0.0, 5.0, 50.0, 300.0)),
        retries=rng.choice((0, 1, 2)), compacts=rng.random() < 0.2,
    )


def make_scenario(seed: int) -> Scenario:
    rng = random.Random(f"scenario-{seed}")
    agents = [make_agent(rng, i) for i in range(rng.choice((1, 1, 2, 2, 3, 4)))]
    actors = [ActorPlan(i, rng.getrandbits(32), rng.randint(1, 7)) for i in range(rng.choice((1, 2, 2, 3)))]
    return Scenario(seed, agents, actors)
