"""Vector helpers for dedup-on-write and the recall-loop guard.

Two lessons are "the same" when their root cause and fix say the same thing, whatever the
symptom looked like, so dedup compares embeddings of `root_cause + fix` (stored in SQL as
`dedup_vector`), not the symptom+root-cause vectors of the recall index. Keeping them in SQL
means the dedup decision reads the same transaction snapshot as the insert it guards.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from memory.matchtext import match_text

Vector = NDArray[np.float32]


def dedup_text(root_cause: str, fix: str) -> str:
    """The text whose embedding identifies a lesson for dedup purposes."""
    return f"Root cause: {root_cause}\nFix: {fix}"


def index_text(symptom: str, root_cause: str) -> str:
    """The document the recall index embeds and BM25 indexes: what a query will resemble,
    without the template it shares with every other symptom (`memory.matchtext`)."""
    return match_text(f"{symptom}\n{root_cause}")


def pack(vector: Sequence[float] | Vector) -> bytes:
    """float32 little-endian bytes for the `dedup_vector` column."""
    return np.asarray(vector, dtype="<f4").tobytes()


def unpack(blob: bytes) -> Vector:
    """Inverse of `pack`."""
    return np.frombuffer(blob, dtype="<f4").astype(np.float32)


@dataclass(frozen=True)
class Match:
    """The closest existing lesson and its cosine similarity."""

    lesson_id: str
    similarity: float


def best_match(vector: Vector, candidates: Iterable[tuple[str, Vector]]) -> Match | None:
    """The most similar candidate (vectors are unit length, so dot = cosine), or None."""
    ids: list[str] = []
    rows: list[Vector] = []
    for lesson_id, vec in candidates:
        if vec.shape == vector.shape:
            ids.append(lesson_id)
            rows.append(vec)
    if not ids:
        return None
    sims = np.stack(rows) @ vector
    best = int(np.argmax(sims))
    return Match(lesson_id=ids[best], similarity=float(sims[best]))


def cosine(a: Vector, b: Vector) -> float:
    """Cosine similarity of two unit vectors."""
    return float(np.dot(a, b))
