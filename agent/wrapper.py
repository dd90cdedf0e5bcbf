"""`run_with_reflection`: the same reflect-and-refine loop around any callable agent.

Use it when you already have an agent (a function from question to answer) and want the
loop's review, refine and stop rules without the task format:

    result = run_with_reflection(q, my_agent, review=llm_review(llm), refine=llm_refine(llm))
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pydantic import BaseModel, ConfigDict

from agent import prompts
from agent.candidate import answer_part
from agent.critic import Critique, critique_feedback, unreadable_critique
from agent.errors import StructuredOutputError
from agent.feedback import Feedback
from agent.llm.base import LLM, Message
from agent.result import StopReason
from agent.stopping import decide_stop

Review = Callable[[str, str], "Critique | Feedback"]
Refine = Callable[[str, str, Feedback, Sequence[str]], str]


class ReflectionStep(BaseModel):
    model_config = ConfigDict(frozen=True)

    round: int
    answer: str
    feedback: Feedback


class ReflectionResult(BaseModel):
    model_config = ConfigDict(frozen=True)

    answer: str
    passed: bool
    stop_reason: StopReason
    steps: tuple[ReflectionStep, ...]
    unresolved: tuple[str, ...]


def run_with_reflection(
    question: str,
    base_agent: Callable[[str], str],
    review: Review,
    refine: Refine,
    max_rounds: int = 2,
    *,
    score_threshold: float = 8.0,
) -> ReflectionResult:
    """Answer, review, and refine until a stop rule fires; `max_rounds` caps answers reviewed.

    `review(question, answer)` returns a Critique (parsed strictly) or a Feedback;
    `refine(question, answer, feedback, fixes_tried)` returns the next answer.
    """
    if max_rounds < 1:
        raise ValueError("max_rounds must be at least 1")
    steps: list[ReflectionStep] = []
    answer = base_agent(question)
    seen = {answer.strip()}
    tried: list[str] = []
    while True:
        steps.append(
            ReflectionStep(
                round=len(steps) + 1, answer=answer, feedback=_review(review, question, answer)
            )
        )
        stop = decide_stop(
            steps[-1].feedback,
            rounds=len(steps),
            repaired=steps[-2].feedback if len(steps) > 1 else None,
            max_rounds=max_rounds,
            score_threshold=score_threshold,
            has_external_check=False,
        )
        if stop is not None:
            return _result(steps, stop)
        feedback = steps[-1].feedback
        answer = refine(question, answer, feedback, tuple(tried))
        tried.append(feedback.key_message or feedback.summary)
        if answer.strip() in seen:
            return _result(steps, "stall")
        seen.add(answer.strip())


def _review(review: Review, question: str, answer: str) -> Feedback:
    try:
        verdict = review(question, answer)
    except StructuredOutputError as exc:
        return unreadable_critique(exc.raw, str(exc))
    return critique_feedback(verdict) if isinstance(verdict, Critique) else verdict


def _result(steps: Sequence[ReflectionStep], stop: StopReason) -> ReflectionResult:
    best = max(steps, key=lambda s: (s.feedback.passed, s.feedback.score or 0.0, -s.round))
    unresolved = () if best.feedback.passed else best.feedback.issues or (best.feedback.summary,)
    return ReflectionResult(
        answer=best.answer,
        passed=best.feedback.passed,
        stop_reason=stop,
        steps=tuple(steps),
        unresolved=tuple(unresolved),
    )


def llm_review(llm: LLM, checklist: Sequence[str] = ()) -> Review:
    """A review callable backed by an LLM critic with the strict verdict rules."""

    def review(question: str, answer: str) -> Critique:
        items = list(checklist) or [
            f"It answers exactly this: {question}",
            "Every part of the question is covered; nothing is missing or wrong.",
        ]
        messages = [
            Message(role="system", content=prompts.CRITIC_SYSTEM),
            Message(role="user", content=prompts.render_critic(question, items, answer)),
        ]
        completion = llm.complete(messages, schema=Critique, temperature=0.0)
        assert completion.parsed is not None
        return completion.parsed

    return review


def llm_refine(llm: LLM) -> Refine:
    """A refine callable backed by an LLM refiner prompt."""

    def refine(question: str, answer: str, feedback: Feedback, tried: Sequence[str]) -> str:
        user = prompts.render_refiner(
            goal=question,
            previous=answer,
            round_no=len(tried) + 1,
            feedback=feedback.compressed(),
            kind=feedback.kind,
            tried=tried,
            lessons="",
            passed_external=False,
        )
        messages = [
            Message(role="system", content=prompts.REFINER_SYSTEM_TEXT),
            Message(role="user", content=user),
        ]
        return answer_part(llm.complete(messages, temperature=0.0).text)

    return refine
