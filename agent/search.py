"""The search inside a round: which candidates to draw, checking them, ranking them.

`agent.draws` says which draws a refinement round makes and in what order; `sample_first`
draws round 1's hot samples; candidates are ordered by their verdicts (`agent.rank`); `Pool`
holds what a round drew and spent. `RoundSearch` carries what the rounds of one run share
(the answers seen, the fixes tried, each round's runner-up), draws and checks one
round's pool through the run's steps (`RunSteps`, implemented by `agent.loop`) and picks
its best.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from agent import prompts
from agent.candidate import Candidate, changed_lines
from agent.draws import ANCHORED_WHY, ORIGIN_OF, plan_draws, steer
from agent.evidence import crashed_on_data
from agent.feedback import Feedback
from agent.llm.base import Message, Usage
from agent.rank import Rank, rank_feedback
from agent.result import CandidateOrigin, PoolEntry, RoundRecord
from memory.render import render_lessons
from memory.types import ScoredLesson

if TYPE_CHECKING:
    from agent.loop import EventKind, LoopConfig
    from agent.task import Task

_NO_FILES = "no output file"
# Verdicts of a program stopped by a limit: where it got is unknown.
_STOPPED = ("timeout", "resource_error")


@dataclass
class Pool:
    """The candidates of one refinement round so far, and what the round spent."""

    drawn: list[tuple[Candidate, tuple[Feedback, ...], Usage]] = field(default_factory=list)
    entries: list[PoolEntry] = field(default_factory=list)
    wasted: Usage = field(default_factory=Usage)  # repeats and replies without files
    # Why each draw was not checked: "refine_hot: repeated round 1 generate", "sample: no
    # output file" (`RoundRecord.resampled`).
    unchecked: list[str] = field(default_factory=list)
    # Draws moved off an anchored request or not drawn (`RoundRecord.steered`).
    steered: list[str] = field(default_factory=list)

    @property
    def repeats(self) -> int:
        return len(self.unchecked)

    @property
    def passed(self) -> bool:
        return bool(self.drawn) and self.drawn[-1][1][-1].passed

    @property
    def tokens(self) -> int:
        return self.wasted.total_tokens + sum(d[2].total_tokens for d in self.drawn)


# The best candidate of a round: it, its checks, and what the round spent on it.
Chosen = tuple[Candidate, tuple[Feedback, ...], Usage]


class RunSteps(Protocol):
    """The steps of a run (`agent.loop`) that a refinement round draws and checks with."""

    cfg: LoopConfig
    task: Task
    inputs: dict[str, str]  # the workspace previews every prompt shows

    def generate(
        self,
        lessons: Sequence[ScoredLesson],
        *,
        failure: str = "",
        temperature: float | None = None,
        seed: int | None = None,
    ) -> tuple[Candidate, Usage]:
        """A fresh generation (shown `failure` and the lessons)."""
        ...

    def repair(
        self, base: Candidate, messages: Sequence[Message], *, temperature: float, seed: int
    ) -> tuple[Candidate, Usage]:
        """The refiner's answer to `messages`, a repair of `base`."""
        ...

    def check_one(
        self, candidate: Candidate, round_no: int, index: int
    ) -> tuple[tuple[Feedback, ...], Usage]:
        """Every check stage the candidate reached, cheapest first, and their cost."""
        ...

    def emit(
        self,
        kind: EventKind,
        round_no: int,
        detail: str,
        usage: Usage | None = None,
        seconds: float = 0.0,
    ) -> None:
        """Report progress to the run's observer."""
        ...

    def spent(self) -> int:
        """Tokens the run has spent so far."""
        ...


class RoundSearch:
    """The refinement rounds of one run: what they share, and one round's pool."""

    def __init__(self, run: RunSteps) -> None:
        self.run = run
        # Digests of every candidate checked, with where it was drawn ("round 1 generate"): a
        # repeat is never checked twice.
        self.digests: dict[str, str] = {}
        # The fix notes the refiner gave so far: its prompt lists them as already tried.
        self.tried: list[str] = []
        # By round: its second best (hot refiner samples alternate between it and the best, so
        # one base that misleads cannot take them all), and its best drawn without lessons
        # when its best had them ("refine_bare" repairs it: a run without memory's line).
        self.runner_up: dict[int, tuple[Candidate, tuple[Feedback, ...]]] = {}
        self.bare: dict[int, tuple[Candidate, tuple[Feedback, ...]]] = {}
        # What each refiner candidate repaired, by its digest (a fresh generation repaired
        # nothing): the change a pass made is its difference from that (`agent.reduce`).
        # With the base, its failure (its last check): what the pass fixed.
        self.base_of: dict[str, tuple[Candidate, Feedback]] = {}

    def draw(self, base: RoundRecord, round_no: int, lessons: Sequence[ScoredLesson]) -> Pool:
        """Draw and check round `round_no`'s candidates, repairs of round `base`, by
        `plan_draws`; a base repaired before (`agent.rank.next_base` went back to it) gets
        new seeds.

        Stops when the pool is full, a candidate passed or the token budget is reached.
        When every refiner answer was a program already run (until `agent.draws.steer` drew
        no more; a reply without the files is checked instead, below) and the plan drew no
        fresh generation, one is drawn (hot, from the goal, the failure and the lessons)
        before the round gives up: the refiner is anchored on the program, and a run
        stopped there has spent its rounds on nothing (headers_02 on the 1.5B: three repeats
        of a program that crashed on a header's spaces, a stall after one round). An empty
        pool means no draw was new even so (or the budget ran out before one).
        """
        run, cfg = self.run, self.run.cfg
        best = (base.candidate, base.checks)
        runner_up, bare = self.runner_up.get(base.round), self.bare.get(base.round)
        seeds = 100 * (round_no - base.round - 1)
        # What each refiner draw repairs: the best, the runner-up, or (the greedy draw without
        # lessons, when there are lessons) the best candidate drawn without them.
        bases = {"best": best, "alt": runner_up or best, "bare": bare or best}
        # The runner-up is often the best drawn without lessons too (the control): one
        # request, whatever the draw is called.
        same = bare and runner_up and bare[0].digest() == runner_up[0].digest()
        alias = {"refine_alt": "alt", "refine_bare": "alt" if same else "bare"}
        cached: dict[tuple[str, bool], list[Message]] = {}
        # The note for the next draw from a prompt whose last answer was not checked, and how
        # often each prompt was answered with a program already run.
        unusable: dict[tuple[str, bool], str | None] = {}
        repeats: Counter[tuple[str, bool]] = Counter()
        present = {"best"} | {w for w, b in (("alt", runner_up), ("bare", bare and not same)) if b}

        def messages(which: str, shown: bool) -> list[Message]:
            """The refiner's prompt for one base, with or without the lessons."""
            if (which, shown) not in cached:
                cached[which, shown] = self._refiner_messages(
                    *bases[which], base.round, lessons if shown else ()
                )
            return prompts.with_note(cached[which, shown], unusable.get((which, shown)))

        pool = Pool()
        incomplete: tuple[Candidate, CandidateOrigin, float, bool] | None = None
        budget = cfg.token_budget or float("inf")
        for draw, (origin, temperature, shown) in enumerate(
            plan_draws(
                cfg,
                has_output=bool(run.task.output),
                has_runner_up=runner_up is not None,
                has_lessons=bool(lessons),
                has_bare=bare is not None,
            )
        ):
            if len(pool.drawn) >= cfg.pool_size or pool.passed:
                break
            if run.spent() + pool.tokens >= budget:
                break
            drawn_at = time.monotonic()
            key: tuple[str, bool] | None = None
            if origin == "fresh":
                feedback = base.feedback.compressed()
                candidate, cost = run.generate(lessons, failure=feedback, temperature=temperature)
            else:
                planned = (alias.get(origin, "best"), shown)
                key = steer(planned, repeats, present)
                if key != planned:
                    moved = ORIGIN_OF.get(key[0], "refine_hot") if key else None
                    pool.steered.append(f"{origin} -> {moved}" if moved else f"{origin}: not drawn")
                    run.emit("steered", round_no, f"{pool.steered[-1]}, {ANCHORED_WHY}")
                    if key is None:
                        continue
                    origin, shown = moved or origin, key[1]
                repaired, checks = bases[key[0]]
                candidate, cost = run.repair(
                    repaired, messages(*key), temperature=temperature, seed=seeds + draw
                )
                self.base_of.setdefault(candidate.digest(), (repaired, checks[-1]))
            offer = (candidate, origin, temperature, cost, round_no)
            note = self._offer(pool, *offer, lessons=shown, drawn_at=drawn_at)
            if note == prompts.NO_FILES_NOTE:
                incomplete = (candidate, origin, temperature, shown)
            if key is not None:
                unusable[key] = note
                repeats[key] += note == prompts.REPEAT_NOTE
        # Nothing checked, no reply without files, and no fresh generation tried yet (one that
        # was checked would be in the pool).
        fresh_tried = any(w.startswith("fresh:") for w in pool.unchecked)
        anchored = not pool.drawn and incomplete is None and not fresh_tried and run.task.output
        if anchored and run.spent() + pool.tokens < budget:
            drawn_at, hot = time.monotonic(), cfg.resample_temperature
            failure = base.feedback.compressed()
            candidate, cost = run.generate(lessons, failure=failure, temperature=hot)
            self._offer(
                pool,
                candidate,
                "fresh",
                hot,
                cost,
                round_no,
                lessons=bool(lessons),
                drawn_at=drawn_at,
            )
        if not pool.drawn and incomplete is not None:
            # Only replies without the files: check one, so the rule check's "missing file"
            # reaches the refiner (its tokens are already counted as wasted).
            pool.unchecked.pop(max(k for k, w in enumerate(pool.unchecked) if _NO_FILES in w))
            candidate, origin, temperature, shown = incomplete
            self.take(pool, candidate, origin, temperature, Usage(), round_no, lessons=shown)
        return pool

    def sample_first(self, pool: Pool, lessons: Sequence[ScoredLesson]) -> None:
        """Round 1's hot generations (see `agent.loop._Run._first_round`): seeds 1, 2, ...,
        shown the lessons unless the pool's control outranked them, until one passes,
        `first_pool` candidates were checked or the token budget is reached. Repeats and
        replies without the output files are not checked and count as resamples, up to
        `resample_attempts` more draws.

        No sample is drawn when every draw so far crashed on the task's input
        (`agent.evidence.crashed_on_data`: a ValueError on a whole data value such as
        '$860.45', a KeyError on a header name a BOM or another delimiter spoils, a decode
        error): that failure is the data's, and every fresh program from the same prompt
        meets the same data. Measured on the 1.5B (with and without lessons): 1 of 24 hot
        samples drawn after such a greedy crash passed on currency traps, 1 of 2 on a
        semicolon one, and in the demo 9 of 9 fell into the trap, about half the demo's
        tokens; the refiner, shown the crash and the value, gets past it. HumanEval's
        failures quote no input file, so its round-1 search (20 of 30 against 15) is
        untouched."""
        run, cfg = self.run, self.run.cfg
        if pool.drawn and all(self.crashed_on_input(c[-1]) for _, c, _ in pool.drawn):
            return
        hot, budget = cfg.resample_temperature, cfg.token_budget or float("inf")
        shown = lessons if not self.lessons_outranked(pool) else ()
        attempts = max(0, cfg.first_pool - len(pool.drawn)) + cfg.resample_attempts
        for seed in range(1, attempts + 1):
            if len(pool.drawn) >= cfg.first_pool or pool.passed:
                return
            if run.spent() + pool.tokens >= budget:
                return
            drawn_at = time.monotonic()
            candidate, cost = run.generate(shown, temperature=hot, seed=seed)
            self._offer(
                pool, candidate, "sample", hot, cost, 1, lessons=bool(shown), drawn_at=drawn_at
            )

    def _offer(
        self,
        pool: Pool,
        candidate: Candidate,
        origin: CandidateOrigin,
        temperature: float,
        cost: Usage,
        round_no: int,
        *,
        lessons: bool,
        drawn_at: float,
    ) -> str | None:
        """Check a drawn candidate into the pool (`take`) unless it repeats an earlier one or
        lacks an output file: then it counts as a resample, its tokens as wasted, and the
        note for the next draw from its prompt is returned (`prompts.REPEAT_NOTE` or
        `NO_FILES_NOTE`). None when it was taken."""
        earlier = self.digests.get(candidate.digest())
        if earlier or not all(name in candidate.files for name in self.run.task.output):
            pool.wasted += cost
            pool.unchecked.append(f"{origin}: " + (f"repeated {earlier}" if earlier else _NO_FILES))
            self.run.emit("resampled", round_no, pool.unchecked[-1])
            return prompts.REPEAT_NOTE if earlier else prompts.NO_FILES_NOTE
        self.run.emit("generated", round_no, origin, cost, time.monotonic() - drawn_at)
        self.take(pool, candidate, origin, temperature, cost, round_no, lessons=lessons)
        return None

    def repaired(self, pool: Pool, first: RoundRecord) -> RoundRecord | None:
        """When round 1's chosen candidate is a hot sample that passed after failing draws,
        the same run went from a failing candidate to a passing one, as a refinement does.
        The pass repaired none of them, so the failing draw nearest to it (fewest changed
        lines; then the best ranked, the earliest) stands for the failure: the change between
        them is the smallest that turned a failing program into a passing one, and its
        failure is the one that change fixed (two independent samples can differ
        everywhere: paired with the best ranked draw, the 1.5B's demo lesson was a 21-line
        rewrite). It becomes the pass's base (its change is reduced and verified like a
        refinement's) and is returned as the round it would have been alone
        (`RunResult.first_failure`); `first` is round 1's record, `pool` its draws. A draw
        stopped by a time or resource limit says nothing of where its program got (on a
        shared machine it may be the load), so it stands for the failure only when every
        failing draw was stopped so."""
        if not (first.feedback.passed and first.origin == "sample"):
            return None
        failing = [k for k, (_, checks, _) in enumerate(pool.drawn) if not checks[-1].passed]
        ran = [k for k in failing if pool.drawn[k][1][-1].kind not in _STOPPED]
        failing = ran or failing

        def nearest(k: int) -> tuple[int, Rank, int]:
            candidate, checks, _ = pool.drawn[k]
            return (-changed_lines(candidate, first.candidate), rank_feedback(checks[-1]), -k)

        candidate, checks, usage = pool.drawn[max(failing, key=nearest)]
        self.base_of[first.candidate.digest()] = (candidate, checks[-1])
        return RoundRecord(
            round=1,
            action="generate",
            candidate=candidate,
            checks=checks,
            usage=usage,
            seconds=0.0,
            recalled_lesson_ids=first.recalled_lesson_ids,
        )

    def other_base(
        self, candidate: Candidate, rounds: Sequence[RoundRecord], repairs: int | None
    ) -> RoundRecord | None:
        """What `candidate`, a repair of round `repairs` (None: a generation), repaired when
        that is not the round's chosen program but its runner-up or best without lessons:
        as that round's record with it chosen (`RoundRecord.repaired`)."""
        if repairs is None:
            return None
        found, record = self.base_of.get(candidate.digest()), rounds[repairs - 1]
        if found is None or (base := found[0]).digest() == record.candidate.digest():
            return None
        others = (self.runner_up.get(repairs), self.bare.get(repairs))
        checks = next((o[1] for o in others if o and o[0].digest() == base.digest()), None)
        if checks is None:  # not a candidate of that round: nothing to record, no crash
            return None
        update = {"candidate": base, "checks": checks, "usage": Usage(), "seconds": 0.0}
        unset = {"pool": (), "resampled": (), "steered": (), "repaired": None}
        return record.model_copy(update={**update, **unset})

    def crashed_on_input(self, verdict: Feedback) -> bool:
        """Did the program crash on the task's input (`agent.evidence.crashed_on_data`)?"""
        return verdict.kind == "runtime_error" and crashed_on_data(
            verdict.error_type, verdict.key_message, self.run.task.workspace
        )

    @staticmethod
    def lessons_outranked(pool: Pool) -> bool:
        """True when the pool's best candidate drawn without the lessons strictly outranks
        its best drawn with them: the lessons made this round worse."""
        best: dict[bool, Rank] = {}
        for (_, checks, _), entry in zip(pool.drawn, pool.entries, strict=True):
            rank = rank_feedback(checks[-1])
            best[entry.lessons] = max(rank, best.get(entry.lessons, rank))
        return True in best and False in best and best[False] > best[True]

    def choose(self, pool: Pool, round_no: int) -> tuple[Chosen, tuple[PoolEntry, ...]]:
        """The best of round `round_no`'s pool with its whole cost, and the entries marked.

        The second best becomes the runner-up a repair of this round alternates to. On a
        tie a candidate drawn without the lessons wins (then the earlier draw): lessons must
        earn their place. Replayed on the 1.5B, a round-1 tie (both crashed on the trap) kept
        the lessons' program, and no repair of it passed where the run without memory,
        repairing its own program, passed in round 2.
        """
        order = sorted(
            range(len(pool.drawn)),
            key=lambda k: (rank_feedback(pool.drawn[k][1][-1]), not pool.entries[k].lessons),
            reverse=True,
        )
        best = order[0]
        if len(order) > 1:
            self.runner_up[round_no] = pool.drawn[order[1]][:2]
        bare = [k for k in order if not pool.entries[k].lessons]
        if pool.entries[best].lessons and bare:
            self.bare[round_no] = pool.drawn[bare[0]][:2]
        entries = tuple(
            e.model_copy(update={"chosen": k == best}) for k, e in enumerate(pool.entries)
        )
        total = sum((d[2] for d in pool.drawn), pool.wasted)
        return (pool.drawn[best][0], pool.drawn[best][1], total), entries

    def take(
        self,
        pool: Pool,
        candidate: Candidate,
        origin: CandidateOrigin,
        temperature: float,
        cost: Usage,
        round_no: int,
        *,
        lessons: bool,
    ) -> None:
        """Check a new candidate and add it to the round's pool; `lessons`: its prompt
        showed the recalled lessons."""
        self.digests.setdefault(candidate.digest(), f"round {round_no} {origin}")
        if candidate.fix_note and origin != "fresh" and candidate.fix_note not in self.tried:
            self.tried.append(candidate.fix_note)
        checks, check_cost = self.run.check_one(candidate, round_no, len(pool.drawn))
        pool.drawn.append((candidate, checks, cost + check_cost))
        pool.entries.append(
            PoolEntry(
                origin=origin,
                temperature=temperature,
                kind=checks[-1].kind,
                credit=checks[-1].credit,
                tokens=(cost + check_cost).total_tokens,
                lessons=lessons,
            )
        )

    def _refiner_messages(
        self,
        candidate: Candidate,
        checks: tuple[Feedback, ...],
        round_no: int,
        lessons: Sequence[ScoredLesson],
    ) -> list[Message]:
        """The refiner's prompt for repairing `candidate`, judged by `checks` in `round_no`."""
        return prompts.refiner_messages(
            self.run.task,
            candidate,
            checks,
            round_no,
            tried=self.tried,
            lessons=render_lessons(lessons, self.run.cfg.lesson_token_budget),
            inputs=self.run.inputs,
        )
