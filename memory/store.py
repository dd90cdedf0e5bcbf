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

import uuid
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import func
from sqlmodel import col, select

from memory import runs, sync
from memory.db import Database, sql_url
from memory.dedup import dedup_text, index_text, pack
from memory.embeddings import Embedder, HashEmbedder
from memory.errors import EmbeddingMismatchError, LessonNotFoundError, MemoryConfigError
from memory.errors import MemoryUsageError as _UsageError
from memory.index import LessonIndex, embedded_client, ephemeral_client, http_client
from memory.index import lesson_metadata as _meta
from memory.recall import RecallConfig, recall
from memory.redact import redact
from memory.schema import INDEX_PENDING, LessonRow, MetaRow, to_lesson, utcnow
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
_SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_TEXT_FIELDS = ("symptom", "root_cause", "fix", "applies_when")


def _locations(url_or_path: str, chroma_path: str | Path | None) -> tuple[str, Path | None]:
    """(SQL URL, embedded chroma dir) for `Memory.open`."""
    if chroma_path is not None:
        return sql_url(url_or_path), Path(chroma_path).expanduser()
    if "://" not in url_or_path:
        path = Path(url_or_path).expanduser()
        if path.suffix in _SQLITE_SUFFIXES:
            return sql_url(str(path)), path.with_suffix(".chroma")
        path.mkdir(parents=True, exist_ok=True)
        return sql_url(str(path / "memory.sqlite3")), path / "chroma"
    url = sql_url(url_or_path)
    if url.startswith("sqlite:///") and url != "sqlite:///:memory:":
        return url, Path(url[len("sqlite:///") :]).with_suffix(".chroma")
    return url, None


class Memory:
    """Typed lessons stored durably (SQL) and found by meaning (vector index).

    Implements `memory.types.Recall`. Every public method returns frozen models from
    `memory.types`; SQL rows never escape.
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
        self.db = db
        self.index = index
        self.embedder = embedder
        self.recall_config = recall_config or RecallConfig(min_similarity=DEFAULT_MIN_SIMILARITY)
        self.write_config = write_config or WriteConfig(
            dedup_similarity=DEFAULT_DEDUP_SIMILARITY, loop_similarity=DEFAULT_LOOP_SIMILARITY
        )
        self._writer = LessonWriter(db, index, embedder, self.write_config, after_sql_commit)
        self._drop_index_on_close = drop_index_on_close

    # -- construction ------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        url_or_path: str,
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
        url, local_chroma = _locations(url_or_path, chroma_path)
        if chroma_url is not None:
            client = http_client(chroma_url)
        elif local_chroma is not None:
            client = embedded_client(local_chroma)
        else:
            raise MemoryConfigError(
                f"{url_or_path!r} is not a local SQLite store: pass chroma_url (a Chroma server) "
                "or chroma_path (an embedded index directory)"
            )
        try:
            db = Database.connect(url)
        except BaseException:
            _close_client(client)
            raise
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
            _close_client(client)
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
        stored = _stored_model(db)
        stale = stored not in (None, (embedder.model_id, embedder.dim))
        if stale and not reembed:
            model, dim = stored or ("?", 0)
            raise EmbeddingMismatchError(
                f"store holds {model} (dim {dim}) embeddings but was opened with "
                f"{embedder.model_id} (dim {embedder.dim}); pass reembed=True to convert it"
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
        _save_model(db, embedder)
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
        _save_model(db, embedder)
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
            self.index.client.delete_collection(self.index.name)
            self._drop_index_on_close = False
        _close_client(self.index.client)
        self.db.dispose()

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
        changes = {
            k: redact(v) if k in _TEXT_FIELDS else v for k, v in given.items() if v is not None
        }
        old = self.get(lesson_id)
        new = old.model_copy(update=changes)
        dedup_vec, index_vec = self.embedder.embed(
            [dedup_text(new.root_cause, new.fix), index_text(new.symptom, new.root_cause)]
        )
        with self.db.write(lock_scope=new.scope) as session:
            row = self._row_for_update(session, lesson_id)
            for key, value in changes.items():
                setattr(row, key, value)
            row.dedup_vector = pack(dedup_vec)
            row.embedding_model = self.embedder.model_id
            row.index_state = INDEX_PENDING
            row.updated_at = utcnow()
            session.add(row)
        self._writer.index_rows([row], {row.id: index_vec})
        return self.get(lesson_id)

    def set_status(
        self, lesson_id: str, status: LessonStatus, *, merged_into: str | None = None
    ) -> Lesson:
        """Change a lesson's status. `merged` needs `merged_into` (recorded on both sides);
        leaving `merged` undoes the merge link, so merges are reversible."""
        if (status == "merged") != (merged_into is not None):
            raise _UsageError("merged_into is required for status 'merged' and only for it")
        if merged_into == lesson_id:
            raise _UsageError("a lesson cannot be merged into itself")
        with self.db.write() as session:
            row = self._row_for_update(session, lesson_id)
            previous_target = row.merged_into
            if previous_target is not None and previous_target != merged_into:
                target = session.get(LessonRow, previous_target, with_for_update=True)
                if target is not None:
                    target.merged_from = [i for i in target.merged_from if i != lesson_id]
                    session.add(target)
            if merged_into is not None:
                target = self._row_for_update(session, merged_into)
                if lesson_id not in target.merged_from:
                    target.merged_from = [*target.merged_from, lesson_id]
                session.add(target)
            row.status = status
            row.merged_into = merged_into
            row.updated_at = utcnow()
            session.add(row)
        self.index.update_metadata(
            [row.id], [_meta(row.scope, row.error_type, row.status, row.embedding_model)]
        )
        return to_lesson(row)

    @staticmethod
    def _row_for_update(session: Any, lesson_id: str) -> LessonRow:
        row: LessonRow | None = session.get(LessonRow, lesson_id, with_for_update=True)
        if row is None:
            raise LessonNotFoundError(f"no lesson {lesson_id!r}")
        return row

    # -- reading -----------------------------------------------------------------------

    def get(self, lesson_id: str) -> Lesson:
        """One lesson by id; `LessonNotFoundError` if there is none."""
        with self.db.read() as session:
            row = session.get(LessonRow, lesson_id)
            if row is None:
                raise LessonNotFoundError(f"no lesson {lesson_id!r}")
            return to_lesson(row)

    def recall(self, query: LessonQuery) -> list[ScoredLesson]:
        """Lessons relevant to `query`, best first (read-only; see `memory.recall`)."""
        return recall(
            query, embedder=self.embedder, index=self.index, db=self.db, config=self.recall_config
        )

    def list_lessons(self, where: LessonFilter | None = None) -> Page[Lesson]:
        """A page of lessons matching the filter, with the total count."""
        where = where or LessonFilter()
        conditions: list[Any] = []
        if where.scope is not None:
            conditions.append(LessonRow.scope == where.scope)
        if where.error_type is not None:
            conditions.append(LessonRow.error_type == where.error_type)
        if where.status:
            conditions.append(col(LessonRow.status).in_(list(where.status)))
        sort_col = col(getattr(LessonRow, where.sort))
        order = (
            [sort_col.desc(), col(LessonRow.id).desc()]
            if where.descending
            else [
                sort_col.asc(),
                col(LessonRow.id).asc(),
            ]
        )
        with self.db.read() as session:
            total = session.exec(
                select(func.count()).select_from(LessonRow).where(*conditions)
            ).one()
            rows = session.exec(
                select(LessonRow)
                .where(*conditions)
                .order_by(*order)
                .offset(where.offset)
                .limit(where.limit)
            ).all()
            items = tuple(to_lesson(r) for r in rows)
        return Page[Lesson](items=items, total=total, offset=where.offset, limit=where.limit)

    # -- runs and uses -----------------------------------------------------------------

    def record_run(
        self, run_id: str, *, task_id: str = "", goal: str = "", scope: str = "default"
    ) -> Run:
        """Register a run (idempotent)."""
        return runs.record_run(self.db, run_id, task_id=task_id, goal=goal, scope=scope)

    def report_use(self, run_id: str, stage: RecallStage, lesson_ids: Sequence[str]) -> None:
        """The loop put these lessons into a prompt: record the use, bump `recalled`."""
        runs.report_use(self.db, run_id, stage, lesson_ids)

    def finish_run(
        self,
        run_id: str,
        passed: bool,
        *,
        rounds: int = 0,
        prompt_tokens: int = 0,
        completion_tokens: int = 0,
    ) -> Run:
        """Store the run's outcome; its used lessons get `helped` (passed) or `misled`."""
        return runs.finish_run(
            self.db,
            run_id,
            passed=passed,
            rounds=rounds,
            prompt_tokens=prompt_tokens,
            completion_tokens=completion_tokens,
        )

    def get_run(self, run_id: str) -> Run:
        """One run by id."""
        return runs.get_run(self.db, run_id)

    def uses(self, lesson_id: str) -> list[LessonUse]:
        """Every recorded use of a lesson, oldest first."""
        return runs.uses(self.db, lesson_id)

    # -- index maintenance -------------------------------------------------------------

    def check(self, repair: bool = False) -> DriftReport:
        """Compare SQL with the vector index; with `repair=True`, fix the index."""
        return sync.check(self.db, self.index, self._writer, self.embedder, repair=repair)

    def reindex(self, *, reembed: bool = False, progress: Progress | None = None) -> int:
        """Rebuild the vector index from SQL; returns the number of lessons indexed."""
        count = sync.reindex(
            self.db, self.index, self._writer, self.embedder, reembed=reembed, progress=progress
        )
        _save_model(self.db, self.embedder)
        return count


def _close_client(client: Any) -> None:
    # chromadb >= 1.1 clients hold sockets / SQLite handles until closed (refcounted: the
    # shared System stops when its last client closes).
    close = getattr(client, "close", None)
    if close is None:
        return
    # chromadb 1.5 does not close the HTTP connection pools (the client's and its internal
    # admin client's) when the System stops, which leaks sockets; close them ourselves, but
    # only once no other client in this process shares them.
    owners = (client, getattr(client, "_admin_client", None))
    sessions = [getattr(getattr(o, "_server", None), "_session", None) for o in owners]
    identifier = getattr(client, "_identifier", None)
    close()
    from chromadb.api.shared_system_client import SharedSystemClient

    if identifier not in SharedSystemClient._identifier_to_system:
        for session in sessions:
            if session is not None and hasattr(session, "close"):
                session.close()


def _stored_model(db: Database) -> tuple[str, int] | None:
    with db.read() as session:
        model = session.get(MetaRow, "embedding_model")
        dim = session.get(MetaRow, "embedding_dim")
        if model is None or dim is None:
            return None
        return model.value, int(dim.value)


def _save_model(db: Database, embedder: Embedder) -> None:
    with db.write(lock_scope="__meta__") as session:
        for key, value in (
            ("embedding_model", embedder.model_id),
            ("embedding_dim", str(embedder.dim)),
        ):
            row = session.get(MetaRow, key, with_for_update=True)
            if row is None:
                session.add(MetaRow(key=key, value=value))
            elif row.value != value:
                row.value = value
                session.add(row)
