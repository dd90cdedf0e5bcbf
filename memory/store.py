"""`Memory`: the facade over SQL (truth), the vector index (derived) and the embedder.

```python
memory = Memory.open("~/.lessonloop/memory", embedder=MiniLMEmbedder())
memory.add(LessonDraft(error_type="runtime_error", symptom=..., root_cause=..., fix=...))
hits = memory.recall(LessonQuery(text="ValueError: could not convert '$1,200' to float"))
```

Tests and scripted examples use `Memory.in_memory()` (SQLite in memory, ephemeral chromadb,
`HashEmbedder`).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from memory import edit, migrate, queries, runs, sync, wiring
from memory.consolidation_methods import ConsolidationMethods
from memory.db import Database
from memory.embeddings import Embedder, HashEmbedder
from memory.errors import EmbeddingMismatchError, MemoryConfigError
from memory.index import LessonIndex, ephemeral_client
from memory.lexicalindex import LexicalIndex
from memory.ranking import RecallConfig
from memory.recall import recall
from memory.sync import Progress
from memory.types import (
    AddResult,
    DriftReport,
    Lesson,
    LessonDraft,
    LessonFilter,
    LessonQuery,
    LessonStatus,
    LessonUse,
    Page,
    RecallStage,
    Run,
    ScoredLesson,
)
from memory.write import AfterCommitHook, LessonWriter, WriteConfig

# Thresholds calibrated on all-MiniLM-L6-v2 with the corpus in tests/memory/memory_corpus.py
# (12 lessons, 8 related and 10 unrelated queries, 4 paraphrases; see test_memory_minilm.py):
# - query vs its lesson (symptom + root cause): 0.56 .. 0.86; unrelated queries: <= 0.31.
DEFAULT_MIN_SIMILARITY = 0.40
# - root cause + fix of the same lesson reworded: 0.83 .. 0.95 (one loose rewording: 0.62,
#   left to consolidation); two different lessons: <= 0.66 (same error type: <= 0.58).
DEFAULT_DEDUP_SIMILARITY = 0.80
# - a draft from a run that was given the lesson: the prior that it restates it is high, so
#   the guard is looser than dedup, still well above different lessons (<= 0.66).
DEFAULT_LOOP_SIMILARITY = 0.75


class Memory(ConsolidationMethods):
    """Typed lessons stored durably (SQL) and found by meaning (vector index).

    Implements `memory.types.Recall`. Every public method returns frozen models from
    `memory.types`; SQL rows never escape. The methods consolidation, lift and curation use
    (merges, leases, root-cause vectors, review flags) are in `memory.consolidation_methods`.
    """

    def __init__(
        self,
        db: Database,
        index: LessonIndex,
        embedder: Embedder,
        *,
        recall_config: RecallConfig | None = None,
        write_config: WriteConfig | None = None,
        after_sql_commit: AfterCommitHook | None = None,
        drop_index_on_close: bool = False,
    ) -> None:
        self._db = db
        self._index = index
        self._embedder = embedder
        self.recall_config = recall_config or RecallConfig(min_similarity=DEFAULT_MIN_SIMILARITY)
        self.write_config = write_config or WriteConfig(
            dedup_similarity=DEFAULT_DEDUP_SIMILARITY, loop_similarity=DEFAULT_LOOP_SIMILARITY
        )
        self._writer = LessonWriter(db, index, embedder, self.write_config, after_sql_commit)
        # Fault-injection point for tests: runs after a SQL commit, before the index write.
        self._after_sql_commit = after_sql_commit
        self._lexical = LexicalIndex(db)
        self._drop_index_on_close = drop_index_on_close
        # Set by `open`: the store was built with another embedder, and re-embedded as it
        # opened (`reembed=True`); a caller then need not do it again.
        self.reembedded_on_open = False

    # -- construction ------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        url_or_path: str | os.PathLike[str],
        *,
        embedder: Embedder,
        chroma_url: str | None = None,
        chroma_path: str | Path | None = None,
        collection: str = "lessons",
        min_similarity: float = DEFAULT_MIN_SIMILARITY,
        dedup_similarity: float = DEFAULT_DEDUP_SIMILARITY,
        loop_similarity: float = DEFAULT_LOOP_SIMILARITY,
        reembed: bool = False,
        after_sql_commit: AfterCommitHook | None = None,
    ) -> Memory:
        """Open (or create) a store.

        `url_or_path`: a directory (SQLite file + chroma dir inside), an `.sqlite3`/`.db` file
        (chroma dir beside it), or an SQLAlchemy URL (`postgresql://...`). `chroma_url`
        (`http://host:port`) uses a Chroma server instead of the embedded index, which is what
        several processes sharing one store need. `reembed=True` accepts a different embedding
        model than the store was built with and re-embeds every lesson.
        """
        target = os.fspath(url_or_path)
        if not target.strip():
            raise MemoryConfigError("no store given: pass a directory, a .sqlite3 file or a URL")
        db, client = wiring.connect(target, chroma_url=chroma_url, chroma_path=chroma_path)
        try:
            memory = cls._assemble(
                db,
                client,
                embedder,
                collection=collection,
                reembed=reembed,
                recall_config=RecallConfig(min_similarity=min_similarity),
                write_config=WriteConfig(
                    dedup_similarity=dedup_similarity, loop_similarity=loop_similarity
                ),
                after_sql_commit=after_sql_commit,
            )
        except BaseException:
            # A refused open (model mismatch, server down) must not leak connections.
            db.dispose()
            wiring.close_client(client)
            raise
        return memory

    @classmethod
    def _assemble(
        cls,
        db: Database,
        client: Any,
        embedder: Embedder,
        *,
        collection: str,
        reembed: bool,
        recall_config: RecallConfig,
        write_config: WriteConfig,
        after_sql_commit: AfterCommitHook | None,
    ) -> Memory:
        stored = wiring.stored_model(db)
        stale = stored not in (None, (embedder.model_id, embedder.dim))
        if stale and not wiring.holds_lessons(db):
            # Nothing embedded to mix up: an empty store takes the embedder it is opened with.
            reembed = True
        if stale and not reembed:
            model, dim = stored or ("?", 0)
            raise EmbeddingMismatchError(
                f"store holds {model} (dim {dim}) embeddings but was opened with "
                f"{embedder.model_id} (dim {embedder.dim}); pass reembed=True to convert it "
                "(`lessonloop memory reindex --reembed` with the new LESSONLOOP_EMBEDDER)"
            )
        index = LessonIndex(
            client, collection, model_id=embedder.model_id, dim=embedder.dim, reset_mismatch=reembed
        )
        memory = cls(
            db,
            index,
            embedder,
            recall_config=recall_config,
            write_config=write_config,
            after_sql_commit=after_sql_commit,
        )
        if stale or index.was_reset:
            memory.reindex(reembed=True)
            memory.reembedded_on_open = True
        elif wiring.index_text_outdated(db):
            # Embedded from another text (memory.matchtext): re-embed the index documents;
            # the dedup vectors (root cause + fix) did not change.
            memory.reindex()
        wiring.save_model(db, embedder)
        return memory

    @classmethod
    def in_memory(cls, embedder: Embedder | None = None, **options: Any) -> Memory:
        """A throwaway store: SQLite in memory, ephemeral chromadb, `HashEmbedder()` default.

        `options` are `RecallConfig`/`WriteConfig` fields (e.g. `min_similarity=0.2`).
        """
        embedder = embedder if embedder is not None else HashEmbedder()
        db = Database.connect("sqlite://")
        # Ephemeral clients share one in-process store: a unique name isolates instances.
        name = f"lessons_{uuid.uuid4().hex[:12]}"
        index = LessonIndex(ephemeral_client(), name, model_id=embedder.model_id, dim=embedder.dim)
        recall_opts = {k: v for k, v in options.items() if k in RecallConfig.__dataclass_fields__}
        write_opts = {k: v for k, v in options.items() if k in WriteConfig.__dataclass_fields__}
        unknown = set(options) - set(recall_opts) - set(write_opts)
        if unknown:
            raise TypeError(f"unknown options: {', '.join(sorted(unknown))}")
        recall_opts.setdefault("min_similarity", DEFAULT_MIN_SIMILARITY)
        write_opts.setdefault("dedup_similarity", DEFAULT_DEDUP_SIMILARITY)
        write_opts.setdefault("loop_similarity", DEFAULT_LOOP_SIMILARITY)
        wiring.save_model(db, embedder)
        return cls(
            db,
            index,
            embedder,
            recall_config=RecallConfig(**recall_opts),
            write_config=WriteConfig(**write_opts),
            drop_index_on_close=True,
        )

    def close(self) -> None:
        """Release connections (and drop the collection of an `in_memory` store)."""
        if self._drop_index_on_close:
            self._index.drop()
            self._drop_index_on_close = False
        wiring.close_client(self._index.client)
        self._db.dispose()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writing -----------------------------------------------------------------------

    def add(self, draft: LessonDraft, *, run_id: str | None = None) -> AddResult:
        """Store a draft: redacted, deduplicated, or rejected if it restates an injected lesson."""
        return self._writer.add_many([draft], run_id=run_id)[0]

    def add_many(
        self, drafts: Sequence[LessonDraft], *, run_id: str | None = None
    ) -> list[AddResult]:
        """`add` for many drafts with batched embedding and index writes; results in order."""
        return self._writer.add_many(drafts, run_id=run_id)

    def update(
        self,
        lesson_id: str,
        *,
        scope: str | None = None,
        error_type: str | None = None,
        symptom: str | None = None,
        root_cause: str | None = None,
        fix: str | None = None,
        applies_when: str | None = None,
    ) -> Lesson:
        """Edit a lesson's fields (redacted like any write); re-embeds and re-indexes it."""
        given = {
            "scope": scope,
            "error_type": error_type,
            "symptom": symptom,
            "root_cause": root_cause,
            "fix": fix,
            "applies_when": applies_when,
        }
        fields = {k: v for k, v in given.items() if v is not None}
        edit.update_lesson(self._db, self._index, self._embedder, self.get(lesson_id), fields)
        return self.get(lesson_id)

    def set_status(
        self, lesson_id: str, status: LessonStatus, *, merged_into: str | None = None
    ) -> Lesson:
        """Change a lesson's status. `merged` needs `merged_into` (recorded on both sides);
        leaving `merged` undoes the merge link, so merges are reversible."""
        return edit.set_status(self._db, self._index, lesson_id, status, merged_into)

    # -- reading -----------------------------------------------------------------------

    def get(self, lesson_id: str) -> Lesson:
        """One lesson by id; `LessonNotFoundError` if there is none."""
        return queries.get(self._db, lesson_id)

    def get_many(self, lesson_ids: Sequence[str]) -> list[Lesson]:
        """The lessons of `lesson_ids` that exist, in that order (missing ids left out)."""
        return queries.get_many(self._db, lesson_ids)

    def recall(self, query: LessonQuery) -> list[ScoredLesson]:
        """Lessons relevant to `query`, best first (read-only; see `memory.recall`)."""
        return recall(
            query,
            embedder=self._embedder,
            index=self._index,
            lexical=self._lexical,
            db=self._db,
            config=self.recall_config,
        )

    def list_lessons(self, where: LessonFilter | None = None) -> Page[Lesson]:
        """A page of lessons matching the filter, with the total count."""
        return queries.list_lessons(self._db, where or LessonFilter())

    def scopes(self) -> list[str]:
        """Every scope that holds a lesson, sorted."""
        return queries.scopes(self._db)

    def error_types(self) -> list[str]:
        """Every error type of a lesson, sorted."""
        return queries.error_types(self._db)

    def bm25_scores(self, text: str, scopes: Sequence[str]) -> Mapping[str, float]:
        """Recall's BM25 score of each recallable lesson of `scopes` sharing a word with `text`."""
        return self._lexical.search(text, scopes)

    # -- runs and uses -----------------------------------------------------------------

    def record_run(
        self, run_id: str, *, task_id: str = "", goal: str = "", scope: str = "default"
    ) -> Run:
        """Register a run (idempotent)."""
        return runs.record_run(self._db, run_id, task_id=task_id, goal=goal, scope=scope)

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        """The loop put these lessons into a prompt: record the use, bump `recalled`."""
        runs.report_use(self._db, run_id, stage, lesson_ids)

    def finish_run(
        self,
        run_id: str,
        passed: bool,
        *,
        rounds: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
        misled_ids: Sequence[str] = (),
    ) -> Run:
        """Store the run's outcome; its used lessons get `helped` (passed) or `misled`, and
        `misled_ids` get `misled` whatever the outcome (the run showed they made it worse)."""
        return runs.finish_run(
            self._db,
            run_id,
            passed=passed,
            rounds=rounds,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
            misled_ids=misled_ids,
        )

    def abort_run(self, run_id: str, error: str) -> Run:
        """The run ended without an outcome (`error` says why): its lessons' uses are settled
        as "aborted", counting neither helped nor misled. A finished run is left as it is."""
        return runs.abort_run(self._db, run_id, error)

    def get_run(self, run_id: str) -> Run:
        """One run by id."""
        return runs.get_run(self._db, run_id)

    def list_runs(self, *, offset: int = 0, limit: int = 50) -> Page[Run]:
        """A page of runs, newest first, with the total count."""
        return runs.list_runs(self._db, offset=offset, limit=limit)

    def uses(self, lesson_id: str) -> list[LessonUse]:
        """Every recorded use of a lesson, oldest first."""
        return runs.uses(self._db, lesson_id)

    def schema_version(self) -> int:
        """The store's schema version (see `memory.migrate`)."""
        with self._db.read() as session:
            return migrate.stored_version(session) or 1

    # -- index maintenance -------------------------------------------------------------

    def index_lag(self) -> tuple[int, int]:
        """(lessons written but never indexed, lessons beyond the index's entry count): what
        recall may miss after a crash or a lost index directory, until `check(repair=True)`.
        Not done on open: a write in flight in another process is pending too."""
        return sync.lag(self._db, self._index)

    def check(self, repair: bool = False) -> DriftReport:
        """Compare SQL with the vector index; with `repair=True`, fix the index."""
        return sync.check(self._db, self._index, self._embedder, repair=repair)

    def reindex(self, *, reembed: bool = False, progress: Progress | None = None) -> int:
        """Rebuild the vector index from SQL; returns the number of lessons indexed."""
        if reembed:
            self._writer.pools.clear()  # the dedup vectors are rewritten
        count = sync.reindex(
            self._db, self._index, self._embedder, reembed=reembed, progress=progress
        )
        wiring.save_model(self._db, self._embedder)
        return count
