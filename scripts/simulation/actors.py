"""The threads of a scenario that use its agents the way applications do (issue 30).

Each actor draws its operations from its own random stream — prompt and read the events (or stop
reading and close the stream), ``prompt().result()``, ``run``, ``run(timeout=)``, ``prompt_parallel``,
``run_parallel(timeout=)``, steer, follow up, abort, reset, close, subscribe, unsubscribe, wait for
idle, ``resume(kind)``, or sleep — on a random agent, and checks what the operation promises when it
returns: its bound, what it reports, which exceptions may reach it.
"""

from __future__ import annotations

import random
import threading
from typing import Any

from .checks import ABORT_BOUND_S, EPS
from .plan import OPERATION_WEIGHTS, OPERATIONS, ActorPlan
from .world import AgentWorld, ScenarioError, World

from phi import AlreadyRunning, PhiError
from phi.agent.agent import SCHEDULING_SLACK_S
from phi.concurrency import sync
from phi.types import RunOutcome

NOT_RAISED_TO_CALLER = ("tool", "cancel_callback")  # a tool's exception is its result; a callback's is logged


def run_actor(world: World, plan: ActorPlan) -> None:
    rng = random.Random(plan.seed)
    for _ in range(plan.operations):
        aw = rng.choice(world.agents)
        op = rng.choices(OPERATIONS, OPERATION_WEIGHTS)[0]
        world.sim.note(f"actor{plan.index}: {op} on agent{aw.plan.index}")
        try:
            operate(world, aw, op, rng)
        except (AlreadyRunning, ScenarioError) as error:
            if isinstance(error, ScenarioError) and error.site in NOT_RAISED_TO_CALLER:
                world.fail("exception_leaked", f"{op} on agent{aw.plan.index} raised the exception of a {error.site}")
        except TimeoutError as error:  # RunTimeout: the run was still inside application code at the bound
            if op not in ("run_timeout", "run_parallel_timeout"):
                world.fail("unexpected_exception", f"{op} on agent{aw.plan.index} raised {type(error).__name__}: {error}")
        except PhiError as error:
            if op not in ("resume", "parallel"):
                world.fail("unexpected_exception", f"{op} on agent{aw.plan.index} raised {type(error).__name__}: {error}")
        except Exception as error:
            world.fail("unexpected_exception", f"{op} on agent{aw.plan.index} raised {type(error).__name__}: {error}")


def operate(world: World, aw: AgentWorld, op: str, rng: random.Random) -> None:
    agent, sim = aw.agent, world.sim
    if op == "prompt_stream":
        stream = world.push(aw, "prompt", agent.prompt)
        stop_after = rng.choice((None, None, 1, 3, 8))
        for n, _event in enumerate(stream, 1):
            if stop_after is not None and n >= stop_after:
                if rng.random() < 0.5:
                    stream.close()
                break
        stream.result()
    elif op == "prompt_result":
        world.push(aw, "prompt", agent.prompt).result()
    elif op == "run":
        world.push(aw, "prompt", agent.run)
    elif op == "prompt_when_idle":  # the usual way to take turns with other threads: wait, then prompt
        for _ in range(3):
            agent.wait_for_idle(rng.choice((0.5, 5.0)))
            try:
                world.push(aw, "prompt", agent.prompt).result()
                break
            except AlreadyRunning:
                continue
    elif op in ("run_timeout", "run_parallel_timeout"):
        timed_run(world, aw, op, rng)
    elif op == "parallel":
        variants: list[Any] = [{}, {"max_tokens": 64}][: rng.choice((1, 2))] + [{"temperature": 0.5}]
        world.push(aw, "parallel", lambda text: agent.prompt_parallel(text, variants)).result()
    elif op in ("steer", "follow_up"):
        world.push(aw, op)
    elif op == "abort":
        world.timed_abort(aw, "an actor thread")
    elif op == "reset":
        world.reset(aw)
    elif op == "close":
        agent.close()
    elif op == "subscribe":
        world.subscribe(aw)
    elif op == "unsubscribe":
        if aw.unsubscribes:
            aw.unsubscribes.pop(rng.randrange(len(aw.unsubscribes)))()
    elif op == "wait_idle":
        limit = rng.choice((0.05, 0.5, 3.0))
        start = sim.now
        agent.wait_for_idle(limit)
        if sim.now - start > limit + EPS:
            world.fail("wait_idle_late", f"wait_for_idle({limit}) returned after {sim.now - start:.3f}s")
    elif op == "resume":
        kind = rng.choice(("rerun", "branch", "retry", "default"))
        try:
            agent.resume(kind).result()
        except AlreadyRunning:
            raise
        except PhiError:
            pass
        except ScenarioError:
            raise
        except Exception as error:
            world.fail("untyped_error", f"resume({kind!r}) raised {type(error).__name__}: {error} (not a PhiError)")
    elif op == "sleep":
        sync.sleep(rng.choice((0.001, 0.05, 0.3, 1.0, 4.0)))


def timed_run(world: World, aw: AgentWorld, op: str, rng: random.Random) -> None:
    """``run(timeout=s)`` / ``run_parallel(timeout=s)``: back within s + the abort bound + the tool grace
    (start-up included, SPEC AGENT-2); a run that completed is reported completed."""
    agent, sim = aw.agent, world.sim
    limit = rng.choice((0.01, 0.1, 0.5, 1.5))
    bound = limit + ABORT_BOUND_S + aw.plan.grace_ms / 1000.0 + SCHEDULING_SLACK_S
    start = sim.now
    before = len(world.probe.streams)
    me = threading.get_ident()
    aw.hang_ok = True
    outcome, result = "raised", None
    try:
        if op == "run_timeout":
            result = world.push(aw, "prompt", lambda text: agent.run(text, timeout=limit))
            outcome = "timed out" if result.timed_out else result.outcome.value
        else:
            variants: list[Any] = [{}, {"temperature": 0.5}]
            world.push(aw, "parallel", lambda text: agent.run_parallel(text, variants, timeout=limit))
            outcome = "returned"
            result = None
    except TimeoutError:
        outcome = "TimeoutError"
        result = None
        mine = [s for s in world.probe.streams[before:] if s.agent is aw and s.thread == me]
        aw.timeouts.append((mine[0] if mine else None, sim.now))
        raise
    finally:
        aw.hang_ok = False
        took = sim.now - start
        if took > bound + EPS:
            world.fail(f"timeout_bound:{_why_late(world, aw, start + limit, before, me)}",
                       f"agent{aw.plan.index}.{op.replace('_timeout', '')}(timeout={limit}) came back after "
                       f"{took:.3f}s ({outcome}); bound {bound:.3f}s")
    if result is not None:
        mine = [s for s in world.probe.streams[before:] if s.agent is aw and s.thread == me]
        loop_id = mine[0].loop_id if mine else None
        ended = aw.ends.get(loop_id or "")
        if ended is not None and ended[1] == RunOutcome.COMPLETED and result.timed_out:
            world.fail("completed_reported_timeout", f"run {loop_id} completed but run(timeout={limit}) reported it "
                                                     f"timed out")


def _why_late(world: World, aw: AgentWorld, deadline: float, before: int, me: int) -> str:
    """Where a timed run was at its deadline: still starting (its tool sources), already completed,
    or winding down after the abort."""
    mine = [s for s in world.probe.streams[before:] if s.agent is aw and s.thread == me]
    if not mine or mine[0].created > deadline:
        return "startup"
    ended = aw.ends.get(mine[0].loop_id or "")
    if ended is not None and ended[0] <= deadline:
        return "completed"
    return "winding_down"
