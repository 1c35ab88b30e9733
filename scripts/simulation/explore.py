"""Run scenarios under the simulator and collect what broke (issue 30).

:func:`run_seed` is one scenario: build it from the seed, run its actors as simulated threads, then
the end checks — every agent idle within a bound, no tool worker counted busy once nobody waits for
one, every history a valid conversation, no input lost or duplicated, every run without an
``AgentEnd`` raised, no completed run reported as a timeout, then (after the simulation settled) no
simulated thread left and no cancellation token still alive. The same seed replays the same run.
"""

from __future__ import annotations

import gc
import logging
import time
from dataclasses import dataclass
from typing import Any

from .actors import run_actor
from .checks import invalid_conversation, lost_or_duplicated, user_texts
from .plan import make_scenario
from .world import FINAL_IDLE_S, World

from phi.concurrency import sync, workers
from phi.concurrency.simulator import Simulation, SimulationFailure
from phi.types import RunOutcome

MAX_STEPS = 200_000  # a scenario takes a few thousand; more is a run that never ends


@dataclass
class Outcome:
    seed: int
    kind: str | None  # None: every check held
    message: str = ""
    report: str = ""
    steps: int = 0
    virtual_s: float = 0.0
    real_s: float = 0.0
    scenario: str = ""


def scenario_main(world: World) -> None:
    """The simulation's first thread: start the actors, wait for them, then check the end state."""
    sim = world.sim
    world.build()
    actors = [sync.Thread(target=run_actor, args=(world, plan), name=f"actor{plan.index}")
              for plan in world.scenario.actors]
    for actor in actors:
        actor.start()
    for actor in actors:
        actor.join()
    world.final = True  # application code stops acting; what runs now winds down
    sim.note("end of the scenario: abort everything, wait for idle")
    for _ in range(10):  # a run started by a callback just before the end is aborted in the next round
        for aw in world.agents:
            aw.agent.abort()
        for aw in world.agents:
            if not aw.agent.wait_for_idle(FINAL_IDLE_S):
                world.fail("never_idle", f"agent{aw.plan.index} is still running {FINAL_IDLE_S:.0f}s after it was "
                                         f"aborted")
        sync.sleep(0.001)  # threads that can run without time passing finish their bookkeeping
        if not any(aw.agent.is_streaming for aw in world.agents):
            break
    stats = workers.stats()
    if stats.busy:
        world.fail("pool_busy", f"every agent is idle but the tool pool counts {stats.busy} worker(s) busy "
                                f"(abandoned: {stats.abandoned}); they hold max_workers for ever")
    for info in world.probe.streams:
        info.stream.wait(FINAL_IDLE_S)
    for aw in world.agents:
        check_agent(world, aw)
    for aw in world.agents:
        aw.agent.close()


def check_agent(world: World, aw: Any) -> None:
    name, agent = f"agent{aw.plan.index}", aw.agent
    problem = invalid_conversation(agent.messages)
    if problem:
        world.fail("invalid_history", f"{name}: {problem}")
    found = user_texts(agent.messages)
    found.update(user_texts(agent.steering_queue.snapshot()))
    found.update(user_texts(agent.follow_up_queue.snapshot()))
    # compaction may drop old messages, so an agent that compacts is only held to "never twice"
    problem = lost_or_duplicated(aw.pushes, aw.resets, found, aw.required, aw.forgiven, may_drop=aw.plan.compacts)
    if problem:
        world.fail("input_lost", f"{name}: {problem}")
    raised = {id(info.stream) for info in world.probe.streams if info.stream._error is not None}
    for loop_id in aw.unended:
        owners = [info for info in world.probe.streams if info.loop_id == loop_id]
        if owners and not any(id(info.stream) in raised for info in owners):
            world.fail("no_agent_end", f"{name}: run {loop_id} ended without AgentEnd and did not raise")
    for info, raised_at in aw.timeouts:
        if info is None or info.loop_id is None:
            continue
        ended = aw.ends.get(info.loop_id)
        if ended is not None and ended[1] == RunOutcome.COMPLETED and ended[0] <= raised_at:
            world.fail("completed_reported_timeout", f"{name}: run {info.loop_id} completed at {ended[0]:.3f}s but "
                                                     f"run(timeout=) raised TimeoutError at {raised_at:.3f}s")


def run_seed(seed: int, *, trace: bool = False) -> Outcome:
    """Run scenario ``seed`` once; the outcome says which check broke, if any."""
    scenario = make_scenario(seed)
    sim = Simulation(seed, trace=trace, max_steps=MAX_STEPS)
    world = World(scenario, sim)
    started = time.perf_counter()
    outcome = Outcome(seed, None, scenario=scenario.describe())
    world.probe.install()
    try:
        sim.run(lambda: scenario_main(world))
    except SimulationFailure as failure:
        outcome.kind, outcome.message, outcome.report = failure.kind, failure.message, failure.report()
    finally:
        world.probe.uninstall()
    if outcome.kind is None:
        tokens = world.probe.tokens
        del world
        gc.collect()
        alive = len(tokens)
        if alive:
            outcome.kind, outcome.message = "tokens_left", f"{alive} cancellation token(s) still alive after the scenario"
    outcome.steps, outcome.virtual_s, outcome.real_s = sim.step, sim.now, time.perf_counter() - started
    if trace and sim.trace_lines is not None:
        outcome.report = "\n".join(sim.trace_lines) + ("\n\n" + outcome.report if outcome.report else "")
    return outcome


def quiet_logs() -> None:
    """phi logs every abandoned tool and failed callback; under exploration that is noise."""
    logging.getLogger("phi").setLevel(logging.CRITICAL)


__all__ = ["Outcome", "quiet_logs", "run_seed"]
