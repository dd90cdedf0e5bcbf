"""The consolidation pass: cluster lessons by root cause, write canonical lessons, reversibly.

    lease (Memory.acquire_lease) -> embed root causes of lessons without a vector (cached by
    the memory) -> per scope with new lessons, across error types: average linkage on
    root-cause vector + word overlap (retrospectives.link, on a neighbour graph from
    retrospectives.neighbours); per (scope, error type) leader clustering
    (retrospectives.cluster) with `across_error_types=False` -> per cluster: canonical text
    (model or fallback) -> a merge plan -> Memory.apply_merges (a batch of plans in one SQL
    transaction per scope, each plan compare-and-set, then the index) -> mark the bucket's
    new lessons processed -> release the lease

This module decides (what clusters, what the canonical says); every write goes through
`Memory`, the only writer of lessons.

Incremental: only lessons no pass has processed are clustered, against the lessons that
stand for earlier clusters. Idempotent: a second pass finds nothing new. Resumable: every
batch of merges (`write_batch`) commits on its own and a lesson is marked processed only
with its merge or after its bucket, so a crash loses at most the batch in flight. Undo is
exact (before-snapshots), and an undone merge is not redone by the next incremental pass
(its lessons stay processed).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agent.llm.base import LLM, Usage
from memory import Bucket, BucketVectors, Lease, Lesson, MergePlan, MergeRecord
from memory.blas import one_blas_thread
from memory.store import Memory
from memory.types import ACTIVE
from retrospectives.canonical import write_canonical
from retrospectives.cluster import Cluster, leader_clusters
from retrospectives.errors import ConsolidationBusyError
from retrospectives.judge import ModelPairJudge, PairJudge
from retrospectives.link import LinkConfig, linked_clusters

LEASE_NAME = "consolidation"
StopCheck = Callable[[], bool]


class ConsolidationConfig(BaseModel):
    """Knobs of a pass. Thresholds are cosines of all-MiniLM-L6-v2 embeddings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # One root cause shows up under several error types: cluster each scope as a whole
    # (retrospectives.link). False: per (scope, error type), leader clustering on `threshold`.
    across_error_types: bool = True
    # Across types: average pair score (cosine + word overlap, retrospectives.link) to join.
    link_threshold: float = Field(default=LinkConfig.threshold, gt=0, le=1)
    lexical_weight: float = Field(default=LinkConfig.lexical_weight, ge=0, le=1)
    # Across types, with a model (or a judge given to the Consolidator): pairs scoring in
    # [band_low, band_high) are asked whether they share a root cause (retrospectives.judge).
    judge_uncertain: bool = False
    band_low: float = Field(default=LinkConfig.band_low, ge=0, le=1)
    band_high: float = Field(default=LinkConfig.band_high, ge=0, le=1)
    judge_per_lesson: int = Field(default=LinkConfig.judge_per_lesson, ge=1)
    max_judged: int = Field(default=LinkConfig.max_judged, ge=1)
    judged_same: float = Field(default=LinkConfig.judged_same, ge=0, le=1)
    # Per type: root causes at least this similar are one cluster.
    threshold: float = Field(default=0.6, gt=0, le=1)
    # Fixes at least this similar count as one fix inside a merged lesson.
    fix_threshold: float = Field(default=0.8, gt=0, le=1)
    lease_ttl_s: float = Field(default=300.0, gt=0)
    batch: int = Field(default=512, ge=1)
    # Bounds the merge prompt; larger clusters fold in over several passes.
    max_cluster: int = Field(default=24, ge=2)
    # Re-cluster every active lesson, not only new ones (after a threshold change).
    full: bool = False
    # Deterministic merges written per batch, one SQL transaction per scope and one index
    # write (a model-written merge is written at once). Chroma costs ~0.2 s per call here.
    write_batch: int = Field(default=256, ge=1)


class ConsolidationReport(BaseModel):
    """What a pass did and what each phase cost."""

    model_config = ConfigDict(frozen=True)

    holder: str
    full: bool
    embedded: int
    new_lessons: int
    buckets: int
    clusters: int
    merges: tuple[MergeRecord, ...]
    conflicts: int  # clusters skipped because a lesson changed meanwhile (retried next pass)
    fallbacks: int  # canonicals written without (or despite) the model
    judged: int = 0  # uncertain pairs asked of the judge
    stopped_early: bool
    seconds_embed: float
    seconds_cluster: float
    seconds_write: float
    usage: Usage = Field(default_factory=Usage)


def default_holder() -> str:
    """host:pid:random, unique per consolidator instance."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


@dataclass
class _Tally:
    held: Lease
    records: list[MergeRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    new: int = 0
    clusters: int = 0
    conflicts: int = 0
    fallbacks: int = 0
    stopped: bool = False
    t_cluster: float = 0.0
    t_write: float = 0.0
    renewed_at: float = field(default_factory=time.monotonic)
    # Merges planned but not yet written, with their cost and whether the model was bypassed.
    planned: list[tuple[MergePlan, Usage, bool]] = field(default_factory=list)


class Consolidator:
    """Runs consolidation passes over one `Memory`; the LLM is optional."""

    def __init__(
        self,
        memory: Memory,
        *,
        llm: LLM | None,
        config: ConsolidationConfig | None = None,
        holder: str | None = None,
        judge: PairJudge | None = None,
    ) -> None:
        """`judge`: asked about uncertain pairs; by default the model's, when
        `config.judge_uncertain` and there is a model, else none."""
        self.memory = memory
        self.llm = llm
        self.config = config or ConsolidationConfig()
        self.holder = holder or default_holder()
        if judge is None and llm is not None and self.config.judge_uncertain:
            judge = ModelPairJudge(llm)
        self.judge = judge

    # -- the pass ------------------------------------------------------------------------

    def run(self, *, should_stop: StopCheck | None = None) -> ConsolidationReport:
        """One pass under the lease; `ConsolidationBusyError` if another pass holds it."""
        held = self.memory.acquire_lease(LEASE_NAME, self.holder, self.config.lease_ttl_s)
        if held is None:
            current = self.memory.lease_holder(LEASE_NAME)
            if current is None:
                raise ConsolidationBusyError("a consolidation pass is running; try later")
            # In UTC whatever the database's session time zone (PostgreSQL's timestamptz).
            until = current.expires_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
            raise ConsolidationBusyError(
                f"a consolidation pass is running ({current.holder}); its lease runs until "
                f"{until} unless renewed: try after that (a pass that was killed holds it "
                "until then)"
            )
        try:
            return self._run(held, should_stop or (lambda: False))
        finally:
            self.memory.release_lease(held)

    def _run(self, held: Lease, should_stop: StopCheck) -> ConsolidationReport:
        asked, judge_usage = self._judge_state()
        t0 = time.perf_counter()
        embedded = self.memory.embed_root_causes()
        t_embed = time.perf_counter() - t0
        buckets = self.memory.consolidation_buckets(
            full=self.config.full, across_types=self.config.across_error_types
        )
        tally = _Tally(held=held)
        for bucket in buckets:
            if should_stop():
                tally.stopped = True
                break
            self._bucket(bucket, tally, should_stop)
            if tally.stopped:
                break
        return ConsolidationReport(
            holder=self.holder,
            full=self.config.full,
            embedded=embedded,
            new_lessons=tally.new,
            buckets=len(buckets),
            clusters=tally.clusters,
            merges=tuple(tally.records),
            conflicts=tally.conflicts,
            fallbacks=tally.fallbacks,
            judged=self._judge_state()[0] - asked,
            stopped_early=tally.stopped,
            seconds_embed=t_embed,
            seconds_cluster=tally.t_cluster,
            seconds_write=tally.t_write,
            usage=tally.usage + _spent(self._judge_state()[1], judge_usage),
        )

    def _judge_state(self) -> tuple[int, Usage]:
        if self.judge is None:
            return 0, Usage()
        return self.judge.asked, self.judge.usage

    def _bucket(self, bucket: Bucket, tally: _Tally, should_stop: StopCheck) -> None:
        t1 = time.perf_counter()
        vectors = self.memory.bucket_vectors(bucket, full=self.config.full)
        clusters = self._clusters(vectors)
        tally.t_cluster += time.perf_counter() - t1
        tally.new += len(vectors.new_ids)
        t2 = time.perf_counter()
        # Lessons of a skipped (conflict) or deferred (too large) cluster stay unprocessed,
        # so the next pass retries them.
        retry: set[str] = set()
        cap = self.config.max_cluster - 1
        wanted = [i for c in clusters for i in (c.leader, *c.members[:cap])]
        fix_vectors = self.memory.fix_vectors(wanted)
        # One read for every lesson the bucket's merges touch (the write re-checks them).
        known = {m.id: m for m in self.memory.get_many(wanted)}
        for cluster in clusters:
            if should_stop():
                tally.stopped = True
                break
            if time.monotonic() - tally.renewed_at > self.config.lease_ttl_s / 3:
                tally.held = self.memory.renew_lease(tally.held, self.config.lease_ttl_s)
                tally.renewed_at = time.monotonic()
            tally.clusters += 1
            taken = cluster.members[:cap]
            retry.update(cluster.members[len(taken) :])
            planned = self._plan(bucket, cluster.leader, taken, known, fix_vectors)
            if planned is None:
                tally.conflicts += 1
                retry.update(taken)
                continue
            tally.planned.append(planned)
            if self.llm is not None or len(tally.planned) >= self.config.write_batch:
                retry.update(self._write(tally))
        retry.update(self._write(tally))
        if not tally.stopped:
            self.memory.mark_processed([i for i in vectors.new_ids if i not in retry])
        tally.t_write += time.perf_counter() - t2

    def _clusters(self, vectors: BucketVectors) -> list[Cluster]:
        """The bucket's clusters: across error types (default) or leader clustering."""
        # Many matrix products: on one BLAS thread (memory.blas says why).
        with one_blas_thread():
            return self._cluster(vectors)

    def _cluster(self, vectors: BucketVectors) -> list[Cluster]:
        cfg = self.config
        if not cfg.across_error_types:
            return leader_clusters(
                vectors.old_ids,
                vectors.old,
                vectors.new_ids,
                vectors.new,
                threshold=cfg.threshold,
                batch=cfg.batch,
            )
        if not vectors.new_ids:
            return []
        ids = [*vectors.old_ids, *vectors.new_ids]
        return linked_clusters(
            ids,
            [True] * len(vectors.old_ids) + [False] * len(vectors.new_ids),
            np.vstack([vectors.old, vectors.new]),
            self.memory.cause_texts(ids),
            LinkConfig(
                threshold=cfg.link_threshold,
                lexical_weight=cfg.lexical_weight,
                max_size=cfg.max_cluster,
                batch=cfg.batch,
                band_low=cfg.band_low,
                band_high=cfg.band_high,
                judge_per_lesson=cfg.judge_per_lesson,
                max_judged=cfg.max_judged,
                judged_same=cfg.judged_same,
            ),
            self.judge,
        )

    def _plan(
        self,
        bucket: Bucket,
        leader_id: str,
        members: Sequence[str],
        known: Mapping[str, Lesson],
        fix_vectors: Mapping[str, Sequence[float]],
    ) -> tuple[MergePlan, Usage, bool] | None:
        ids = [leader_id, *members]
        lessons = [known[i] for i in ids if i in known and known[i].status in ACTIVE]
        if len(lessons) != len(ids):
            return None
        leader = lessons[0]
        canonical = write_canonical(
            lessons,
            llm=self.llm,
            fix_vectors=fix_vectors,
            fix_threshold=self.config.fix_threshold,
        )
        text = canonical.text
        # A leader that is already a canonical absorbs the newcomers in place.
        fold = bool(leader.merged_from)
        plan = MergePlan(
            scope=bucket[0],
            # Across types the canonical keeps its leader's type (members keep theirs).
            error_type=leader.error_type,
            canonical_id=leader.id if fold else None,
            leader_id=leader.id,
            member_ids=tuple(m.id for m in (lessons[1:] if fold else lessons)),
            expected={m.id: m.updated_at for m in lessons},
            symptom=text.symptom,
            root_cause=text.root_cause,
            fix=text.fix,
            applies_when=text.applies_when,
            status=canonical.status,
            seen=canonical.seen,
            recalled=canonical.recalled,
            helped=canonical.helped,
            misled=canonical.misled,
            evidence=canonical.evidence,
            merged_from=canonical.merged_from,
            written_by=canonical.written_by,
        )
        return plan, canonical.usage, canonical.written_by != "model"

    def _write(self, tally: _Tally) -> set[str]:
        """Write the planned merges (SQL, then the index); the lessons of conflicting ones."""
        planned, tally.planned = tally.planned, []
        records = self.memory.apply_merges([plan for plan, _, _ in planned])
        conflicted: set[str] = set()
        for (plan, cost, fallback), record in zip(planned, records, strict=True):
            if record is None:
                tally.conflicts += 1
                conflicted.update(i for i in plan.member_ids if i != plan.leader_id)
                continue
            tally.records.append(record)
            tally.usage += cost
            tally.fallbacks += int(fallback)
        return conflicted

    # -- undo ----------------------------------------------------------------------------

    def undo(self, merge_id: str) -> MergeRecord:
        """Restore the lessons of a merge exactly; the index follows."""
        return self.memory.undo_merge(merge_id)


def _spent(now: Usage, before: Usage) -> Usage:
    return Usage(
        prompt_tokens=now.prompt_tokens - before.prompt_tokens,
        completion_tokens=now.completion_tokens - before.completion_tokens,
        calls=now.calls - before.calls,
    )


def consolidate(
    memory: Memory,
    *,
    llm: LLM | None,
    config: ConsolidationConfig | None = None,
    judge: PairJudge | None = None,
) -> ConsolidationReport:
    """One consolidation pass (see `Consolidator`)."""
    return Consolidator(memory, llm=llm, config=config, judge=judge).run()


def undo(memory: Memory, merge_id: str) -> MergeRecord:
    """Undo one merge exactly (`MergeConflictError` if a later merge built on it)."""
    return Consolidator(memory, llm=None).undo(merge_id)
