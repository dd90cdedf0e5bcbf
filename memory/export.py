"""Lessons as JSONL: a documented, versioned export that re-imports exactly.

File layout (UTF-8, one JSON object per line, lines end with "\\n"):

    {"format":"lessonloop.lessons","version":1}
    {"id":"les_1f0c...","scope":"default","error_type":"runtime_error",...}
    ...

The first line is the header; every other line is one lesson (blank lines are ignored, but
count in line numbers), a JSON object with exactly these keys, written in this order (import
accepts any order and rejects unknown keys):

    id                str, 1-64 chars     kept on import: links and run history refer to it
    scope             str, 1-200 chars    namespace (a user, a project, "global")
    error_type        str, 1-100 chars    e.g. "runtime_error"
    symptom           str
    root_cause        str
    fix               str
    applies_when      str                 scenario / preconditions, "" when none
    evidence          [{"run_id": str, "excerpt": str}, ...]   redacted log excerpts
    status            "candidate" | "validated" | "deprecated" | "merged"
    seen, recalled, helped, misled    int >= 0    the lesson's counters
    merged_into       str | null          set exactly when status is "merged"
    merged_from       [str, ...]          lessons folded into this one
    created_at        ISO 8601 with a UTC offset; export writes UTC ("...Z"), microseconds kept
    updated_at        same
    embedding_model   str                 informational: the model of the exporting store

Export order: created_at, then id, ascending. Export -> import into an empty store -> export
gives identical lines (same embedding model). Export reads pages of 1000 lessons, not one
snapshot: for an exact backup of a busy store, stop its writers first.

Import is a restore, not learning: ids, counters, timestamps, status and merge links are
stored verbatim (links are not checked against the store; `ImportReport.dangling_links`
names referenced lessons that exist nowhere). No dedup-on-write, no recall-loop guard. Texts
are redacted like every write (redaction is idempotent, so an export comes back unchanged).
Vectors are not in the file: they are recomputed with the importing store's embedder, whose
model id replaces `embedding_model`. Runs, use history, review flags and merge-undo records
are not part of the format; the counters carry the totals.

Errors: a missing or foreign header, or an unknown version, refuses the whole file
(`ImportFormatError`, nothing imported). A bad lesson line (not JSON, failing validation, an
id repeated in the file) is reported with its 1-based line number; the other lines are
imported. An id already in the store is skipped and reported, or overwritten with
`replace=True`, but not a lesson a merge touched since the export (reported: undo the merge
first); the next consolidation clusters a replaced lesson anew. Lessons are written in
committed chunks: an interrupted import keeps what it wrote; rows written to SQL but not
yet indexed are finished by `Memory.check(repair=True)`.

Version policy: `version` is an integer, bumped on any change an older reader could misread
(a field added, removed, renamed or retyped, or its meaning changed). Lines are strict, so
any added field is a bump. A reader accepts exactly the versions it knows (`SUPPORTED`) and
refuses the rest with a message naming both; newer readers keep reading older versions.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC
from pathlib import Path
from typing import Any, Literal, TextIO

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, model_validator
from sqlalchemy import bindparam, insert, update
from sqlmodel import Session, col, select

from memory.commit import IndexChanges, IndexEntry, Written, write_through
from memory.dedup import dedup_text, index_text, pack
from memory.errors import MemoryUsageError, brief
from memory.redact import redact
from memory.schema import INDEX_PENDING, LessonRow
from memory.store import Memory
from memory.types import (
    ERROR_TYPE_MAX_CHARS,
    SCOPE_MAX_CHARS,
    Lesson,
    LessonFilter,
    LessonStatus,
)
from memory.vectors import forget_vectors

FORMAT = "lessonloop.lessons"
VERSION = 1
SUPPORTED = (1,)
_CHUNK = 256  # lessons per embed batch and SQL transaction on import
_PAGE = 1000  # lessons per list_lessons page on export (its maximum)
_IN_CHUNK = 500  # ids per SQL IN (...) clause

ImportProgress = Callable[[int], None]  # lesson lines processed so far


class ImportFormatError(MemoryUsageError):
    """The file is not a lessons export of a version this reader knows; nothing imported."""


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Header(_Strict):
    """Line 1 of an export."""

    format: Literal["lessonloop.lessons"]
    version: int


class EvidenceRecord(_Strict):
    """One evidence entry of a lesson line."""

    run_id: str
    excerpt: str


class LessonRecord(_Strict):
    """One lesson line of the format (see the module docstring). Every key is required."""

    id: str = Field(min_length=1, max_length=64)
    scope: str = Field(min_length=1, max_length=SCOPE_MAX_CHARS)
    error_type: str = Field(min_length=1, max_length=ERROR_TYPE_MAX_CHARS)
    symptom: str
    root_cause: str
    fix: str
    applies_when: str
    evidence: tuple[EvidenceRecord, ...]
    status: LessonStatus
    seen: int = Field(ge=0)
    recalled: int = Field(ge=0)
    helped: int = Field(ge=0)
    misled: int = Field(ge=0)
    merged_into: str | None = Field(max_length=64)
    merged_from: tuple[str, ...]
    created_at: AwareDatetime
    updated_at: AwareDatetime
    embedding_model: str

    @model_validator(mode="after")
    def _merge_links(self) -> LessonRecord:
        # The invariants Memory.set_status and consolidation keep; a line breaking them was
        # edited by hand and would leave the store in a state its own API cannot produce.
        if (self.status == "merged") != (self.merged_into is not None):
            raise ValueError("merged_into must be set exactly when status is 'merged'")
        if self.merged_into == self.id or self.id in self.merged_from:
            raise ValueError("a lesson cannot be merged into itself")
        return self


class LineError(BaseModel):
    """A lesson line that was not imported, and why."""

    model_config = ConfigDict(frozen=True)

    line: int
    message: str


class ImportReport(BaseModel):
    """What `import_lessons` did, lesson by lesson."""

    model_config = ConfigDict(frozen=True)

    imported: tuple[str, ...] = ()
    replaced: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # already in the store, not replaced
    errors: tuple[LineError, ...] = ()
    dangling_links: tuple[str, ...] = ()  # merge-link targets found neither in file nor store

    @property
    def ok(self) -> bool:
        """True when every lesson line was valid."""
        return not self.errors


# -- export ------------------------------------------------------------------------------


def header_line() -> str:
    """The header line of the current version (no newline)."""
    return Header(format=FORMAT, version=VERSION).model_dump_json()


def lesson_line(lesson: Lesson) -> str:
    """One lesson as a line of the format (no newline); timestamps normalised to UTC."""
    data = lesson.model_dump()
    data["created_at"] = lesson.created_at.astimezone(UTC)
    data["updated_at"] = lesson.updated_at.astimezone(UTC)
    return LessonRecord.model_validate(data).model_dump_json()


def export_lines(memory: Memory, *, scope: str | None = None) -> Iterator[str]:
    """The header, then every lesson (of `scope`, if given) in export order; no newlines."""
    yield header_line()
    offset = 0
    while True:
        page = memory.list_lessons(
            LessonFilter(
                scope=scope, sort="created_at", descending=False, offset=offset, limit=_PAGE
            )
        )
        for lesson in page.items:
            yield lesson_line(lesson)
        offset += len(page.items)
        if len(page.items) < _PAGE:
            return


def export_lessons(memory: Memory, out: TextIO, *, scope: str | None = None) -> int:
    """Write the export to `out`; returns the number of lessons written."""
    count = -1  # the header is not a lesson
    for line in export_lines(memory, scope=scope):
        out.write(line + "\n")
        count += 1
    return count


def export_to_file(memory: Memory, path: Path, *, scope: str | None = None) -> int:
    """`export_lessons` into `path`, atomically: an interrupted export leaves no half file."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline="\n") as out:
            count = export_lessons(memory, out, scope=scope)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return count


# -- import ------------------------------------------------------------------------------


@dataclass
class _Import:
    """Bookkeeping of one import; becomes the `ImportReport`."""

    imported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)
    first_line: dict[str, int] = field(default_factory=dict)  # id -> line first seen on
    links: set[str] = field(default_factory=set)


def is_header(text: str) -> bool:
    """Does this line claim to be an export header (right or wrong version)?"""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    return isinstance(data, dict) and data.get("format") == FORMAT


def check_header(number: int, text: str) -> None:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFormatError(f"line {number} is not a {FORMAT} header: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ImportFormatError(
            f"line {number} is not a {FORMAT} header (expected {header_line()})"
        )
    version = data.get("version")
    if version not in SUPPORTED:
        known = ", ".join(str(v) for v in SUPPORTED)
        raise ImportFormatError(
            f"{FORMAT} version {version!r} is not supported: this lessonloop reads version "
            f"{known}; export again with a matching lessonloop, or upgrade this one"
        )
    try:
        Header.model_validate(data)
    except ValidationError as exc:
        raise ImportFormatError(f"bad header on line {number}: {brief(exc)}") from exc


def _parse(number: int, text: str, state: _Import) -> LessonRecord | None:
    try:
        record = LessonRecord.model_validate_json(text)
    except ValidationError as exc:
        state.errors.append(LineError(line=number, message=brief(exc)))
        return None
    first = state.first_line.setdefault(record.id, number)
    if first != number:
        state.errors.append(LineError(line=number, message=f"id {record.id} repeats line {first}"))
        return None
    state.links.update(record.merged_from)
    state.links.update([record.merged_into] if record.merged_into else [])
    return record


def _redacted(record: LessonRecord) -> LessonRecord:
    texts = {
        k: redact(getattr(record, k)) for k in ("symptom", "root_cause", "fix", "applies_when")
    }
    evidence = tuple(e.model_copy(update={"excerpt": redact(e.excerpt)}) for e in record.evidence)
    return record.model_copy(update={**texts, "evidence": evidence})


def _existing(memory: Memory, ids: Sequence[str]) -> set[str]:
    found: set[str] = set()
    with memory._db.read() as session:
        for start in range(0, len(ids), _IN_CHUNK):
            chunk = list(ids[start : start + _IN_CHUNK])
            found.update(session.exec(select(LessonRow.id).where(col(LessonRow.id).in_(chunk))))
    return found


_SCALARS = {"id", "scope", "error_type", "symptom", "root_cause", "fix", "applies_when"}
_SCALARS |= {"status", "seen", "recalled", "helped", "misled", "merged_into"}


def _row(record: LessonRecord, dedup_vector: list[float], model: str) -> dict[str, Any]:
    """The record's column values (written with Core statements: no ORM rows)."""
    return {
        **record.model_dump(include=_SCALARS),
        "evidence": [e.model_dump() for e in record.evidence],
        "merged_from": list(record.merged_from),
        # SQLite drops the offset on the way in: store UTC so every reader agrees.
        "created_at": record.created_at.astimezone(UTC),
        "updated_at": record.updated_at.astimezone(UTC),
        "embedding_model": model,
        "dedup_vector": pack(dedup_vector),
        "index_state": INDEX_PENDING,
    }


_TABLE: Any = LessonRow.__table__  # type: ignore[attr-defined]


def _store_rows(session: Session, new: list[dict[str, Any]], old: list[dict[str, Any]]) -> None:
    """Insert the new rows and overwrite the replaced ones, one statement each."""
    conn = session.connection()
    if new:
        conn.execute(insert(_TABLE), new)
    if old:
        columns = [c for c in old[0] if c != "id"]
        conn.execute(
            update(_TABLE)
            .where(_TABLE.c.id == bindparam("b_id"))
            .values({c: bindparam(f"b_{c}") for c in columns}),
            [{"b_id": v["id"], **{f"b_{c}": v[c] for c in columns}} for v in old],
        )


def _merged_since(record: LessonRecord, link: str | None, members: list[str] | None) -> str | None:
    """How a merge after the export touched the stored lesson `record` would replace."""
    folded = ", ".join(sorted(set(members or ()) - set(record.merged_from)))
    if link is not None and link != record.merged_into:
        what = f"lesson {record.id} was merged into {link}"
    elif folded:
        what = f"lessons {folded} were merged into {record.id}"
    else:
        return None
    undo = "undo that merge first (`lessonloop consolidate --undo MERGE_ID`)"
    return f"{what} after this export: {undo}, or import into an empty store"


def _write_chunk(
    memory: Memory, records: Sequence[LessonRecord], replace: bool, state: _Import
) -> None:
    present = _existing(memory, [r.id for r in records])
    todo = [_redacted(r) for r in records if replace or r.id not in present]
    state.skipped.extend(r.id for r in records if not replace and r.id in present)
    if not todo:
        return
    embedder = memory._embedder
    vectors = embedder.embed(
        [dedup_text(r.root_cause, r.fix) for r in todo]
        + [index_text(r.symptom, r.root_cause) for r in todo]
    )

    def write(session: Session) -> Written[None]:
        changes = IndexChanges()
        ids = [r.id for r in todo]
        locked = (
            select(LessonRow.id, LessonRow.scope, LessonRow.merged_into, LessonRow.merged_from)
            .where(col(LessonRow.id).in_(ids))
            .with_for_update()
        )
        stored = {row[0]: row[1:] for row in session.exec(locked).all()}
        new: list[dict[str, Any]] = []
        old: list[dict[str, Any]] = []
        for i, record in enumerate(todo):
            exists = record.id in stored
            if exists and not replace:
                state.skipped.append(record.id)  # written by someone else meanwhile
                continue
            merged = _merged_since(record, *stored[record.id][1:]) if exists else None
            if merged is not None:  # else a member active beside the canonical that holds
                # it, or a canonical without its members: counted twice, and no undo
                state.errors.append(LineError(line=state.first_line[record.id], message=merged))
                continue
            (state.replaced if exists else state.imported).append(record.id)
            values = _row(record, vectors[i], embedder.model_id)
            (old if exists else new).append(values)
            changes.upsert.append(
                IndexEntry(
                    **{k: values[k] for k in ("id", "scope", "error_type")},
                    **{k: values[k] for k in ("embedding_model", "symptom", "root_cause")},
                )
            )
            changes.vectors[record.id] = vectors[len(todo) + i]
            if exists and stored[record.id][0] != record.scope:
                # A replaced lesson that changed scope lives in the old scope's collection.
                changes.delete.append(record.id)
        _store_rows(session, new, old)
        forget_vectors(session, [v["id"] for v in old])  # the next pass clusters them anew
        return Written(None, changes)

    # A failed transaction raises out of import_lessons, so no report counts its ids.
    write_through(memory._db, memory._index, write)


def import_lessons(
    memory: Memory,
    lines: Iterable[str],
    *,
    replace: bool = False,
    progress: ImportProgress | None = None,
) -> ImportReport:
    """Import an export (any iterable of lines, e.g. an open file); see the module docstring.

    Raises `ImportFormatError` before writing anything when the header is missing, foreign
    or of an unknown version. Bad lesson lines are reported in `ImportReport.errors`.
    """
    numbered = ((n, text) for n, text in enumerate(lines, start=1) if text.strip())
    first = next(numbered, None)
    if first is None:
        raise ImportFormatError(f"empty file: expected a {FORMAT} header ({header_line()})")
    check_header(*first)
    state = _Import()
    chunk: list[LessonRecord] = []
    for done, (number, text) in enumerate(numbered, start=1):
        record = _parse(number, text, state)
        if record is not None:
            chunk.append(record)
        if len(chunk) >= _CHUNK:
            _write_chunk(memory, chunk, replace, state)
            chunk = []
        if progress is not None:
            progress(done)
    _write_chunk(memory, chunk, replace, state)
    links = sorted(state.links)
    return ImportReport(
        imported=tuple(state.imported),
        replaced=tuple(state.replaced),
        skipped=tuple(state.skipped),
        errors=tuple(state.errors),
        dangling_links=tuple(sorted(set(links) - _existing(memory, links))),
    )
