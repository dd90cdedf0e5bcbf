"""The retrospective: a finished run's trajectory in, typed `LessonDraft`s out.

    RunResult --facts.failure_steps--> FailureStep (error type, place, symptom, diff)   no model
              --LLM(LESSON prompt, schema=LessonAnalysis)--> root cause, fix, applies_when
                  \\--model output invalid / backend down--> deterministic draft, marked
              --summary.summarise--> ProcessSummary (shown with the run, not stored)

Rules: a run that passed in round one learns nothing (no failure, nothing to fix). Only
verified fixes are stored: a lesson needs a failing candidate followed, in the same run, by
a passing one, and it carries the code change between them ("verified change: ..."). An
unsolved run, or a failure the passing candidate does not show a change for, writes no
advice: a guessed fix recalled into later prompts would teach the wrong thing. When the
model's fix quotes code the passing candidate does not contain, the diff wins and the
lesson says so; a field naming data the run did not have (a BOM its input lacks, copied from
a recalled lesson) gives way to the facts (`retrospectives.grounded`). Drafts are always
"candidate" (a lesson is validated later, when a run that recalled it passes); every draft
carries the run's recalled lesson ids so the memory's recall-loop guard can refuse to
re-learn a lesson it just injected.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent.errors import BackendError, ModelOutputError, StructuredOutputError
from agent.llm.base import LLM, Message, Usage
from agent.result import RunResult
from memory.redact import redact
from memory.types import Evidence, LessonDraft
from retrospectives import prompts
from retrospectives.facts import (
    FailureStep,
    excerpt_of,
    failure_steps,
    lesson_error_type,
    symptom_of,
)
from retrospectives.grounded import ungrounded
from retrospectives.summary import Advice, ProcessSummary, summarise

# Evidence markers: a person (or `lessonloop review`) can see how a lesson was written.
FALLBACK_INVALID = "fallback: model output invalid"
FALLBACK_UNAVAILABLE = "fallback: model unavailable"
FALLBACK_CONTRADICTS_DIFF = "fallback: the model's fix contradicts the verified change"
FALLBACK_UNGROUNDED = "fallback: the model named data the run did not have"
NO_MODEL = "deterministic: no model"

_PLACEHOLDERS = {"", "...", "n/a", "none", "unknown", "todo", "tbd"}


def _bare(text: str) -> str:
    return " ".join(text.lower().split()).strip("<>.\"' -:;")


_NOT_A_PLACEHOLDER = "a real sentence is required, not the prompt's words"
_TOO_SHORT = "write a full sentence (at least three words)"


def copied_from_prompt(text: str) -> bool:
    """A field that repeats the instructions, or the repair turn's complaint, is no lesson.

    A small model does both: it copies the prompt's example (and sometimes goes on after
    it), and after "write a full sentence" it writes exactly that sentence.
    """
    bare = _bare(text)
    if any(message in bare for message in (_NOT_A_PLACEHOLDER, _TOO_SHORT)):
        return True
    if any(_bare(sentence) in bare for sentence in prompts.LESSON_EXAMPLE):
        return True  # the example, extended or not
    return len(bare) >= 12 and bare in _bare(prompts.LESSON_SYSTEM)


class LessonAnalysis(BaseModel):
    """What the model adds to the facts (the JSON schema of the structured call)."""

    model_config = ConfigDict(frozen=True)

    root_cause: str = Field(min_length=8, max_length=500)
    fix: str = Field(min_length=8, max_length=500)
    applies_when: str = Field(min_length=4, max_length=400)

    @field_validator("root_cause", "fix", "applies_when")
    @classmethod
    def _not_placeholder(cls, value: str) -> str:
        # A small model sometimes echoes a placeholder or the instructions: no lesson.
        text = value.strip()
        placeholder = text.startswith("<") and text.endswith(">")
        if placeholder or _bare(text) in _PLACEHOLDERS or copied_from_prompt(text):
            raise ValueError(_NOT_A_PLACEHOLDER)
        if len(text.split()) < 3:
            # "ValueError" is a name, not a cause: the lesson must say why.
            raise ValueError(_TOO_SHORT)
        return text


class RetroConfig(BaseModel):
    """Knobs of the retrospective."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_lessons: int = Field(default=3, ge=1, le=10)
    diff_max_lines: int = Field(default=40, ge=4)
    excerpt_chars: int = Field(default=300, ge=40)
    temperature: float = 0.0
    max_tokens: int = Field(default=400, ge=64)


class RetroOutcome(BaseModel):
    """Everything a retrospective produced: the drafts, the run summary, and what it cost."""

    model_config = ConfigDict(frozen=True)

    run_id: str
    drafts: tuple[LessonDraft, ...]
    summary: ProcessSummary | None = None
    # One entry per draft written without the model's analysis, e.g. "fallback: ... (why)".
    fallbacks: tuple[str, ...] = ()
    usage: Usage = Field(default_factory=Usage)


class Retrospective:
    """Turns a run into lesson drafts; the LLM is optional (None: deterministic drafts only)."""

    def __init__(self, llm: LLM | None, *, config: RetroConfig | None = None) -> None:
        self.llm = llm
        self.config = config or RetroConfig()

    def analyse(self, result: RunResult, *, injected: Sequence[str] = ()) -> RetroOutcome:
        """Drafts and summary for `result`; `injected` adds to the run's recalled lesson ids.

        Never raises for a bad or absent model: those drafts fall back to the facts.
        """
        injected_ids = tuple(dict.fromkeys([*result.recalled_lesson_ids, *injected]))
        if not result.passed or len(result.attempts) <= 1:
            # Unsolved: no fix was verified, so there is no advice to keep.
            return RetroOutcome(run_id=result.run_id, drafts=())
        steps = failure_steps(result, diff_max_lines=self.config.diff_max_lines)
        chosen = self._choose([s for s in steps if verified(s)])
        drafts: list[LessonDraft] = []
        advice: dict[str, Advice] = {}
        fallbacks: list[str] = []
        usage = Usage()
        for step in chosen:
            found, marker, cost = self._advise(result, step)
            usage += cost
            advice[step.identity] = found
            if marker is not None:
                fallbacks.append(marker)
            drafts.append(self._draft(result, step, found, marker, injected_ids))
        summary = summarise(result, steps, advice)
        return RetroOutcome(
            run_id=result.run_id,
            drafts=tuple(drafts),
            summary=summary,
            fallbacks=tuple(fallbacks),
            usage=usage,
        )

    def _choose(self, steps: Sequence[FailureStep]) -> list[FailureStep]:
        # The costliest failures teach the most; report them in the order they happened.
        ranked = sorted(steps, key=lambda s: (-len(s.rounds), -s.tokens, s.rounds[0]))
        keep = {id(s) for s in ranked[: self.config.max_lessons]}
        return [s for s in steps if id(s) in keep]

    def _advise(self, result: RunResult, step: FailureStep) -> tuple[Advice, str | None, Usage]:
        """The model's analysis of one step, or the deterministic one and why."""
        if self.llm is None:
            return deterministic_advice(result, step), NO_MODEL, Usage()
        messages = [
            Message(role="system", content=prompts.LESSON_SYSTEM),
            Message(role="user", content=self._render(result, step)),
        ]
        try:
            completion = self.llm.complete(
                messages,
                schema=LessonAnalysis,
                temperature=self.config.temperature,
                max_tokens=self.config.max_tokens,
            )
        except StructuredOutputError as exc:
            reason = f"{FALLBACK_INVALID} ({exc.schema_name})"
            return deterministic_advice(result, step), reason, exc.usage or Usage()
        except ModelOutputError as exc:
            return deterministic_advice(result, step), f"{FALLBACK_INVALID} ({exc})", Usage()
        except BackendError as exc:
            # The run already happened; losing its lesson to a flaky server helps nobody.
            return deterministic_advice(result, step), f"{FALLBACK_UNAVAILABLE} ({exc})", Usage()
        parsed = completion.parsed
        if parsed is None:
            return deterministic_advice(result, step), FALLBACK_INVALID, completion.usage
        facts = deterministic_advice(result, step)
        fields = {"root_cause": parsed.root_cause, "fix": parsed.fix, "when": parsed.applies_when}
        markers = []
        if contradicts(parsed.fix, result, step):
            fields["fix"] = facts.fix
            markers.append(FALLBACK_CONTRADICTS_DIFF)
        named = {name: ungrounded(text, result, step) for name, text in fields.items()}
        if any(named.values()):
            # A field naming data the run never had gives way to the facts' version.
            own = {"root_cause": facts.root_cause, "fix": facts.fix, "when": facts.applies_when}
            fields.update({name: own[name] for name, bad in named.items() if bad})
            shown = ", ".join(sorted(set().union(*named.values())))
            markers.append(f"{FALLBACK_UNGROUNDED} ({shown})")
        advice = Advice(
            root_cause=fields["root_cause"],
            fix=with_change(fields["fix"], step.change),
            applies_when=fields["when"],
        )
        return advice, "; ".join(markers) or None, completion.usage

    def _render(self, result: RunResult, step: FailureStep) -> str:
        return prompts.render_lesson(
            goal=result.goal,
            rounds=step.rounds,
            failure=step.feedback.compressed(),
            diff=step.diff,
            fix_note=step.fix_note,
            tried=tried_fixes(result, step),
        )

    def _draft(
        self,
        result: RunResult,
        step: FailureStep,
        advice: Advice,
        marker: str | None,
        injected: tuple[str, ...],
    ) -> LessonDraft:
        excerpt = excerpt_of(step.feedback, step.rounds, limit=10 * self.config.excerpt_chars)
        if marker is not None:
            excerpt = f"[{marker}] {excerpt}"
        return LessonDraft(
            scope=result.scope,
            error_type=lesson_error_type(step.feedback),
            symptom=symptom_of(step.feedback),
            root_cause=advice.root_cause,
            fix=advice.fix,
            applies_when=advice.applies_when,
            evidence=(
                Evidence(run_id=result.run_id, excerpt=_clip(excerpt, self.config.excerpt_chars)),
            ),
            status="candidate",
            injected_lesson_ids=injected,
        )


def extract(
    result: RunResult,
    *,
    llm: LLM | None,
    injected: Sequence[str] = (),
    config: RetroConfig | None = None,
) -> list[LessonDraft]:
    """The lesson drafts of one run (see `Retrospective.analyse` for the summary and cost)."""
    return list(Retrospective(llm, config=config).analyse(result, injected=injected).drafts)


_CODE_SPAN = re.compile(r"`([^`\n]{3,})`")
# Marks the verified code change in a lesson's fix (benchmarks count verified lessons by it).
CHANGE_MARK = "verified change:"
# A lesson's fix at most; the verified change takes up to 300 of it (`change.diff_summary`).
_FIX_CHARS = 500


def verified(step: FailureStep) -> bool:
    """A later candidate of the same run passed, and the diff to it changed code."""
    return step.resolved and bool(step.change)


# Advice to catch, skip or "gracefully handle" what fails: the small models' usual repair,
# which drops the values it could not read instead of reading them ("handle the error by
# opening with latin-1" says how to read them, and is not such advice).
_HANDLE_ADVICE = re.compile(
    r"\bgracefully\b|\btry\s*[-/]?\s*except\b|\b(?:catch|handle|skip|ignore|suppress)\w*"
    r"(?:\W+\w+){0,3}?\W+(?:\w*errors?|\w*exceptions?|invalid|bad|malformed)\b(?!\s+by\b)",
    re.IGNORECASE,
)


def contradicts(fix: str, result: RunResult, step: FailureStep) -> bool:
    """The fix quotes code (in backticks) found neither in the passing candidate nor in the
    code the verified change removed, or it advises handling errors where the passing
    program has no `except` at all.

    A model that says "use `Decimal(value)`" while the verified change stripped "$"
    describes a fix nobody checked; the diff is the evidence, so the model's fix loses.
    Quoting the old code it replaces ("instead of `float(v)`") is no contradiction. So does
    "handle the error gracefully" when what passed caught nothing: it read the values.
    """
    passing = next((r for r in result.rounds if r.round == step.fixed_in), None)
    if passing is None:
        return False
    files = passing.candidate.files
    if files and _HANDLE_ADVICE.search(fix) and not _has_except(files):
        return True
    removed = [ln[1:] for ln in step.diff.splitlines() if ln.startswith("-")]
    known = [*passing.candidate.files.values(), passing.candidate.text, *removed]
    code = _squash("\n".join(known))
    spans = [_squash(m.group(1)) for m in _CODE_SPAN.finditer(fix)]
    return any(span not in code for span in spans if span)


def _has_except(files: Mapping[str, str]) -> bool:
    """Does any Python file have an `except` clause (of any kind)? Unparsable files say
    nothing."""
    for name, content in files.items():
        if not name.endswith(".py"):
            continue
        try:
            tree = ast.parse(content)
        except (SyntaxError, ValueError):
            continue
        if any(isinstance(node, ast.ExceptHandler) for node in ast.walk(tree)):
            return True
    return False


def with_change(fix: str, change: str) -> str:
    """`fix` followed by the verified code `change` (`FailureStep.change`, once), so a
    prompt shows what worked."""
    if not change or CHANGE_MARK in fix:
        return fix
    prose = fix.strip().rstrip(". ")
    tail = f"{CHANGE_MARK} {change}"
    if not prose:
        return tail
    # The prose gives way, not the change: it is the part that was checked.
    short = _shortened(prose, _FIX_CHARS - len(tail) - 2).rstrip().removesuffix(":").rstrip()
    return short + (" " if short.endswith(("...", "?", "!")) else ". ") + tail


def _shortened(prose: str, limit: int) -> str:
    """`prose` in at most `limit` characters: the whole sentences that fit, else its words
    that fit and "...". Never a word cut in half and closed as a sentence ("we sk.")."""
    text = redact(" ".join(prose.split()))
    if len(text) <= limit:
        return text
    sentences = re.split(r"(?<=[.!?])\s+", text)
    kept = ""
    for sentence in sentences:
        longer = f"{kept} {sentence}".strip()
        if len(longer) > limit:
            break
        kept = longer
    if kept:
        return kept.rstrip(". ")
    words = text[: max(0, limit - 3)].rsplit(" ", 1)[0]
    return words.rstrip(",;: ") + "..."


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def tried_fixes(result: RunResult, step: FailureStep) -> list[str]:
    """Fix notes written up to the step's last failing round, in order (not the pass's own:
    a round-1 sample that passed shares round 1 with the draw it repaired)."""
    last = step.rounds[-1]
    return [
        r.candidate.fix_note
        for r in result.attempts
        if r.round <= last and not r.feedback.passed and r.candidate.fix_note
    ]


def deterministic_advice(result: RunResult, step: FailureStep) -> Advice:
    """Root cause, fix and scope of a step from the trajectory alone (no model)."""
    fb = step.feedback
    observed = fb.key_message or (fb.issues[0] if fb.issues else fb.summary.strip()[:200])
    # The refiner's own words, unless they name data the run did not have (copied from a
    # recalled lesson): then what was observed.
    stated = step.stated_cause if not ungrounded(step.stated_cause or "", result, step) else None
    cause = stated or f"{fb.error_type or fb.kind.replace('_', ' ')}: {observed}"
    removed = next(
        (
            ln[1:].strip()
            for ln in step.diff.splitlines()
            if ln.startswith("-") and not ln.startswith("---") and ln[1:].strip()
        ),
        "",
    )
    when = f"the check reports {fb.error_type or fb.kind.replace('_', ' ')}"
    if removed:
        when += f" on code like `{removed[:120]}`"
    if step.resolved:
        note = step.fix_note if not ungrounded(step.fix_note or "", result, step) else None
        fix = with_change(note or "", step.change) or "rewrite the failing part"
    else:
        tried = tried_fixes(result, step)
        fix = "not found in this run" + (
            f"; tried without success: {'; '.join(tried)}" if tried else ""
        )
    return Advice(root_cause=_clip(cause, 500), fix=_clip(fix, 500), applies_when=_clip(when, 400))


def _clip(text: str, limit: int) -> str:
    # Redact before cutting: a secret cut in half no longer matches the redaction patterns.
    text = redact(" ".join(text.split()))
    return text if len(text) <= limit else text[: limit - 3] + "..."
