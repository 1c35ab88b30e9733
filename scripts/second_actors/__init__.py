"""The second-actor harness (issue 31; docs/sessions.md "Two writers"): real processes doing what a
second user does to a stored session — resume it and continue at the same moment as another, be
killed with SIGKILL at a random moment or right after a given store write — and the invariants
checked afterwards, from the store alone and what each writer acknowledged:

* the store loads: no corrupt file, no lost header;
* every acknowledged turn is stored exactly once, and the conversation through its loop is the
  one its writer had when ``run`` returned;
* every stored conversation is one some writer had: its turns are one writer's, in order, none
  skipped (nothing spliced);
* loop ids are unique, and only a killed writer leaves a loop that never ended;
* no dangling link: every sub-agent session a loop names is stored, and every stored sub-agent
  session's parent loop is stored.

A trial is made from its number alone (writers, turns, which writer dies and when), so a failure
replays with ``scripts/second_actor.py --trial N``. Writers are forked from the harness process
(phi already imported), so a trial costs milliseconds, not an interpreter start.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SEED_QUESTION, SEED_ANSWER = "seed question", "seed answer"


@dataclass
class Trial:
    """One trial, drawn from its number."""

    number: int
    kind: str  # "json" or "sqlite"
    writers: int
    turns: int
    spawn_every: int  # a turn that calls the sub-agent every this many turns (0: never)
    kill_writer: int | None  # which writer is killed (None: none)
    kill_at_write: int | None  # ... right after its store's N-th write; None: after a random delay
    kill_after_s: float

    @classmethod
    def of(cls, number: int) -> Trial:
        rng = random.Random(number)
        kill = rng.random() < 0.6
        at_write = rng.random() < 0.5
        return cls(number, rng.choice(["json", "sqlite"]), rng.choice([2, 2, 3]), rng.randint(2, 5),
                   rng.choice([0, 1, 2]), rng.randrange(3) if kill else None,
                   rng.randint(1, 8) if kill and at_write else None, rng.uniform(0.0, 0.15))


@dataclass
class Outcome:
    trial: Trial
    violations: list[str] = field(default_factory=list)
    acked: int = 0
    killed: bool = False


def open_store(kind: str, where: Path) -> Any:
    from phi.session import JsonDirStore, SqliteStore

    return JsonDirStore(where / "sessions") if kind == "json" else SqliteStore(where / "sessions.db")


def texts(messages: list[Any]) -> list[str]:
    return [m.text for m in messages]


class KillingStore:
    """A store that kills its own process with SIGKILL right after its ``at``-th write (a save or a
    claim), the way a crash at that boundary would."""

    def __init__(self, store: Any, at: int | None) -> None:
        self.store, self.at, self.writes = store, at, 0

    def _wrote(self) -> None:
        self.writes += 1
        if self.at is not None and self.writes >= self.at:
            os.kill(os.getpid(), signal.SIGKILL)

    def save(self, session: Any) -> None:
        self.store.save(session)
        self._wrote()

    def claim(self, session: Any, avoid: Any = ()) -> Any:
        claim = self.store.claim(session, avoid)
        self._wrote()
        return claim

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)


def make_seed(kind: str, where: Path) -> tuple[str, str]:
    """The session every writer resumes: one turn, stored; returns (session id, checkpoint path)."""
    from phi import Agent, ScriptedProvider
    from phi.session import SessionRecorder

    agent = Agent(provider=ScriptedProvider([SEED_ANSWER]), recorder=SessionRecorder(), store=open_store(kind, where))
    agent.run(SEED_QUESTION)
    checkpoint = str(where / "seed.json")
    agent.checkpoint().save(checkpoint)
    close(agent._store)
    return agent.session_id, checkpoint


def close(store: Any) -> None:
    getattr(store, "close", lambda: None)()


def writer(trial: Trial, where: Path, checkpoint: str, index: int) -> None:
    """One writer process: resume the seed's checkpoint and take ``trial.turns`` turns, writing an
    acknowledgement line after each ``run`` returned (its save done)."""
    from phi import Agent, ScriptedProvider, SubAgentTool
    from phi.agent.snapshot import AgentSnapshot
    from phi.session import SessionRecorder

    name = "ABC"[index]
    replies: list[Any] = []
    for turn in range(trial.turns):
        if trial.spawn_every and turn % trial.spawn_every == 0:
            replies.append({"blocks": [{"type": "toolCall", "id": f"c{turn}", "name": "helper",
                                        "arguments": {"task": f"{name} task {turn}"}}]})
        replies.append(f"{name} answer {turn}")
    at_write = trial.kill_at_write if trial.kill_writer == index else None
    store = KillingStore(open_store(trial.kind, where), at_write)
    helper = SubAgentTool("helper", provider=ScriptedProvider([], default=f"{name} child answer"))
    agent = Agent(provider=ScriptedProvider(replies), tools=[helper], recorder=SessionRecorder(), store=store)
    agent.restore(AgentSnapshot.load(checkpoint))
    with open(where / f"acks-{name}.jsonl", "a", encoding="utf-8") as acks:
        for turn in range(trial.turns):
            agent.run(f"{name} question {turn}")
            acks.write(json.dumps({"loop": agent.last_loop_id, "question": f"{name} question {turn}",
                                   "conversation": texts(agent.messages)}) + "\n")
            acks.flush()
            os.fsync(acks.fileno())
    close(store)


def run_trial(number: int | Trial, where: Path) -> Outcome:
    """Run trial ``number`` (or the trial given) in the empty directory ``where`` and check the
    invariants."""
    trial = number if isinstance(number, Trial) else Trial.of(number)
    outcome = Outcome(trial)
    session_id, checkpoint = make_seed(trial.kind, where)
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=writer, args=(trial, where, checkpoint, i), daemon=True)
                 for i in range(trial.writers)]
    for process in processes:
        process.start()
    victim = processes[trial.kill_writer] if trial.kill_writer is not None and trial.kill_writer < len(processes) else None
    if victim is not None and trial.kill_at_write is None:
        time.sleep(trial.kill_after_s)  # a random moment: the invariants hold whenever it lands
        if victim.pid is not None:
            os.kill(victim.pid, signal.SIGKILL)
    for process in processes:
        process.join(120)
        if process.is_alive():
            process.kill()
            process.join()
            outcome.violations.append(f"writer {process.name} did not end within 120 s")
        elif process.exitcode not in (0, -signal.SIGKILL):
            outcome.violations.append(f"writer {process.name} failed with exit code {process.exitcode}")
        outcome.killed |= process.exitcode == -signal.SIGKILL
    outcome.violations += check(trial, where, session_id, outcome)
    return outcome


def check(trial: Trial, where: Path, session_id: str, outcome: Outcome) -> list[str]:
    """The invariants (see the module docstring); the violations found, in words."""
    problems: list[str] = []
    store = open_store(trial.kind, where)
    try:
        try:
            stored = {sid: store.load(sid) for sid in store.list_ids()}
        except Exception as error:  # noqa: BLE001 - any failure to load is a violation
            return [f"the store does not load: {type(error).__name__}: {error}"]
    finally:
        close(store)
    main = stored.get(session_id)
    if main is None:
        return [f"session {session_id} is gone"]
    said = [m.text for r in main.loops if not r.status.is_open for m in r.messages]
    for name in "ABC"[:trial.writers]:
        path = where / f"acks-{name}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        for line in lines:
            ack = json.loads(line)
            outcome.acked += 1
            if said.count(ack["question"]) != 1:
                problems.append(f"acknowledged turn {ack['question']!r} is stored {said.count(ack['question'])} times")
            elif main.get_loop(ack["loop"]) is None:
                problems.append(f"acknowledged loop {ack['loop']} is not stored")
            elif texts(main.conversation(at=ack["loop"])) != ack["conversation"]:
                problems.append(f"the conversation through {ack['loop']} is not the one its writer had")
    for record in main.loops:
        if record.status.is_open:
            if not outcome.killed:
                problems.append(f"loop {record.loop_id} never ended, and no writer was killed")
            continue
        problem = one_writers(texts(main.conversation(at=record.loop_id)))
        if problem:
            problems.append(f"the conversation through {record.loop_id} {problem}")
    problems += dangling(stored)
    return problems


def one_writers(conversation: list[str]) -> str | None:
    """None if ``conversation`` is one a writer had: the seed, then one writer's questions in order."""
    if conversation[:2] != [SEED_QUESTION, SEED_ANSWER]:
        return "does not start with the seed"
    questions = [t for t in conversation[2:] if " question " in t]
    if not questions:
        return None
    name = questions[0].split(" ", 1)[0]
    expected = [f"{name} question {i}" for i in range(len(questions))]
    return None if questions == expected else f"splices turns: {questions}"


def dangling(stored: dict[str, Any]) -> list[str]:
    problems = []
    for session in stored.values():
        for record in session.loops:
            for ref in record.child_loop_refs:
                child = stored.get(ref.child_session_id)
                if child is None or child.get_loop(ref.child_loop_id) is None:
                    problems.append(f"loop {record.loop_id} links to sub-agent loop {ref.child_loop_id} of session "
                                    f"{ref.child_session_id}, which is not stored")
        ref = session.parent_spawn_ref
        if ref is not None:
            parent = stored.get(ref.parent_session_id)
            if parent is None or parent.get_loop(ref.parent_loop_id) is None:
                problems.append(f"sub-agent session {session.session_id} names parent loop {ref.parent_loop_id}, "
                                "which is not stored")
    return problems
