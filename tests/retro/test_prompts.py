"""Every retrospective prompt renders with its inputs."""

from __future__ import annotations

from retrospectives import prompts


def test_lesson_prompt_renders_a_fixed_failure() -> None:
    text = prompts.render_lesson(
        goal="Sum amounts",
        rounds=[1, 2],
        failure="kind: runtime_error",
        diff="-a\n+b",
        fix_note="strip $",
        tried=["cast to int"],
    )
    assert "Sum amounts" in text and "round 1, 2" in text and "-a\n+b" in text
    assert "strip $" in text and "- cast to int" in text and "never passed" not in text


def test_lesson_system_prompt_names_every_schema_field() -> None:
    for field in ("root_cause", "fix", "applies_when"):
        assert f'"{field}"' in prompts.LESSON_SYSTEM


def test_the_example_sentences_are_the_ones_the_system_prompt_shows() -> None:
    # extract.copied_from_prompt finds copies by them: they must stay the prompt's own.
    flat = " ".join(prompts.LESSON_SYSTEM.split())
    assert all(sentence in flat for sentence in prompts.LESSON_EXAMPLE)


def test_merge_prompt_renders_every_lesson() -> None:
    text = prompts.render_merge("ValueError", [("s1", "r1", "f1", "w1"), ("s2", "r2", "f2", "")])
    assert "Lessons to merge (2)" in text and "ValueError" in text
    assert "1. symptom: s1" in text and "fix: f2" in text and "applies when: -" in text
    for field in ("symptom", "root_cause", "fix", "applies_when"):
        assert f'"{field}"' in prompts.MERGE_SYSTEM


def test_same_cause_prompt_renders_both_lessons_and_names_the_answer_field() -> None:
    text = prompts.render_same_cause("grouping commas in 1,200", "decimal comma in 21,4")
    assert text.index("grouping commas") < text.index("decimal comma")
    assert '"same"' in prompts.SAME_CAUSE_SYSTEM
