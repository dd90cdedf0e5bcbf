"""ReflectiveAgent: the bounded generate -> check -> reflect -> refine loop.

Rounds count attempts: round 1 is the first generation, every later round a refinement, and
`max_rounds` caps the rounds. Checks run cheapest first (rule checks, then the task's check
command in the sandbox, then the LLM critic) and the first failing stage is the round's
verdict.

Every round is a small search. Round 1 draws the greedy generation (and, when seed lessons
were shown, the control without them), then hot generations from the same prompt until one
passes or `first_pool` candidates were checked. A refinement round checks up to `pool_size`
distinct candidates, drawn in this order -- the refiner's greedy answer, hotter refiner
samples, then (from a pool of four) a fresh generation shown the failing check and the
recalled lessons -- each checked in the sandbox, the first pass ending the round. A round
keeps its best by `rank_feedback`: passed, then how far the program got (ran and was wrong
beats crashed beats did not parse), then the check's partial credit. A small model's greedy
answer (and its refiner's) is one draw of many: the pools turn pass@k into the loop's
pass@1. The next round repairs the last round's best unless an earlier round outranks it.
`token_budget` caps what one task may spend. This module runs the rounds (recall, generate,
check, stop, the result); the search inside a round is `agent.search` (`agent.draws`).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent import prompts
from agent.candidate import Candidate, parse_candidate
from agent.checks import Checks, CriticMode
from agent.feedback import Feedback
from agent.imports import complete_imports
from agent.llm.base import LLM, Message, Usage
from agent.queries import data_views, error_types, seed_query
from agent.rank import best_round, next_base
from agent.result import PoolEntry, RoundAction, RoundRecord, RunResult, StopReason
from agent.sandbox import Sandbox
from agent.search import Chosen, Pool, RoundSearch
from agent.splice import programs_of, splice_repair
from agent.stopping import stop_after
from agent.task import Task
from agent.verify import verify_pass
from memory.datagate import views_marks
from memory.render import render_lessons
from memory.types import LessonQuery, Recall, RecallStage, ScoredLesson


class LoopConfig(BaseModel):
    """Knobs of the loop. `critic="auto"` asks the critic only when no check command exists."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rounds: int = Field(default=3, ge=1, le=20)
    score_threshold: float = Field(default=8.0, ge=1, le=10)
    critic: CriticMode = "auto"
    temperature: float = 0.0
    # Draws again after an answer already tried, hotter (`agent.draws.steer` caps a request).
    resample_attempts: int = Field(default=2, ge=0)
    resample_temperature: float = 0.8
    # Distinct candidates checked per refinement round at most (1: the refiner's answer only).
    pool_size: int = Field(default=3, ge=1, le=16)
    # Distinct candidates checked in round 1 at most: the greedy generation, its control,
    # then hot generations (seeds 1, 2, ...); 1: the greedy one (and the control) only.
    first_pool: int = Field(default=4, ge=1, le=16)
    # Total tokens one task may spend; no new candidate is drawn once it is reached.
    token_budget: int | None = Field(default=None, ge=1)
    # When round 1's candidate, written with seed lessons, fails: draw the same generation
    # without them and keep the better (see `_Run._first_round`).
    seed_control: bool = True
    lesson_limit: int = 3
    lesson_token_budget: int = 300
    max_tokens: int = 1024
    # Checks spent after a refinement passed on taking back what the pass did not need, so
    # the lesson shows only the fix (`agent.reduce`), and at most half as many more on the
    # failure's own fix (`agent.transplant`); 0: off.
    reduce_budget: int = Field(default=8, ge=0)


EventKind = Literal[
    "recalled", "generated", "checked", "resampled", "steered", "reduced", "stopped"
]


@dataclass(frozen=True)
class LoopEvent:
    """Progress for a UI: one per step, with the cost of that step."""

    kind: EventKind
    round: int
    detail: str
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0


Observer = Callable[[LoopEvent], None]


class ReflectiveAgent:
    """Runs a task through generator, checks, reflection and refiner; returns the trajectory."""

    def __init__(
        self,
        llm: LLM,
        *,
        recall: Recall,
        sandbox: Sandbox,
        config: LoopConfig | None = None,
        critic_llm: LLM | None = None,
        refiner_llm: LLM | None = None,
        runs_dir: Path | None = None,
        observer: Observer | None = None,
    ) -> None:
        self.generator = llm
        self.critic = critic_llm or llm
        self.refiner = refiner_llm or llm
        self.recall = recall
        self.sandbox = sandbox
        self.config = config or LoopConfig()
        self.runs_dir = runs_dir
        self.observer = observer

    def run(self, task: Task, *, run_id: str | None = None) -> RunResult:
        run = _Run(self, task, run_id or uuid.uuid4().hex[:12])
        return run.execute()

    def _emit(self, event: LoopEvent) -> None:
        if self.observer is not None:
            self.observer(event)


class _Run:
    """State of one run; kept apart so the agent itself stays reusable and stateless."""

    def __init__(self, agent: ReflectiveAgent, task: Task, run_id: str) -> None:
        self.agent, self.task, self.run_id = agent, task, run_id
        self.cfg = agent.config
        self.run_dir = agent.runs_dir / run_id if agent.runs_dir else None
        self.rounds: list[RoundRecord] = []
        self.started = time.monotonic()
        # Tokens of refiner calls whose answers were never checked (all repeats).
        self.unrecorded_usage = Usage()
        # The input previews every generator and refiner prompt shows: read once per run.
        self.inputs = task.workspace_files()
        # The outputs run as programs: a repair of one may be a fragment to splice in.
        self.programs = programs_of(task)
        self.checks = Checks(
            task,
            sandbox=agent.sandbox,
            critic=agent.critic,
            critic_mode=self.cfg.critic,
            run_dir=self.run_dir,
        )
        self.search = RoundSearch(self)
        # Lessons a lesson-free candidate of the same pool outranked: not shown again this run.
        self.outranked: tuple[str, ...] = ()
        # The failing draw of round 1 a passing hot sample stands for (see `_first_round`).
        self.first_failure: RoundRecord | None = None
        # Signatures of every verdict checked so far, and whether the last round added one.
        self.failures: set[str] = set()
        self.found_new = False
        # The task's input as recall sees it (`agent.queries.seed_query`'s views).
        self.data: tuple[str, ...] = ()

    # -- the loop -------------------------------------------------------------------------

    def execute(self) -> RunResult:
        text, surface = seed_query(self.task)
        # The views score the task start; they and every symbol of the input judge every
        # recall (the data gate).
        self.data = data_views(self.task, surface)
        self._first_round(self._recall("seed", text, (), surface))
        while True:
            if (stop := self._stop_reason()) is not None:
                return self._finish(stop)
            if self.spent() >= (self.cfg.token_budget or float("inf")):
                return self._finish("budget")
            t0 = time.monotonic()
            fb = (base := next_base(self.rounds)).feedback
            lessons = self._recall("reflection", fb.compressed(program=False), error_types(fb))
            if (stop := self._refine(base, lessons, t0)) is not None:
                return self._finish(stop)

    def _first_round(self, lessons: Sequence[ScoredLesson]) -> None:
        """Round 1: the greedy generation shown the seed lessons, then a small search.

        A seed lesson is a hypothesis about a task it was not learned on: the small model
        follows it to the letter, and one from a near-miss task (measured: a "skip rows that
        are not digits" lesson handed to a task whose '$' amounts it then skipped) costs more
        than the right one saves. So when that candidate fails, the same generation is drawn
        without the lessons (the control), and the better by `rank_feedback` is the round's
        (the control on a tie); the other becomes the runner-up the next round's samples
        alternate to. When the control strictly outranks it, the lessons misled here: they are
        kept out of this run's later prompts and reported (`RunResult.outranked_lesson_ids`).

        While nothing passed, hot generations from the same prompt follow
        (`RoundSearch.sample_first`): a small model's greedy answer is one draw of many (on
        HumanEval, 1.5B: round 1 alone 20 of 30 against the greedy program's 15, at 1.9x the
        tokens); none after a crash on a value of the task's input (all meet the same data).
        A sample that passes after failing draws stands for the one nearest to it
        (`RoundSearch.repaired`), and is learned from like a refinement.
        """
        t0, temperature = time.monotonic(), self.cfg.temperature
        pool = Pool()
        first, usage = self.generate(lessons)
        self.emit("generated", 1, "generate", usage, time.monotonic() - t0)
        self.search.take(pool, first, "generate", temperature, usage, 1, lessons=bool(lessons))
        if lessons and self.cfg.seed_control and not pool.passed:
            drawn_at = time.monotonic()
            control, cost = self.generate(())
            if (earlier := self.search.digests.get(control.digest())) is not None:
                pool.wasted += cost  # the lessons changed nothing
                pool.unchecked.append(f"control: repeated {earlier}")
                self.emit("resampled", 1, pool.unchecked[-1])
            else:
                self.emit("generated", 1, "control", cost, time.monotonic() - drawn_at)
                self.search.take(pool, control, "control", temperature, cost, 1, lessons=False)
        self.search.sample_first(pool, lessons)
        self._note_failures(pool)
        if len(pool.drawn) == 1:
            # Round 1's cost includes its repeats (a control or samples that gave nothing new).
            candidate, checks, usage = pool.drawn[0]
            chosen = (candidate, checks, usage + pool.wasted)
            self._append(1, "generate", chosen, (), t0, pool, lessons)
            return
        self._note_outranked(pool, lessons)
        chosen, entries = self.search.choose(pool, 1)
        self._append(1, "generate", chosen, entries, t0, pool, lessons)
        self.first_failure = self.search.repaired(pool, self.rounds[-1])

    def _note_outranked(self, pool: Pool, lessons: Sequence[ScoredLesson]) -> None:
        """Lessons whose candidates a lesson-free one of the same pool outranked misled this
        run: kept out of its later prompts and reported."""
        if self.search.lessons_outranked(pool):
            ids = (s.lesson.id for s in lessons if s.lesson.id not in self.outranked)
            self.outranked = (*self.outranked, *ids)

    def _note_failures(self, pool: Pool) -> None:
        """Did this round's search fail in a way no earlier candidate did? (see stop_after)"""
        signatures = {checks[-1].signature() for _, checks, _ in pool.drawn}
        self.found_new = bool(signatures - self.failures)
        self.failures |= signatures

    def _stop_reason(self) -> StopReason | None:
        return stop_after(
            self.rounds,
            max_rounds=self.cfg.max_rounds,
            score_threshold=self.cfg.score_threshold,
            has_external_check=self.task.check is not None,
            found_new=self.found_new,
        )

    def _finish(self, reason: StopReason) -> RunResult:
        best = best_round(self.rounds)
        final, passed = self.rounds[-1].feedback, best.feedback.passed
        unresolved = () if passed else best.feedback.issues or (best.feedback.compressed(),)
        usage = self._spent_usage()
        reduced = self._reduce(best) if passed else {}
        self.emit("stopped", len(self.rounds), f"{reason} (last: {final.kind})", usage)
        marks = tuple(sorted(views_marks(self.data))) if self.inputs else None
        return RunResult(
            run_id=self.run_id,
            task_id=self.task.id,
            scope=self.task.scope,
            goal=self.task.goal,
            passed=passed,
            stop_reason=reason,
            rounds=tuple(self.rounds),
            best_round=best.round,
            unresolved=unresolved,
            usage=usage,
            seconds=time.monotonic() - self.started,
            run_dir=self.run_dir,
            outranked_lesson_ids=self.outranked,
            first_failure=self.first_failure,
            input_marks=marks,
            **reduced,
        )

    def _reduce(self, best: RoundRecord) -> dict[str, Any]:
        """The `RunResult` fields of what the pass verified (`agent.verify`); none when there
        is no change to verify: a greedy first-round pass, a fresh generation, a pass only
        the critic judged, reduction off."""
        if self.task.check is None or self.cfg.reduce_budget == 0:
            return {}
        base = self.search.base_of.get(best.candidate.digest())
        if base is None or best.feedback.stage != "execution":
            return {}
        started = time.monotonic()
        verified = verify_pass(
            self.task, self.agent.sandbox, *base, best.candidate, budget=self.cfg.reduce_budget
        )
        if verified.detail:
            self.emit("reduced", best.round, verified.detail, seconds=time.monotonic() - started)
        return verified.result_fields()

    # -- steps ----------------------------------------------------------------------------

    def _recall(
        self,
        stage: RecallStage,
        text: str,
        error_types: tuple[str, ...],
        surface: tuple[str, ...] = (),
    ) -> Sequence[ScoredLesson]:
        query = LessonQuery(
            text=text,
            surface=surface,
            data=self.data,
            scope=self.task.scope,
            error_types=error_types,
            stage=stage,
            limit=self.cfg.lesson_limit,
            token_budget=self.cfg.lesson_token_budget,
            exclude=self.outranked,
        )
        # Filtered again for a Recall that does not honour `exclude`.
        lessons = [s for s in self.agent.recall.recall(query) if s.lesson.id not in self.outranked]
        if lessons:
            ids = [s.lesson.id for s in lessons]
            self.agent.recall.report_use(self.run_id, stage, ids)
            self.emit("recalled", len(self.rounds) + 1, f"{stage}: {', '.join(ids)}")
        return lessons

    def generate(
        self,
        lessons: Sequence[ScoredLesson],
        *,
        failure: str = "",
        temperature: float | None = None,
        seed: int | None = None,
    ) -> tuple[Candidate, Usage]:
        user = prompts.render_generator(
            self.task.goal,
            self.task.output,
            self.inputs,
            render_lessons(lessons, self.cfg.lesson_token_budget),
            failure,
        )
        system = Message(role="system", content=prompts.GENERATOR_SYSTEM)
        completion = self.agent.generator.complete(
            [system, Message(role="user", content=user)],
            temperature=self.cfg.temperature if temperature is None else temperature,
            max_tokens=self.cfg.max_tokens,
            seed=seed,
        )
        candidate = parse_candidate(completion.text, self.task.output)
        return complete_imports(candidate), completion.usage

    def repair(
        self, base: Candidate, messages: Sequence[Message], *, temperature: float, seed: int
    ) -> tuple[Candidate, Usage]:
        completion = self.agent.refiner.complete(
            messages, temperature=temperature, max_tokens=self.cfg.max_tokens, seed=seed
        )
        repaired = parse_candidate(completion.text, self.task.output)
        return complete_imports(splice_repair(base, repaired, self.programs)), completion.usage

    def _refine(
        self, base: RoundRecord, lessons: Sequence[ScoredLesson], t0: float
    ) -> StopReason | None:
        """One refinement round repairing `base`: the search draws, checks, ranks, records.

        Returns why the run must stop instead ("budget", or "stall" when no draw was new),
        else None.
        """
        round_no = len(self.rounds) + 1
        pool = self.search.draw(base, round_no, lessons)
        if not pool.drawn:
            self.unrecorded_usage += pool.wasted
            return "budget" if self.spent() >= (self.cfg.token_budget or float("inf")) else "stall"
        self._note_outranked(pool, lessons)
        self._note_failures(pool)
        chosen, entries = self.search.choose(pool, round_no)
        self._append(round_no, "refine", chosen, entries, t0, pool, lessons, base.round)
        return None

    def check_one(
        self, candidate: Candidate, round_no: int, index: int
    ) -> tuple[tuple[Feedback, ...], Usage]:
        started = time.monotonic()
        checks, usage = self.checks.run(candidate, round_no, index)
        verdict = checks[-1]
        credit = (
            f" ({verdict.credit:.0%})" if verdict.credit is not None and not verdict.passed else ""
        )
        detail = f"{verdict.stage}: {verdict.kind}{credit}"
        self.emit("checked", round_no, detail, usage, time.monotonic() - started)
        return tuple(checks), usage

    def emit(
        self,
        kind: EventKind,
        round_no: int,
        detail: str,
        usage: Usage | None = None,
        seconds: float = 0.0,
    ) -> None:
        event = LoopEvent(kind, round_no, detail, Usage() if usage is None else usage, seconds)
        self.agent._emit(event)

    def _append(
        self,
        round_no: int,
        action: RoundAction,
        chosen: Chosen,
        entries: tuple[PoolEntry, ...],
        t0: float,
        pool: Pool,
        lessons: Sequence[ScoredLesson],
        repairs: int | None = None,
    ) -> None:
        candidate, checks, usage = chosen
        self.rounds.append(
            RoundRecord(
                round=round_no,
                action=action,
                candidate=candidate,
                checks=checks,
                usage=usage,
                seconds=time.monotonic() - t0,
                resamples=pool.repeats,
                resampled=tuple(pool.unchecked),
                steered=tuple(pool.steered),
                recalled_lesson_ids=tuple(s.lesson.id for s in lessons),
                pool=entries,
                repairs=repairs,
                repaired=self.search.other_base(candidate, self.rounds, repairs),
            )
        )

    def _spent_usage(self) -> Usage:
        return sum((r.usage for r in self.rounds), self.unrecorded_usage)

    def spent(self) -> int:
        return self._spent_usage().total_tokens
