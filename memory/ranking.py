"""Recall's knobs and its re-ranking formula.

Ranking, for each candidate:

    relevance = ((cosine - cut) / (best cosine - cut) + bm25 / best bm25) / 2   # 1 = first in both
    score = relevance
          + use_weight     * (helped - misled) / (helped + misled + 2)    # in (-1, 1)
          + recency_weight * 0.5 ** (age_days / recency_half_life_days)  # in (0, 1]
          + validated_bonus * [status == "validated"]
          - flagged_penalty * [flagged for review]                       # memory.lift.flag

"Best" is over the candidates (all above the cut); a candidate sharing no word with the query
has BM25 0. This is relative score fusion: each side counts by how close it comes to that
side's best, so a lexical match four times stronger than the next (the shapes of the data's
values, `memory.lexical.shape`, shared by a task start and a lesson learned on data of the
same kind) outweighs a cosine a little lower, which reciprocal rank fusion (k = 60) could not:
there adjacent ranks differed by about 0.01 whatever the scores. On the trap tasks' starts
(scripts/bench_recall.py --trap-tasks only) it raised hit@1 from 0.41 to 0.48 with the same
no-lesson rate. The smoothed use record (the +2 is a Beta(1,1) prior, so one lucky run moves
it little) and recency move a lesson past near-ties only. A lesson flagged for review
(recalled into failing runs, `memory.lift.flag`) loses as much as the worst use record. (The
use record is a lesson's own counters; its lift, `memory.lift`, compares the runs that had it
with those that did not, and is for people and the review.) Age counts from
`updated_at`, which a duplicate sighting refreshes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.types import Lesson, RecallStage


@dataclass(frozen=True)
class RecallConfig:
    """Knobs of recall. The defaults are calibrated on all-MiniLM-L6-v2 (see README note)."""

    min_similarity: float
    # Seed stage (task start, no error types to gate on): recall answers only if its best
    # candidate reaches max(min_similarity, this), else nothing; None: min_similarity.
    seed_min_similarity: float | None = None
    # ... and then candidates need only the cut minus this. See "Seed gate" in `memory.recall`.
    seed_cut_margin: float = 0.0
    # A seed query that states an error is gated on the types it states (memory.seedgate).
    seed_stated_types: bool = True
    # Cosine of root cause + fix embeddings above which a lower-ranked lesson is dropped as
    # saying the same thing; equal to the dedup threshold: such lessons would have been
    # merged had they shared scope and error type.
    diversity_similarity: float = 0.8
    use_weight: float = 0.1
    recency_weight: float = 0.03
    recency_half_life_days: float = 90.0
    validated_bonus: float = 0.02
    # Subtracted from a lesson flagged for review: equal to the worst lift term.
    flagged_penalty: float = 0.1
    # Candidates fetched from each side before re-ranking: room for diversification.
    candidate_pool: int = 24
    # The stages whose queries pass the data gate (see "Data gate" in `memory.recall`).
    data_gate: tuple[RecallStage, ...] = ("seed", "reflection")
    # Seed stage: a lesson quoting a data symbol the task's own data holds is a candidate
    # from this cosine on, without the seed gate, ranked after those that passed the cut;
    # None: like any other lesson. See "Shared data symbols" in `memory.recall`.
    seed_data_cut: float | None = 0.0


def use_record(lesson: Lesson) -> float:
    """Smoothed helped-vs-misled signal in (-1, 1); 0 for a lesson never used."""
    return (lesson.helped - lesson.misled) / (lesson.helped + lesson.misled + 2)


def fused(cosine: float, bm25: float, *, cut: float, top_cosine: float, top_bm25: float) -> float:
    """Relative score fusion: the mean of the cosine's place between the cut and the best
    candidate's, and the BM25 score's share of the best one; 1 = first in both."""
    dense = (cosine - cut) / (top_cosine - cut) if top_cosine > cut else 1.0
    lexical = bm25 / top_bm25 if top_bm25 > 0 else 0.0
    return (dense + lexical) / 2


@dataclass(frozen=True)
class ScoreTerms:
    """The terms `score` adds to a lesson's relevance (the penalty is subtracted)."""

    use: float
    recency: float
    validated_bonus: float
    flagged_penalty: float

    @property
    def total(self) -> float:
        return self.use + self.recency + self.validated_bonus - self.flagged_penalty


def score_terms(
    lesson: Lesson, config: RecallConfig, now: datetime, *, flagged: bool = False
) -> ScoreTerms:
    """Everything in the re-ranking formula but relevance (see the module docstring)."""
    age_days = max(0.0, (now - lesson.updated_at).total_seconds() / 86400)
    return ScoreTerms(
        use=config.use_weight * use_record(lesson),
        recency=config.recency_weight * 0.5 ** (age_days / config.recency_half_life_days),
        validated_bonus=config.validated_bonus if lesson.status == "validated" else 0.0,
        flagged_penalty=config.flagged_penalty if flagged else 0.0,
    )


def score(
    relevance: float, lesson: Lesson, config: RecallConfig, now: datetime, *, flagged: bool = False
) -> float:
    """The re-ranking formula of the module docstring."""
    return float(relevance + score_terms(lesson, config, now, flagged=flagged).total)
