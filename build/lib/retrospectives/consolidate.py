"""The consolidation pass: cluster lessons by root cause, write canonical lessons, reversibly.

    lease (SQL, expiry, CAS) -> embed root causes of lessons without a vector (cached in SQL)
    -> per (scope, error type) with new lessons: leader clustering (retrospectives.cluster)
    -> per cluster: canonical text (model or fallback) -> one SQL transaction (memory.merges)
    -> index update -> mark the bucket's new lessons processed -> release the lease

Incremental: only lessons no pass has processed are clustered, against the lessons that
stand for earlier clusters. Idempotent: a second pass finds nothing new. Resumable: every
merge commits on its own and a lesson is marked processed only with its merge or after its
bucket, so a crash loses at most the cluster in flight. Undo is exact (before-snapshots),
and an undone merge is not redone by the next incremental pass (its lessons stay processed).
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy import update
from sqlmodel import col, select

from agent.llm.base import LLM, Usage
from memory import lease as leases
from memory import lift as lift_tables
from memory import merges
from memory.dedup import dedup_text, index_text, pack
from memory.index import lesson_metadata
from memory.schema import INDEX_DONE, LessonRow, to_lesson
from memory.store import Memory
from memory.types import Lesson
from retrospectives.canonical import write_canonical
from retrospectives.cluster import Matrix, leader_clusters
from retrospectives.errors import ConsolidationBusyError
from retrospectives.vectors import Bucket, bucket_vectors, embed_pending, mark_processed
from retrospectives.vectors import buckets as vector_buckets

LEASE_NAME = "consolidation"
StopCheck = Callable[[], bool]


class ConsolidationConfig(BaseModel):
    """Knobs of a pass. Thresholds are cosines of all-MiniLM-L6-v2 embeddings."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # Root causes at least this similar are one cluster (tests/retro/test_consolidate_quality).
    threshold: float = Field(default=0.6, gt=0, le=1)
    # Fixes at least this similar count as one fix inside a merged lesson.
    fix_threshold: float = Field(default=0.8, gt=0, le=1)
    lease_ttl_s: float = Field(default=300.0, gt=0)
    batch: int = Field(default=512, ge=1)
    # Bounds the merge prompt; larger clusters fold in over several passes.
    max_cluster: int = Field(default=24, ge=2)
    # Re-cluster every active lesson, not only new ones (after a threshold change).
    full: bool = False


class ConsolidationReport(BaseModel):
    """What a pass did and what each phase cost."""

    model_config = ConfigDict(frozen=True)

    holder: str
    full: bool
    embedded: int
    new_lessons: int
    buckets: int
    clusters: int
    merges: tuple[merges.MergeRecord, ...]
    conflicts: int  # clusters skipped because a lesson changed meanwhile (retried next pass)
    fallbacks: int  # canonicals written without (or despite) the model
    stopped_early: bool
    seconds_embed: float
    seconds_cluster: float
    seconds_write: float
    usage: Usage = Field(default_factory=Usage)


def default_holder() -> str:
    """host:pid:random, unique per consolidator instance."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


def ensure_tables(memory: Memory) -> None:
    """Create the tables of merges, leases and review flags (idempotent)."""
    merges.ensure_tables(memory.db)
    leases.ensure_tables(memory.db)
    lift_tables.ensure_tables(memory.db)


@dataclass
class _Tally:
    held: leases.Lease
    records: list[merges.MergeRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    new: int = 0
    clusters: int = 0
    conflicts: int = 0
    fallbacks: int = 0
    stopped: bool = False
    t_cluster: float = 0.0
    t_write: float = 0.0
    renewed_at: float = field(default_factory=time.monotonic)
    # Canonicals written to SQL whose index entries are still to be written (per bucket).
    to_index: list[tuple[LessonRow, list[float], tuple[str, ...]]] = field(default_factory=list)


class Consolidator:
    """Runs consolidation passes over one `Memory`; the LLM is optional."""

    def __init__(
        self,
        memory: Memory,
        *,
        llm: LLM | None,
        config: ConsolidationConfig | None = None,
        holder: str | None = None,
    ) -> None:
        self.memory = memory
        self.llm = llm
        self.config = config or ConsolidationConfig()
        self.holder = holder or default_holder()
        ensure_tables(memory)

    # -- embeddings ----------------------------------------------------------------------

    # -- the pass ------------------------------------------------------------------------

    def run(self, *, should_stop: StopCheck | None = None) -> ConsolidationReport:
        """One pass under the lease; `ConsolidationBusyError` if another pass holds it."""
        db = self.memory.db
        held = leases.acquire(db, LEASE_NAME, self.holder, self.config.lease_ttl_s)
        if held is None:
            current = leases.holder_of(db, LEASE_NAME)
            who = current.holder if current else "another process"
            raise ConsolidationBusyError(f"a consolidation pass is running ({who}); try later")
        try:
            return self._run(held, should_stop or (lambda: False))
        finally:
            leases.release(db, held)

    def _run(self, held: leases.Lease, should_stop: StopCheck) -> ConsolidationReport:
        t0 = time.perf_counter()
        embedded = embed_pending(self.memory)
        t_embed = time.perf_counter() - t0
        buckets = vector_buckets(self.memory, full=self.config.full)
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
            stopped_early=tally.stopped,
            seconds_embed=t_embed,
            seconds_cluster=tally.t_cluster,
            seconds_write=tally.t_write,
            usage=tally.usage,
        )

    def _bucket(self, bucket: Bucket, tally: _Tally, should_stop: StopCheck) -> None:
        t1 = time.perf_counter()
        vectors = bucket_vectors(self.memory, bucket, full=self.config.full)
        clusters = leader_clusters(
            vectors.old_ids,
            vectors.old,
            vectors.new_ids,
            vectors.new,
            threshold=self.config.threshold,
            batch=self.config.batch,
        )
        tally.t_cluster += time.perf_counter() - t1
        tally.new += len(vectors.new_ids)
        t2 = time.perf_counter()
        # Lessons of a skipped (conflict) or deferred (too large) cluster stay unprocessed,
        # so the next pass retries them.
        retry: set[str] = set()
        cap = self.config.max_cluster - 1
        fix_vectors = self._fix_vectors([i for c in clusters for i in (c.leader, *c.members[:cap])])
        for cluster in clusters:
            if should_stop():
                tally.stopped = True
                self._flush_index(tally)
                return
            if time.monotonic() - tally.renewed_at > self.config.lease_ttl_s / 3:
                tally.held = leases.renew(self.memory.db, tally.held, self.config.lease_ttl_s)
                tally.renewed_at = time.monotonic()
            tally.clusters += 1
            taken = cluster.members[:cap]
            retry.update(cluster.members[len(taken) :])
            outcome = self._merge(
                bucket, cluster.leader, taken, vectors.vector(cluster.leader), fix_vectors, tally
            )
            if outcome is None:
                tally.conflicts += 1
                retry.update(taken)
                continue
            record, cost, fallback = outcome
            tally.records.append(record)
            tally.usage += cost
            tally.fallbacks += int(fallback)
        self._flush_index(tally)
        mark_processed(self.memory, [i for i in vectors.new_ids if i not in retry])
        tally.t_write += time.perf_counter() - t2

    def _merge(
        self,
        bucket: Bucket,
        leader_id: str,
        members: Sequence[str],
        leader_vec: Matrix,
        fix_vectors: Mapping[str, Sequence[float]],
        tally: _Tally,
    ) -> tuple[merges.MergeRecord, Usage, bool] | None:
        ids = [leader_id, *members]
        lessons = self._load(ids)
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
        dedup_vec, index_vec = self.memory.embedder.embed(
            [dedup_text(text.root_cause, text.fix), index_text(text.symptom, text.root_cause)]
        )
        # A leader that is already a canonical absorbs the newcomers in place.
        fold = bool(leader.merged_from)
        plan = merges.MergePlan(
            scope=bucket[0],
            error_type=bucket[1],
            canonical_id=leader.id if fold else None,
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
            dedup_vector=pack(dedup_vec),
            embedding_model=self.memory.embedder.model_id,
            root_vector=pack(leader_vec.tolist()),
            written_by=canonical.written_by,
        )
        applied = merges.apply_merge(self.memory.db, plan)
        if applied is None:
            return None
        record, row = applied
        tally.to_index.append((row, index_vec, plan.member_ids))
        return record, canonical.usage, canonical.written_by != "model"

    def _fix_vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """Fix embeddings of every lesson about to be merged in a bucket, in one batch."""
        fixes: dict[str, str] = {}
        for start in range(0, len(ids), 900):
            chunk = list(ids[start : start + 900])
            with self.memory.db.read() as session:
                rows = session.exec(
                    select(LessonRow.id, LessonRow.fix).where(col(LessonRow.id).in_(chunk))
                ).all()
            fixes.update(dict(rows))
        keys = list(fixes)
        return dict(zip(keys, self.memory.embedder.embed([fixes[k] for k in keys]), strict=True))

    def _load(self, ids: Sequence[str]) -> list[Lesson]:
        with self.memory.db.read() as session:
            rows = session.exec(select(LessonRow).where(col(LessonRow.id).in_(list(ids)))).all()
            found = {r.id: to_lesson(r) for r in rows}
        return [found[i] for i in ids if i in found and found[i].status in merges.ACTIVE]

    def _flush_index(self, tally: _Tally) -> None:
        """Write the bucket's canonicals to the index in one batch, then mark them indexed.

        Until then they are "pending" in SQL (recall reads SQL status, so nothing wrong is
        recalled meanwhile), and `Memory.check(repair=True)` finishes it after a crash.
        """
        if not tally.to_index:
            return
        rows = [row for row, _, _ in tally.to_index]
        index = self.memory.index
        index.upsert(
            [r.id for r in rows],
            [vec for _, vec, _ in tally.to_index],
            [index_text(r.symptom, r.root_cause) for r in rows],
            [lesson_metadata(r.scope, r.error_type, r.status, r.embedding_model) for r in rows],
        )
        members = [(r, m) for r, _, ms in tally.to_index for m in ms]
        index.update_metadata(
            [m for _, m in members],
            [
                lesson_metadata(r.scope, r.error_type, "merged", r.embedding_model)
                for r, _ in members
            ],
        )
        with self.memory.db.write() as session:
            session.execute(
                update(LessonRow)
                .where(col(LessonRow.id).in_([r.id for r in rows]))
                .values(index_state=INDEX_DONE)
            )
        tally.to_index.clear()

    # -- undo ----------------------------------------------------------------------------

    def undo(self, merge_id: str) -> merges.MergeRecord:
        """Restore the lessons of a merge exactly; the index follows."""
        record, restored, deleted = merges.undo_merge(self.memory.db, merge_id)
        index = self.memory.index
        if deleted is not None:
            index.delete([deleted])
        for row in restored:
            meta = lesson_metadata(row.scope, row.error_type, row.status, row.embedding_model)
            if row.id == record.canonical_id:
                (vec,) = self.memory.embedder.embed([index_text(row.symptom, row.root_cause)])
                index.upsert([row.id], [vec], [index_text(row.symptom, row.root_cause)], [meta])
            else:
                index.update_metadata([row.id], [meta])
        return record


def consolidate(
    memory: Memory, *, llm: LLM | None, config: ConsolidationConfig | None = None
) -> ConsolidationReport:
    """One consolidation pass (see `Consolidator`)."""
    return Consolidator(memory, llm=llm, config=config).run()


def undo(memory: Memory, merge_id: str) -> merges.MergeRecord:
    """Undo one merge exactly (`MergeConflictError` if a later merge built on it)."""
    return Consolidator(memory, llm=None).undo(merge_id)
