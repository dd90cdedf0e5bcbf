"""Whatever the model answers, the loop and the retrospective return a result, never raise.

Per role (generator, refiner, critic, retrospective), hypothesis draws answers of the
issue's categories (scripts/fuzz_roles.py) and a scripted model plays them through the real
loop (real sandbox) or the retrospective: no exception, no pass the answer does not earn,
every failure a typed feedback, no file outside the workspace. The default run draws a few
dozen cases per role; `python scripts/bench_fuzz.py` draws 500 per role
(LESSONLOOP_FUZZ_EXAMPLES). A last test mixes fragments a small model really produces
(fences, "### file" headers, half JSON, prose, control characters, huge lines) and noise.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent.container import Limits
from agent.feedback import FeedbackKind
from agent.llm.scripted import ScriptedLLM
from agent.loop import LoopConfig, ReflectiveAgent
from agent.sandbox import Sandbox
from memory.types import NullRecall
from retrospectives.extract import Retrospective
from scripts.fuzz_roles import ROLES, Case, examples_per_role, fenced, run_generator
from tests.helpers import make_task

FRAGMENTS = [
    "### solution.py\n", "```python\n", "```\n", "```json\n", "import json\n",
    "json.dump(42, open('out.json', 'w'))\n", "{", "}", '{"root_cause": ', '"fix": "x"',
    "Phenomenon: it failed\n", "Root cause: \n", "Fix: none\n", "ANSWER:\n",
    "def f(:\n", "\x00", "\ufeff", "\u202e", "x" * 5000 + "\n", "### ../../etc/passwd\n",
    "### /abs/path.py\n", "### solution.py\n```python\nraise SystemExit(3)\n```\n",
    '{"passed": true, "score": 11, "issues": []}', "null", "[]", "\n\n",
]  # fmt: skip
answers = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=12).map("".join),
    st.text(max_size=300),
)

SANDBOX = Sandbox(Limits(cpu_s=10))
PER_ROLE = examples_per_role(15)


@pytest.mark.parametrize("role", sorted(ROLES))
def test_each_role_turns_malformed_output_into_feedback(role: str) -> None:
    strategy, play = ROLES[role]

    @settings(
        max_examples=PER_ROLE,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(case=strategy)
    def check(case: Case) -> None:
        outcome = play(case, SANDBOX)
        assert outcome.ok, (outcome, case.reply[:300])

    check()


@settings(max_examples=60, deadline=None)
@given(replies=st.lists(answers, min_size=12, max_size=12))
def test_any_model_output_becomes_feedback_not_an_exception(replies: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        task = make_task(Path(tmp))
        llm = ScriptedLLM(replies, repeat=True)
        agent = ReflectiveAgent(
            llm,
            recall=NullRecall(),
            sandbox=SANDBOX,
            config=LoopConfig(max_rounds=2, pool_size=2, first_pool=1, critic="always"),
        )
        result = agent.run(task)
        assert {r.feedback.kind for r in result.rounds} <= set(get_args(FeedbackKind))
        assert 1 <= len(result.rounds) <= 2
        # The retrospective on the same garbage: drafts or nothing, never an exception.
        outcome = Retrospective(ScriptedLLM(replies, repeat=True)).analyse(result)
        for draft in outcome.drafts:
            assert draft.symptom and draft.fix


def test_a_lone_surrogate_in_code_is_feedback_not_an_encode_error() -> None:
    # Found by the 500-case run: a JSON "\ud800" escape in an answer crashed the loop.
    outcome = run_generator(Case(category="unicode junk", reply=fenced("x = 1\ud800\n")), SANDBOX)
    assert outcome.ok and not outcome.passed
