"""A second opinion on the uncertain pairs of consolidation: do two lessons share a root cause?

The pair score of retrospectives.link (root-cause cosine + IDF word overlap) separates
paraphrases of one root cause from different root causes badly in a middle band: on the
hand-written cross-type set, same-cause pairs score 0.15-0.5 and so do the closest
different-cause pairs (README). A pair whose score falls in the band `[band_low,
band_high)` is asked of a judge; "same" lifts its score to `judged_same`, "different" sets
it to 0 (a veto inside average linkage), no answer leaves it as it was. Pairs above the
band keep their score without a call, pairs below it are never asked.

`ModelPairJudge` asks an LLM, one short structured call per pair (prompts.SAME_CAUSE_*);
`ScriptedPairJudge` is the test double (a function of the two texts), shipped here so
tests and benchmarks need no model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict

from agent.errors import BackendError, ModelOutputError
from agent.llm.base import LLM, Message, Usage
from retrospectives import prompts

Verdict = bool | None  # None: no answer (the pair keeps its score)


class SameCauseAnswer(BaseModel):
    """The model's answer to one pair (the JSON schema of the structured call)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    same: bool


class PairJudge(Protocol):
    """Says whether pairs of lessons (root cause + fix texts) share one root cause."""

    @property
    def asked(self) -> int:
        """Pairs asked so far."""
        ...

    @property
    def usage(self) -> Usage:
        """Model cost so far (zero for a judge without a model)."""
        ...

    def same_cause(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        """One verdict per pair, in order."""
        ...


class ModelPairJudge:
    """Asks an LLM, one structured call per pair; a failed call is no verdict."""

    def __init__(self, llm: LLM, *, max_tokens: int = 20) -> None:
        self.llm = llm
        self.max_tokens = max_tokens
        self._asked = 0
        self._usage = Usage()

    @property
    def asked(self) -> int:
        return self._asked

    @property
    def usage(self) -> Usage:
        return self._usage

    def same_cause(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        return [self._one(first, second) for first, second in pairs]

    def _one(self, first: str, second: str) -> Verdict:
        self._asked += 1
        messages = [
            Message(role="system", content=prompts.SAME_CAUSE_SYSTEM),
            Message(role="user", content=prompts.render_same_cause(first, second)),
        ]
        try:
            completion = self.llm.complete(
                messages, schema=SameCauseAnswer, temperature=0.0, max_tokens=self.max_tokens
            )
        except (ModelOutputError, BackendError):
            return None  # a bad answer or a server away: the pair keeps its score
        self._usage += completion.usage
        return None if completion.parsed is None else completion.parsed.same


class ScriptedPairJudge:
    """Test double: `decide(first, second)` gives each verdict; every pair asked is kept."""

    def __init__(self, decide: Callable[[str, str], Verdict]) -> None:
        self.decide = decide
        self.pairs: list[tuple[str, str]] = []

    @property
    def asked(self) -> int:
        return len(self.pairs)

    @property
    def usage(self) -> Usage:
        return Usage()

    def same_cause(self, pairs: Sequence[tuple[str, str]]) -> list[Verdict]:
        self.pairs.extend(pairs)
        return [self.decide(first, second) for first, second in pairs]
