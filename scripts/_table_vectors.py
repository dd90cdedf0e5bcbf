"""Vectors for the synthetic lessons without embedding each one: MiniLM on a pool, jittered.

Embedding 100k lessons twice (recall text and dedup text) with MiniLM takes hours on a
2-core machine, and the memory benchmark times the store, not the embedder. `build_table`
embeds a pool of template lessons for real (cached on disk) and gives every lesson and
query its pool vector with a small random jitter (cosine ~0.9 to its base);
`TableEmbedder` serves them by text. `exact=True` embeds every text for real.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memory import LessonDraft, MiniLMEmbedder
from memory.dedup import dedup_text, index_text
from memory.embeddings import MINILM_DIM, MINILM_MODEL_ID
from memory.matchtext import match_text
from scripts._synthetic_lessons import generate


class TableEmbedder:
    """Serves precomputed vectors by text; every text the bench uses is in the table."""

    def __init__(self, table: dict[str, np.ndarray]) -> None:
        self.table = table

    @property
    def model_id(self) -> str:
        return MINILM_MODEL_ID

    @property
    def dim(self) -> int:
        return MINILM_DIM

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self.table[t].tolist() for t in texts]


def _jitter(base: np.ndarray, rng: np.random.Generator, sigma: float = 0.025) -> np.ndarray:
    v = base + rng.normal(0.0, sigma, size=base.shape).astype(np.float32)
    return (v / np.linalg.norm(v)).astype(np.float32)


def pool_vectors(minilm: MiniLMEmbedder, texts: list[str], cache: Path, name: str) -> np.ndarray:
    """MiniLM vectors of `texts`, cached on disk between runs."""
    path = cache / f"{name}-{len(texts)}.npy"
    if path.exists():
        return np.load(path)
    vecs = np.asarray(minilm.embed(texts), dtype=np.float32)
    cache.mkdir(parents=True, exist_ok=True)
    np.save(path, vecs)
    return vecs


def build_table(
    drafts: list[LessonDraft],
    queries: list[str],
    minilm: MiniLMEmbedder,
    *,
    seed: int,
    pool_size: int,
    cache: Path,
    exact: bool,
) -> dict[str, np.ndarray]:
    """Vectors for every dedup text, index text and query of the run."""
    rng = np.random.default_rng(seed)
    idx_texts = [index_text(d.symptom, d.root_cause) for d in drafts]
    ded_texts = [dedup_text(d.root_cause, d.fix) for d in drafts]
    table: dict[str, np.ndarray] = {}
    if exact:
        for texts in (idx_texts, ded_texts, queries):
            texts = [match_text(t) for t in texts] if texts is queries else texts
            for t, v in zip(texts, minilm.embed(texts), strict=True):
                table[t] = np.asarray(v, dtype=np.float32)
        return table
    pool = generate(pool_size, seed=10_000 + seed)
    p_idx = pool_vectors(minilm, [index_text(d.symptom, d.root_cause) for d in pool], cache, "idx")
    p_ded = pool_vectors(minilm, [dedup_text(d.root_cause, d.fix) for d in pool], cache, "ded")
    for i, (it, dt) in enumerate(zip(idx_texts, ded_texts, strict=True)):
        # Same template family position -> similar base vector, like real related lessons.
        j = i % pool_size
        table[it] = _jitter(p_idx[j], rng)
        table[dt] = _jitter(p_ded[j], rng)
    for k, q in enumerate(queries):
        # Recall embeds the query as it compares it (memory.matchtext).
        table[match_text(q)] = _jitter(p_idx[k % pool_size], rng, sigma=0.035)
    return table
