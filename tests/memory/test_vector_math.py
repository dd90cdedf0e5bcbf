"""Unit tests of the write path's vector math: the dedup scan and its BLAS thread cap."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_info

from memory.blas import one_blas_thread
from memory.pools import VectorSet


def unit_rows(n: int, dim: int, seed: int) -> np.ndarray:
    rows = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_few_and_many_queries_find_the_same_best_match() -> None:
    stored = VectorSet(32)
    for i, vec in enumerate(unit_rows(300, 32, seed=1)):
        stored.put(f"les_{i}", vec)
    stored.drop("les_7")  # a hole filled by the last row: positions move
    queries = list(unit_rows(9, 32, seed=2))
    queries[3] = unit_rows(300, 32, seed=1)[42]  # an exact duplicate of a stored lesson
    together = stored.best(queries)  # 9 queries: one matrix product
    alone = [stored.best([q])[0] for q in queries]  # one query: a matrix-vector product
    assert [m.lesson_id for m in together if m] == [m.lesson_id for m in alone if m]
    assert np.allclose([m.similarity for m in together if m], [m.similarity for m in alone if m])
    assert alone[3] is not None and alone[3].lesson_id == "les_42"
    assert alone[3].similarity > 0.999


def test_an_empty_set_matches_nothing() -> None:
    assert VectorSet(8).best([unit_rows(1, 8, seed=3)[0]]) == [None]


def numpy_blas_threads() -> list[int]:
    """Threads of numpy's BLAS (others, such as scipy's, may be loaded beside it)."""
    numpy_dir = Path(np.__file__).parent
    return [
        int(lib["num_threads"])
        for lib in threadpool_info()
        if lib["user_api"] == "blas"
        and Path(lib["filepath"]).parent.name in ("numpy.libs", numpy_dir.name)
    ]


def test_one_blas_thread_inside_and_the_setting_restored_after() -> None:
    before = numpy_blas_threads()
    assert before, "numpy's BLAS is loaded"
    with one_blas_thread():
        assert numpy_blas_threads() == [1] * len(before)
        with one_blas_thread():  # nested: still one, and the outer limit survives
            pass
        assert numpy_blas_threads() == [1] * len(before)
    assert numpy_blas_threads() == before
