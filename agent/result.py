"""What a run produced: every round's candidate and checks, the best candidate, the cost."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agent.candidate import Candidate
from agent.feedback import CheckStage, Feedback, FeedbackKind
from agent.llm.base import Usage

StopReason = Literal[
    "passed",
    "score_threshold",
    "max_rounds",
    "no_actionable_issue",
    "stall",
    "budget",
]
# What each stop means, for people (`lessonloop run` prints it beside the reason).
STOP_MEANS: dict[StopReason, str] = {
    "passed": "every check passed",
    "score_threshold": "no external check; the critic's score reached the threshold",
    "max_rounds": "out of rounds (--max-rounds)",
    "no_actionable_issue": "failed, with nothing concrete left to fix",
    "stall": "the last repair failed as what it repaired did, or the refiner kept repeating "
    "itself: another round would not differ",
    "budget": "the task's token budget is spent",
}
RoundAction = Literal["generate", "refine"]
# How a candidate of a round was drawn: the first generation (with seed lessons), its control
# (the same without them), a hot generation from round 1's prompt ("sample"), the refiner's
# answer (greedy or hotter) to the best candidate so far, a hot repair of the repaired round's
# runner-up, the refiner's greedy repair of the best candidate drawn without lessons (when
# the best was drawn with them), or a fresh generation that was shown the failing example.
CandidateOrigin = Literal[
    "generate", "control", "sample", "refine", "refine_hot", "refine_alt", "refine_bare", "fresh"
]


class PoolEntry(BaseModel):
    """One candidate drawn and checked within a round; the round keeps the best of them."""

    model_config = ConfigDict(frozen=True)

    origin: CandidateOrigin
    temperature: float
    kind: str  # the verdict's FeedbackKind
    credit: float | None = None
    tokens: int = 0
    chosen: bool = False
    lessons: bool = False  # its prompt showed the recalled lessons


class RoundRecord(BaseModel):
    """One attempt: how the candidate was made, every check that ran on it (cheapest first)."""

    model_config = ConfigDict(frozen=True)

    round: int
    action: RoundAction
    candidate: Candidate
    checks: tuple[Feedback, ...]
    usage: Usage
    seconds: float
    # Draws not checked: an answer already checked, or a reply without the output files.
    resamples: int = 0
    # Why, one per draw: "refine_hot: repeated round 1 generate", "sample: no output file".
    resampled: tuple[str, ...] = ()
    # Draws planned on a request the model kept answering with a program already run
    # (`agent.draws.steer`): "refine_hot -> refine_alt" (moved to another base) or
    # "refine_hot: not drawn". They cost nothing.
    steered: tuple[str, ...] = ()
    recalled_lesson_ids: tuple[str, ...] = ()
    # Every candidate checked in this round (the search); `candidate` is the chosen one.
    pool: tuple[PoolEntry, ...] = ()
    # The round a refinement repaired (`agent.rank.next_base`: not always the one before):
    # its chosen candidate, or for a `refine_alt`/`refine_bare` draw its runner-up or its
    # best without lessons. None: a generation, or a record older than this field.
    repairs: int | None = None
    # What the chosen candidate repaired when it is not round `repairs`'s chosen one (a
    # `refine_alt` or `refine_bare` draw: that round's runner-up, or its best drawn without
    # lessons), as that round's record would be had it been chosen (usage in this round's);
    # None otherwise. The retrospective learns the pass's change from it, the console diffs.
    repaired: RoundRecord | None = None

    @property
    def feedback(self) -> Feedback:
        """The verdict of the round: the last check that ran."""
        return self.checks[-1]

    @property
    def base_round(self) -> int | None:
        """The round this one repaired; None for a generation."""
        if self.action != "refine":
            return None
        return self.repairs if self.repairs is not None else self.round - 1

    @property
    def origin(self) -> CandidateOrigin | None:
        """How the chosen candidate was drawn; None when the round checked only it."""
        return next((e.origin for e in self.pool if e.chosen), None)


class RunResult(BaseModel):
    """The outcome of `ReflectiveAgent.run`: also the trajectory a retrospective reads."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task_id: str
    scope: str
    goal: str
    passed: bool
    stop_reason: StopReason
    rounds: tuple[RoundRecord, ...]
    best_round: int
    unresolved: tuple[str, ...]
    usage: Usage
    seconds: float
    run_dir: Path | None = None
    # Lessons a lesson-free candidate of the same pool outranked (round 1: the control).
    outranked_lesson_ids: tuple[str, ...] = ()
    # The passing files with what the pass did not need taken back (`agent.reduce`; still
    # passing): the verified change a lesson shows. None: nothing was taken back.
    verified_files: dict[str, str] | None = None
    # The digest of the candidate the passing one repaired: the change is relative to it.
    verified_base: str | None = None
    taken_back: tuple[str, ...] = ()
    # That candidate's files with only the expression of the line that raised written as the
    # pass writes it, which got the program past that line (`agent.transplant`, checked):
    # the failure's own fix. None: no such expression, or it did not get past.
    failure_fix: dict[str, str] | None = None
    # The data symbols the task's input holds (`memory.marks`: currency, '%', ';', '|', BOM,
    # a missing value, the certain decimal mark: "dec." or "dec,"), as recall's data gate saw
    # them; None: no input files, or not known.
    # The retrospective keeps no claim about data the input does not have.
    input_marks: tuple[str, ...] | None = None
    # When a hot sample of round 1 passed after round 1's earlier draws failed: the one of
    # those failing draws nearest to it, as the round it would have been alone. The pass
    # stands for its repair (the verified change is relative to it), so the retrospective
    # reads it before `rounds`.
    first_failure: RoundRecord | None = None

    @property
    def attempts(self) -> tuple[RoundRecord, ...]:
        """The candidates a retrospective reads, in order: `first_failure` (if any), then
        each round's chosen one, preceded by what it repaired when that was not a chosen one
        (`RoundRecord.repaired`)."""
        first = (self.first_failure,) if self.first_failure else ()
        return (*first, *(a for r in self.rounds for a in (r.repaired, r) if a is not None))

    @property
    def best(self) -> Candidate:
        return self.rounds[self.best_round - 1].candidate

    @property
    def candidates_checked(self) -> int:
        """Candidates that went through the checks (a round without a search counts one)."""
        return sum(max(1, len(r.pool)) for r in self.rounds)

    @property
    def recalled_lesson_ids(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for record in self.rounds:
            seen.update(dict.fromkeys(record.recalled_lesson_ids))
        return tuple(seen)

    def summary(self) -> RunSummary:
        """The machine-readable view printed by `lessonloop run --json`."""
        return RunSummary(
            run_id=self.run_id,
            task_id=self.task_id,
            passed=self.passed,
            stop_reason=self.stop_reason,
            rounds=len(self.rounds),
            best_round=self.best_round,
            feedback_kinds=tuple(r.feedback.kind for r in self.rounds),
            per_round=tuple(
                RoundSummary(
                    round=r.round,
                    action=r.action,
                    checks=tuple(
                        CheckSummary(stage=c.stage, kind=c.kind, summary=c.summary)
                        for c in r.checks
                    ),
                    tokens=r.usage.total_tokens,
                    seconds=round(r.seconds, 3),
                    resamples=r.resamples,
                    recalled_lesson_ids=r.recalled_lesson_ids,
                    candidates=r.pool,
                    repairs=r.base_round,
                    resampled=r.resampled,
                    steered=r.steered,
                )
                for r in self.rounds
            ),
            candidates_checked=self.candidates_checked,
            unresolved=self.unresolved,
            usage=UsageSummary.of(self.usage),
            seconds=round(self.seconds, 3),
            recalled_lesson_ids=self.recalled_lesson_ids,
            outranked_lesson_ids=self.outranked_lesson_ids,
            taken_back=self.taken_back,
            run_dir=str(self.run_dir) if self.run_dir else None,
        )


# -- the summary: what `lessonloop run --json` prints and `summary.json` holds -------------


class CheckSummary(BaseModel):
    """One check of a round, without its log."""

    model_config = ConfigDict(frozen=True)

    stage: CheckStage
    kind: FeedbackKind
    summary: str


class RoundSummary(BaseModel):
    """One round in the summary."""

    model_config = ConfigDict(frozen=True)

    round: int
    action: RoundAction
    checks: tuple[CheckSummary, ...]
    tokens: int
    seconds: float
    resamples: int
    recalled_lesson_ids: tuple[str, ...]
    candidates: tuple[PoolEntry, ...]
    repairs: int | None = None  # the round this one repaired (None: a generation)
    resampled: tuple[str, ...] = ()  # why each unchecked draw was not checked
    steered: tuple[str, ...] = ()  # draws moved off an anchored request, or not drawn


class UsageSummary(BaseModel):
    """Token usage with the total spelled out."""

    model_config = ConfigDict(frozen=True)

    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    calls: int

    @classmethod
    def of(cls, usage: Usage) -> UsageSummary:
        """`usage` with its total spelled out."""
        return cls(
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            calls=usage.calls,
        )


class RunSummary(BaseModel):
    """A run, machine-readable: serialised once (`model_dump_json`) wherever it is shown."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    task_id: str
    passed: bool
    stop_reason: StopReason
    rounds: int
    best_round: int
    feedback_kinds: tuple[FeedbackKind, ...]
    per_round: tuple[RoundSummary, ...]
    candidates_checked: int
    unresolved: tuple[str, ...]
    usage: UsageSummary
    seconds: float
    recalled_lesson_ids: tuple[str, ...]
    outranked_lesson_ids: tuple[str, ...]
    taken_back: tuple[str, ...]  # parts of the passing change the pass did not need
    run_dir: str | None
