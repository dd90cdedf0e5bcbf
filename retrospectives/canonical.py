"""The canonical lesson of a cluster: written by the model, checked, or built deterministically.

Counters are summed, evidence and applies_when united, provenance kept (`merged_from`).
Lessons that share a root cause but fix it differently are not blindly merged: their fixes
are grouped (fix embeddings), and the canonical keeps one fix per group with the condition
under which it applies. A model-written fix that drops one of those groups is replaced by
the deterministic "if ...: ...; if ...: ..." text, so no known fix is lost in a merge.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import Field

from agent.errors import BackendError, ModelOutputError
from agent.llm.base import LLM, Message, Usage
from memory.types import Evidence, Lesson, LessonText, MergedCounts
from retrospectives import prompts

MAX_EVIDENCE = 50
_WORD = re.compile(r"[a-z0-9_$'%.]{4,}")
WrittenBy = Literal["model", "model+fallback_fix", "fallback"]


# The text of a canonical lesson: the memory's shared text fields.
CanonicalText = LessonText


class CanonicalAnswer(LessonText):
    """The model's part of a merge: the JSON schema of the structured call, with bounds."""

    symptom: str = Field(min_length=8, max_length=600)
    root_cause: str = Field(min_length=8, max_length=600)
    fix: str = Field(min_length=8, max_length=1200)
    applies_when: str = Field(default="", max_length=800)


class Canonical(MergedCounts):
    """Everything a merge writes into the canonical lesson: its text and the merged counts."""

    text: CanonicalText
    written_by: WrittenBy
    fix_groups: int
    usage: Usage = Field(default_factory=Usage)


def representative(lessons: Sequence[Lesson]) -> Lesson:
    """The member that speaks for the cluster: validated first, then most helpful, most seen."""
    return max(
        enumerate(lessons),
        key=lambda p: (p[1].status == "validated", p[1].helped - p[1].misled, p[1].seen, -p[0]),
    )[1]


def group_fixes(
    lessons: Sequence[Lesson], fix_vectors: Mapping[str, Sequence[float]], threshold: float
) -> list[list[Lesson]]:
    """Members grouped by what their fix says (greedy, cosine of fix embeddings >= threshold)."""
    vectors = np.asarray([fix_vectors[m.id] for m in lessons], dtype=np.float32)
    groups: list[list[int]] = []
    for i in range(len(lessons)):
        for group in groups:
            if float(vectors[group[0]] @ vectors[i]) >= threshold:
                group.append(i)
                break
        else:
            groups.append([i])
    return [[lessons[i] for i in g] for g in groups]


def deterministic_text(
    lessons: Sequence[Lesson], groups: Sequence[Sequence[Lesson]]
) -> CanonicalText:
    """The canonical text without a model: the representative's words, every distinct fix."""
    rep = representative(lessons)
    return CanonicalText(
        symptom=_clip(rep.symptom, 600),
        root_cause=_clip(rep.root_cause, 600),
        fix=conditional_fix(groups),
        applies_when=_clip(_union(m.applies_when for m in lessons), 800),
    )


def conditional_fix(groups: Sequence[Sequence[Lesson]]) -> str:
    """One fix for one group; "if <when>: <fix>" per group when the fixes differ."""
    if len(groups) == 1:
        return _clip(representative(groups[0]).fix, 1200)
    parts = []
    for group in groups:
        rep = representative(group)
        when = rep.applies_when or rep.symptom
        parts.append(f"if {_clip(when, 200).rstrip('.')}: {_clip(rep.fix, 300).rstrip('.')}")
    return _clip("; ".join(parts), 1200)


def covers(fix: str, group_fixes: Sequence[str], *, min_overlap: float = 0.5) -> bool:
    """Does `fix` keep every fix of `group_fixes`? (content-word overlap, a cheap guard)."""
    have = set(_WORD.findall(fix.lower()))
    for other in group_fixes:
        words = set(_WORD.findall(other.lower()))
        if words and len(words & have) / len(words) < min_overlap:
            return False
    return True


def write_canonical(
    lessons: Sequence[Lesson],
    *,
    llm: LLM | None,
    fix_vectors: Mapping[str, Sequence[float]],
    fix_threshold: float = 0.8,
    max_tokens: int = 600,
) -> Canonical:
    """The canonical of `lessons` (leader first); the model is optional and may fail.

    `fix_vectors` maps each lesson id to the embedding of its fix (batched by the caller).
    """
    groups = group_fixes(lessons, fix_vectors, fix_threshold)
    text, written_by, usage = _model_text(lessons, groups, llm, max_tokens)
    if text is None:
        text, written_by = deterministic_text(lessons, groups), "fallback"
    return Canonical(
        text=text,
        status="validated" if any(m.status == "validated" for m in lessons) else "candidate",
        seen=sum(m.seen for m in lessons),
        recalled=sum(m.recalled for m in lessons),
        helped=sum(m.helped for m in lessons),
        misled=sum(m.misled for m in lessons),
        evidence=_evidence(lessons),
        merged_from=_provenance(lessons),
        written_by=written_by,
        fix_groups=len(groups),
        usage=usage,
    )


def _model_text(
    lessons: Sequence[Lesson], groups: Sequence[Sequence[Lesson]], llm: LLM | None, max_tokens: int
) -> tuple[CanonicalText | None, WrittenBy, Usage]:
    if llm is None:
        return None, "fallback", Usage()
    messages = [
        Message(role="system", content=prompts.MERGE_SYSTEM),
        Message(
            role="user",
            content=prompts.render_merge(
                lessons[0].error_type,
                [(m.symptom, m.root_cause, m.fix, m.applies_when) for m in lessons],
            ),
        ),
    ]
    try:
        completion = llm.complete(
            messages, schema=CanonicalAnswer, temperature=0.0, max_tokens=max_tokens
        )
    except (ModelOutputError, BackendError):
        # Bad output or a server away: the deterministic canonical loses nothing.
        return None, "fallback", Usage()
    parsed = completion.parsed
    if parsed is None:
        return None, "fallback", completion.usage
    text = CanonicalText(
        symptom=parsed.symptom,
        root_cause=parsed.root_cause,
        fix=parsed.fix,
        applies_when=parsed.applies_when,
    )
    if not covers(text.fix, [representative(g).fix for g in groups]):
        # A merge must never lose a known fix: keep the model's wording, not its fix.
        return (
            text.model_copy(update={"fix": conditional_fix(groups)}),
            "model+fallback_fix",
            completion.usage,
        )
    return text, "model", completion.usage


def _evidence(lessons: Sequence[Lesson]) -> tuple[Evidence, ...]:
    seen: dict[tuple[str, str], Evidence] = {}
    for lesson in sorted(lessons, key=lambda m: m.created_at):
        for e in lesson.evidence:
            seen.setdefault((e.run_id, e.excerpt), e)
    return tuple(seen.values())[-MAX_EVIDENCE:]


def _provenance(lessons: Sequence[Lesson]) -> tuple[str, ...]:
    # A canonical folded again keeps its own provenance: merged_from lists original lessons.
    ids: dict[str, None] = {}
    for m in lessons:
        ids.update(dict.fromkeys(m.merged_from or (m.id,)))
    return tuple(ids)


def _union(texts: Iterable[str]) -> str:
    seen: dict[str, str] = {}
    for t in texts:
        key = " ".join(t.lower().split()).rstrip(".")
        if key and key not in seen:
            seen[key] = t.strip().rstrip(".")
    return "; ".join(seen.values())


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
