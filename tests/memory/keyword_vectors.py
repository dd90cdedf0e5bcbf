"""Vectors for memory.embeddings.KeywordEmbedder in the recall gate tests (6 dims).

A lesson's indexed text (symptom + root cause) holds SYMPTOM_x, its root cause + fix
(diversification, dedup) only CAUSE_x; `unit(a, b)` is a query at cosine a to lesson A
and b to lesson B.
"""

from __future__ import annotations

import math


def unit(a: float, b: float = 0.0) -> list[float]:
    """Cosine a to lesson A, b to lesson B, the rest on an axis no lesson uses."""
    return [a, b, math.sqrt(1 - a * a - b * b), 0.0, 0.0, 0.0]


LESSONS = {
    "SYMPTOM_A": [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
    "SYMPTOM_B": [0.0, 1.0, 0.0, 0.0, 0.0, 0.0],
    "CAUSE_A": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    "CAUSE_B": [0.0, 0.0, 0.0, 0.0, 1.0, 0.0],
}
