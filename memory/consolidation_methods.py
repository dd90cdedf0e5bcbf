"""The consolidation side of `Memory`: root-cause vectors, merges, the lease, lift and flags.

What the periodic consolidation job (`retrospectives.consolidate`), the lift pass
(`retrospectives.lift`) and curators use, kept apart from the store's everyday reading and
writing (`memory.store`). `Memory` inherits these methods; nothing else should.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory import lease as leases
from memory import lift, merge_write, merges, vectors
from memory.db import Database
from memory.embeddings import Embedder
from memory.index import LessonIndex
from memory.lease import Lease
from memory.lift import LessonLift, ReviewFlag
from memory.merges import MergePlan, MergeRecord
from memory.types import Lesson
from memory.vectors import Bucket, BucketVectors
from memory.write import AfterCommitHook


class ConsolidationMethods:
    """`Memory`'s methods for consolidation, merges, leases, lift and review flags."""

    # Set by `Memory.__init__`.
    _db: Database
    _index: LessonIndex
    _embedder: Embedder
    _after_sql_commit: AfterCommitHook | None

    # -- consolidation: root-cause vectors, merges, the lease ---------------------------

    def embed_root_causes(self, *, page: int = 2048) -> int:
        """Cache the root-cause vector of every active lesson that has none; returns how many."""
        return vectors.embed_pending(self._db, self._embedder, page=page)

    def consolidation_buckets(
        self, *, full: bool = False, across_types: bool = False
    ) -> list[Bucket]:
        """(scope, error type) pairs with active lessons no pass processed (all with `full`);
        `across_types`: one `(scope, ALL_TYPES)` bucket per such scope."""
        return vectors.buckets(self._db, full=full, across_types=across_types)

    def bucket_vectors(self, bucket: Bucket, *, full: bool = False) -> BucketVectors:
        """The cached root-cause vectors of one bucket (`(scope, ALL_TYPES)`: every error type
        of the scope), split into processed and new."""
        return vectors.bucket_vectors(self._db, self._embedder, bucket, full=full)

    def cause_texts(self, lesson_ids: Sequence[str]) -> list[str]:
        """Root cause + fix of each lesson, in the order of `lesson_ids`."""
        return vectors.cause_texts(self._db, lesson_ids)

    def unprocessed_count(self) -> int:
        """Active lessons no consolidation pass has processed yet."""
        return vectors.unprocessed_count(self._db)

    def mark_processed(self, lesson_ids: Sequence[str]) -> None:
        """Record that a consolidation pass has clustered these lessons."""
        vectors.mark_processed(self._db, lesson_ids)

    def fix_vectors(self, lesson_ids: Sequence[str]) -> dict[str, list[float]]:
        """Embeddings of these lessons' fixes, by id (one batch)."""
        return vectors.fix_vectors(self._db, self._embedder, lesson_ids)

    def apply_merge(self, plan: MergePlan) -> MergeRecord | None:
        """Write one merge (SQL, then the index); None if a lesson changed since the plan."""
        return self.apply_merges([plan])[0]

    def apply_merges(self, plans: Sequence[MergePlan]) -> list[MergeRecord | None]:
        """`apply_merge` for several plans: one SQL transaction per scope, one index batch."""
        return merge_write.apply_merges(
            self._db, self._index, self._embedder, plans, after_commit=self._after_sql_commit
        )

    def undo_merge(self, merge_id: str) -> MergeRecord:
        """Restore the lessons of a merge exactly (`MergeConflictError` if built upon)."""
        return merges.undo_merge(
            self._db, self._index, self._embedder, merge_id, after_commit=self._after_sql_commit
        )

    def list_merges(self, *, limit: int = 100) -> list[MergeRecord]:
        """Merge records, newest first."""
        return merges.list_merges(self._db, limit=limit)

    def get_merge(self, merge_id: str) -> MergeRecord:
        """One merge record; `MergeNotFoundError` if there is none."""
        return merges.get_merge(self._db, merge_id)

    def merge_before(self, merge_id: str) -> list[Lesson]:
        """The lessons as a merge found them (its undo snapshots), canonical (if any) first."""
        return merges.merge_before(self._db, merge_id)

    def merges_of(self, lesson_id: str) -> list[MergeRecord]:
        """Merges into this lesson or into its canonical that took it in, newest first."""
        return merges.merges_of(self._db, lesson_id)

    def acquire_lease(self, name: str, holder: str, ttl_s: float) -> Lease | None:
        """Take the named lease if free, expired or ours; None if someone else holds it."""
        return leases.acquire(self._db, name, holder, ttl_s)

    def renew_lease(self, lease: Lease, ttl_s: float) -> Lease:
        """Extend a held lease; `LeaseLostError` if another holder took it over."""
        return leases.renew(self._db, lease, ttl_s)

    def release_lease(self, lease: Lease) -> None:
        """Give a lease up (no-op if it was taken over)."""
        leases.release(self._db, lease)

    def lease_holder(self, name: str) -> Lease | None:
        """The current unexpired holder of the named lease, if any."""
        return leases.holder_of(self._db, name)

    # -- lift and review flags ---------------------------------------------------------

    def lesson_lift(self, lesson_ids: Sequence[str] | None = None) -> list[LessonLift]:
        """Lift statistics of these lessons (default: every lesson not merged)."""
        return lift.lesson_lift(self._db, lesson_ids)

    def flag_for_review(self, lesson_id: str, reason: str) -> bool:
        """Flag a lesson for a person to review; False if it was flagged already."""
        return lift.flag(self._db, lesson_id, reason)

    def clear_review_flag(self, lesson_id: str) -> bool:
        """Remove a review flag (a person decided); False if there was none."""
        return lift.clear_flag(self._db, lesson_id)

    def review_flags(self) -> list[ReviewFlag]:
        """Open review flags, oldest first."""
        return lift.flags(self._db)

    def flagged_ids(self, lesson_ids: Sequence[str]) -> set[str]:
        """Which of `lesson_ids` are flagged for review."""
        return lift.flagged_ids(self._db, lesson_ids)
