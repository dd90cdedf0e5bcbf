"""Which draws a refinement round makes: `plan_draws` plans them in order, `steer` moves a
draw off a request the model keeps answering with a program already run."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from agent.result import CandidateOrigin

if TYPE_CHECKING:
    from agent.loop import LoopConfig

# One draw of a round: where it comes from, its temperature, and whether its prompt shows
# the recalled lessons.
Draw = tuple[CandidateOrigin, float, bool]


def plan_draws(
    cfg: LoopConfig,
    *,
    has_output: bool,
    has_runner_up: bool,
    has_lessons: bool = False,
    has_bare: bool = False,
) -> list[Draw]:
    """The draws of one refinement round, in order; repeats are skipped, not counted.

    Hot refiner samples come before the fresh generation, and a fresh generation is drawn
    only from a pool of four: measured on the 1.5B model from failing rounds, 3 of 4 hot
    refiner samples passed and 0 of 4 fresh generations (they start over and fall into the
    trap again, or reach for a missing library). The fresh one stays, in larger pools, for
    failures the refiner is anchored on. With a runner-up in
    the round being repaired, every other hot sample repairs it instead of the best: the best by
    rank can be a dead end (a program that hides its error and writes zeros outranks one
    that crashed further into the data), and the runner-up is often one fix away.

    With recalled lessons, the refiner's greedy answer is drawn twice, with and without
    them, and the hot samples alternate: a lesson recalled by error type can come from
    another task (measured on the 1.5B: a "skip rows that are not digits" lesson for a
    '$' amount), and the refiner shown it repeated its failing answer where the same
    refiner without it repaired the crash. The lessons must earn their place in the pool.

    When the repaired round's best was drawn with lessons and one drawn without them exists
    (`has_bare`; after round 1 it is the control), the refiner's greedy repair of that one
    without lessons ("refine_bare") comes second, whether this round recalled lessons or
    not: the run keeps the line a run without memory takes. On the 1.5B a seed lesson's
    program ranked first (a failed check against the control's crash), no repair of it
    passed, and the run without memory passed by repairing its crash.
    """
    hot = cfg.resample_temperature
    fresh = cfg.pool_size >= 4 and has_output
    hots = cfg.pool_size - 1 - fresh + cfg.resample_attempts
    alternate = has_runner_up
    samples: list[tuple[CandidateOrigin, float]] = [
        ("refine_alt" if alternate and i % 2 == 0 else "refine_hot", hot) for i in range(hots)
    ]
    plan: list[tuple[CandidateOrigin, float]] = [("refine", cfg.temperature)]
    cut = cfg.pool_size - 1 - fresh
    plan.extend(samples[:cut])
    if fresh:
        plan.append(("fresh", hot))
    plan.extend(samples[cut:])
    bare: list[Draw] = [("refine_bare", cfg.temperature, False)] if has_bare else []
    if not has_lessons:
        return [(*plan[0], False), *bare, *((o, t, False) for o, t in plan[1:])]
    bare = bare or [("refine", cfg.temperature, False)]
    rest = [(o, t, o == "fresh" or k % 2 == 0) for k, (o, t) in enumerate(plan[1:])]
    return [("refine", cfg.temperature, True), *bare, *rest]


# The origin of a refiner draw made on a base other than the best.
ORIGIN_OF: dict[str, CandidateOrigin] = {"alt": "refine_alt", "bare": "refine_bare"}

# A refiner request answered this often with a program already run gets no more draws.
ANCHORED = 2
ANCHORED_WHY = f"its request was answered {ANCHORED} times with a program already run"


def steer(
    planned: tuple[str, bool], repeats: Counter[tuple[str, bool]], present: set[str]
) -> tuple[str, bool] | None:
    """The request a refiner draw planned for `planned` (its base: "best", "alt" or "bare";
    whether the lessons are shown) is made with: the planned one, unless the model answered
    it `ANCHORED` times with a program already run; then another base of the round
    (`present`) not so answered, the runner-up first, with the same lessons shown (never to
    "bare", the line without lessons); None when there is none.

    The repeat note does not move such a request: in the 12-task stream (session 25) 55
    draws in 60 rounds went unchecked, 32 of them the very program the refiner was asked to
    repair, about a third of the stream's tokens, and none of the 9 rounds in which one
    request was answered twice with a run program passed. Measured on the same stream after
    it (twenty-sixth session): 8 draws moved, the unchecked share unchanged (31.6 %): most
    repeats are a request's first or second answer, and moved draws repeat too.
    """
    if repeats[planned] < ANCHORED:
        return planned
    for which in ("alt", "best", "bare"):
        other = (which, planned[1] and which != "bare")
        if which in present and other != planned and repeats[other] < ANCHORED:
            return other
    return None
