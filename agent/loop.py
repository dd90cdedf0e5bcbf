"""ReflectiveAgent: the bounded generate -> check -> reflect -> refine loop.

Rounds count attempts: round 1 is the first generation, every later round a refinement,
and `max_rounds` caps the number of candidates checked. Checks run cheapest first (rule
checks, then the task's check command in the sandbox, then the LLM critic) and the first
failing stage is the round's verdict.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agent import prompts
from agent.candidate import Candidate, parse_candidate
from agent.classify import classify
from agent.critic import Critique, critique_feedback, unreadable_critique
from agent.errors import StructuredOutputError
from agent.feedback import Feedback
from agent.llm.base import LLM, Message, Usage
from agent.result import RoundAction, RoundRecord, RunResult, StopReason
from agent.rules import rule_check
from agent.sandbox import Sandbox
from agent.stopping import decide_stop
from agent.task import Task
from memory.render import render_lessons
from memory.types import LessonQuery, Recall, RecallStage, ScoredLesson

CriticMode = Literal["auto", "always", "never"]
_STAGE_RANK = {"rule": 0, "execution": 1, "critic": 2}


class LoopConfig(BaseModel):
    """Knobs of the loop. `critic="auto"` asks the critic only when no check command exists."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_rounds: int = Field(default=3, ge=1, le=20)
    score_threshold: float = Field(default=8.0, ge=1, le=10)
    critic: CriticMode = "auto"
    temperature: float = 0.0
    # When the refiner returns an answer already tried, draw again this many times, hotter.
    resample_attempts: int = Field(default=2, ge=0)
    resample_temperature: float = 0.8
    lesson_limit: int = 3
    lesson_token_budget: int = 300
    max_tokens: int = 1024


@dataclass(frozen=True)
class LoopEvent:
    """Progress for a UI: one per step, with the cost of that step."""

    kind: Literal["recalled", "generated", "checked", "resampled", "stopped"]
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
        self.digests: set[str] = set()
        self.tried: list[str] = []
        self.started = time.monotonic()
        # Tokens of refiner calls whose answers were never checked (all repeats).
        self.unrecorded_usage = Usage()

    # -- the loop -------------------------------------------------------------------------

    def execute(self) -> RunResult:
        lessons = self._recall("seed", self._seed_text(), ())
        t0 = time.monotonic()
        first, usage = self._generate(lessons)
        self._record(1, "generate", first, usage, t0, 0, lessons)
        while True:
            stop = self._stop_reason()
            if stop is not None:
                return self._finish(stop)
            t0 = time.monotonic()
            last = self.rounds[-1]
            lessons = self._recall(
                "reflection", last.feedback.compressed(), _error_types(last.feedback)
            )
            candidate, usage, resamples = self._refine(last, lessons)
            if candidate is None:
                self.unrecorded_usage += usage
                return self._finish("stall")
            self._record(len(self.rounds) + 1, "refine", candidate, usage, t0, resamples, lessons)

    def _stop_reason(self) -> StopReason | None:
        return decide_stop(
            [r.feedback for r in self.rounds],
            max_rounds=self.cfg.max_rounds,
            score_threshold=self.cfg.score_threshold,
            has_external_check=self.task.check is not None,
        )

    def _finish(self, reason: StopReason) -> RunResult:
        best = max(self.rounds, key=_rank)
        final = self.rounds[-1].feedback
        passed = best.feedback.passed
        unresolved: tuple[str, ...] = ()
        if not passed:
            unresolved = best.feedback.issues or (best.feedback.compressed(),)
        usage = sum((r.usage for r in self.rounds), self.unrecorded_usage)
        self.agent._emit(
            LoopEvent("stopped", len(self.rounds), f"{reason} (last: {final.kind})", usage)
        )
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
        )

    # -- steps ----------------------------------------------------------------------------

    def _recall(
        self, stage: RecallStage, text: str, error_types: tuple[str, ...]
    ) -> Sequence[ScoredLesson]:
        query = LessonQuery(
            text=text,
            scope=self.task.scope,
            error_types=error_types,
            stage=stage,
            limit=self.cfg.lesson_limit,
            token_budget=self.cfg.lesson_token_budget,
        )
        lessons = self.agent.recall.recall(query)
        if lessons:
            ids = [s.lesson.id for s in lessons]
            self.agent.recall.report_use(self.run_id, stage, ids)
            self.agent._emit(
                LoopEvent("recalled", len(self.rounds) + 1, f"{stage}: {', '.join(ids)}")
            )
        return lessons

    def _generate(self, lessons: Sequence[ScoredLesson]) -> tuple[Candidate, Usage]:
        user = prompts.render_generator(
            self.task.goal,
            self.task.output,
            self.task.workspace_files(),
            render_lessons(lessons) if lessons else "",
        )
        messages = [
            Message(role="system", content=prompts.GENERATOR_SYSTEM),
            Message(role="user", content=user),
        ]
        completion = self.agent.generator.complete(
            messages, temperature=self.cfg.temperature, max_tokens=self.cfg.max_tokens
        )
        return parse_candidate(completion.text, self.task.output), completion.usage

    def _refine(
        self, last: RoundRecord, lessons: Sequence[ScoredLesson]
    ) -> tuple[Candidate | None, Usage, int]:
        passed_external = any(c.stage == "execution" and c.passed for c in last.checks)
        user = prompts.render_refiner(
            goal=self.task.goal,
            previous=prompts.render_files(last.candidate.files, last.candidate.text),
            round_no=last.round,
            feedback=last.feedback.compressed(),
            kind=last.feedback.kind,
            tried=self.tried,
            lessons=render_lessons(lessons) if lessons else "",
            passed_external=passed_external,
        )
        messages = [
            Message(
                role="system",
                content=prompts.REFINER_SYSTEM if self.task.output else prompts.REFINER_SYSTEM_TEXT,
            ),
            Message(role="user", content=user),
        ]
        usage = Usage()
        # A small model often returns the identical answer, or prose without the files;
        # then sample again, hotter, rather than spend a round checking nothing new.
        last_attempt = self.cfg.resample_attempts
        for attempt in range(last_attempt + 1):
            temperature = self.cfg.temperature if attempt == 0 else self.cfg.resample_temperature
            completion = self.agent.refiner.complete(
                messages,
                temperature=temperature,
                max_tokens=self.cfg.max_tokens,
                seed=attempt,
            )
            usage += completion.usage
            candidate = parse_candidate(completion.text, self.task.output)
            fresh = candidate.digest() not in self.digests
            complete = all(name in candidate.files for name in self.task.output)
            if fresh and (complete or attempt == last_attempt):
                if candidate.fix_note:
                    self.tried.append(candidate.fix_note)
                return candidate, usage, attempt
            reason = "an earlier answer" if not fresh else "no output file"
            self.agent._emit(LoopEvent("resampled", last.round + 1, f"refiner gave {reason}"))
        return None, usage, last_attempt

    def _record(
        self,
        round_no: int,
        action: RoundAction,
        candidate: Candidate,
        usage: Usage,
        t0: float,
        resamples: int,
        lessons: Sequence[ScoredLesson],
    ) -> None:
        self.agent._emit(LoopEvent("generated", round_no, action, usage, time.monotonic() - t0))
        self.digests.add(candidate.digest())
        t_check = time.monotonic()
        checks, check_usage = self._check(candidate, round_no)
        self.agent._emit(
            LoopEvent(
                "checked",
                round_no,
                f"{checks[-1].stage}: {checks[-1].kind}",
                check_usage,
                time.monotonic() - t_check,
            )
        )
        self.rounds.append(
            RoundRecord(
                round=round_no,
                action=action,
                candidate=candidate,
                checks=tuple(checks),
                usage=usage + check_usage,
                seconds=time.monotonic() - t0,
                resamples=resamples,
                recalled_lesson_ids=tuple(s.lesson.id for s in lessons),
            )
        )

    # -- checks, cheapest first ------------------------------------------------------------

    def _check(self, candidate: Candidate, round_no: int) -> tuple[list[Feedback], Usage]:
        rule = rule_check(candidate, self.task)
        if rule is not None:
            return [rule], Usage()
        checks: list[Feedback] = []
        if self.task.check is not None:
            executed = self._execute(candidate, round_no)
            checks.append(executed)
            if not executed.passed:
                return checks, Usage()
        if self.cfg.critic == "always" or (self.cfg.critic == "auto" and not self.task.check):
            verdict, usage = self._critique(candidate, checks)
            checks.append(verdict)
            return checks, usage
        return checks, Usage()

    def _execute(self, candidate: Candidate, round_no: int) -> Feedback:
        assert self.task.check is not None
        log_path = self.run_dir / f"round-{round_no}.log" if self.run_dir else None
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)

        def attempt() -> Feedback:
            assert self.task.check is not None
            result = self.agent.sandbox.run(
                self.task.check,
                files=candidate.files,
                workspace=self.task.workspace,
                task_dir=self.task.task_dir,
                timeout_s=self.task.timeout_s,
                log_path=log_path,
            )
            return classify(result, log_path=log_path)

        feedback = attempt()
        if feedback.kind == "resource_error" and (feedback.error_type or "").startswith("SIG"):
            # A kill by a limit can be load on a shared machine: one retry before a rewrite.
            feedback = attempt()
        return feedback

    def _critique(
        self, candidate: Candidate, earlier: Sequence[Feedback]
    ) -> tuple[Feedback, Usage]:
        checklist = [
            f"It does exactly what the task asks: {self.task.goal}",
            "Names, formats, units and rounding match the task statement exactly.",
            "Nothing is left unfinished (no placeholder, TODO or missing part).",
        ]
        if self.task.output:
            checklist.insert(1, f"All requested files are present: {', '.join(self.task.output)}")
        if earlier:
            checklist.append(f"The automatic check passed: {earlier[-1].summary}")
        user = prompts.render_critic(
            self.task.goal, checklist, prompts.render_files(candidate.files, candidate.text)
        )
        messages = [
            Message(role="system", content=prompts.CRITIC_SYSTEM),
            Message(role="user", content=user),
        ]
        try:
            completion = self.agent.critic.complete(
                messages, schema=Critique, temperature=0.0, max_tokens=512
            )
        except StructuredOutputError as exc:
            return unreadable_critique(exc.raw, str(exc)), exc.usage or Usage()
        assert completion.parsed is not None
        return critique_feedback(completion.parsed), completion.usage

    def _seed_text(self) -> str:
        # The goal plus the first lines of the inputs: lessons are indexed by symptom and
        # root cause, and the data's surface ("$1,299.99", a BOM) is what they share.
        parts = [self.task.goal]
        for name, preview in self.task.workspace_files(max_bytes=300).items():
            head = "\n".join(preview.splitlines()[:3])
            parts.append(f"--- {name} ---\n{head}")
        return "\n".join(parts)


def _error_types(feedback: Feedback) -> tuple[str, ...]:
    return tuple(t for t in (feedback.error_type, feedback.kind) if t)


def _rank(record: RoundRecord) -> tuple[bool, int, float, int, int]:
    verdict = record.feedback
    return (
        verdict.passed,
        _STAGE_RANK[verdict.stage] + (1 if verdict.passed else 0),
        verdict.score or 0.0,
        -len(verdict.issues),
        -record.round,
    )
