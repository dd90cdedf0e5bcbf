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
    assert outcome.fallbacks == (), outcome.fallbacks  # the model's answer was used
    LessonAnalysis(
        root_cause=draft.root_cause, fix=draft.fix, applies_when=draft.applies_when
    )  # re-validates against the schema the model was held to
    assert draft.status == "candidate" and draft.error_type == "ValueError"
    print(f"\nroot cause: {draft.root_cause}\nfix: {draft.fix}\nwhen: {draft.applies_when}")
