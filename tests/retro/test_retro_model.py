"""The retrospective on the real embedded model: it must yield a schema-valid lesson."""

from __future__ import annotations

import pytest

from agent.llm.resolve import resolve_llm
from agent.settings import Settings
from retrospectives.extract import LessonAnalysis, Retrospective
from tests.retro.builders import fixed_once


@pytest.mark.model
def test_real_model_writes_a_schema_valid_lesson() -> None:
    llm = resolve_llm("local", Settings.from_env())
    outcome = Retrospective(llm).analyse(fixed_once())
    (draft,) = outcome.drafts
    assert outcome.usage.calls >= 1  # the model path ran (and its repair turn, if needed)
    # A weak answer (copied example, one-word cause) is rejected and replaced by the marked
    # deterministic draft; either way the stored lesson satisfies the schema.
    if outcome.fallbacks:
        assert draft.evidence[0].excerpt.startswith("[fallback: model output invalid")
    LessonAnalysis(
        root_cause=draft.root_cause, fix=draft.fix, applies_when=draft.applies_when
    )  # re-validates against the schema the model was held to
    assert draft.status == "candidate" and draft.error_type == "ValueError"
    print(
        f"\nfallbacks: {outcome.fallbacks}\nroot cause: {draft.root_cause}"
        f"\nfix: {draft.fix}\nwhen: {draft.applies_when}"
    )
