"""Plain hot samples of a HumanEval problem: the pass@k ceiling the loop's search approaches.

`draw_hot_samples` draws K generations with the loop's round-1 generator prompt (no lessons,
no feedback) at the loop's resample temperature, each with its own seed, and scores each on
the hidden tests in the sandbox exactly as the loop's final code is scored. `hot_record` is
the problem's JSON entry ("hot"), `summarise_hot` the totals over a run. pass@k is the
unbiased estimator of Chen et al. (2021), averaged over problems. pass@k is an oracle (any
sample passing the hidden tests counts); each sample is also run through the task's visible
check (the docstring examples, what the loop sees), and "picked" is the hidden verdict of the
first sample that passes it (the first sample when none does): best-of-K chosen as the loop
could choose, the fair comparison with the loop.

The hidden tests reach only `score_hidden`: the prompt is built from the task's goal, which
holds the HumanEval prompt alone.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent import prompts
from agent.candidate import parse_candidate
from agent.checks import execute
from agent.llm.base import LLM, Message, Usage
from agent.loop import LoopConfig
from agent.sandbox import Sandbox
from agent.task import Task
from scripts._humaneval_checks import SOLUTION, Problem, score_hidden


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance that at least one of k samples drawn from n (c of them correct) is correct.

    The unbiased estimator 1 - C(n-c, k) / C(n, k) (Chen et al. 2021, "Evaluating Large
    Language Models Trained on Code").
    """
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0  # every choice of k samples holds a correct one
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def candidate_budget(config: LoopConfig) -> int:
    """Distinct candidates the loop may check on one problem without lessons: up to
    `first_pool` in round 1, then up to `pool_size` per refinement round."""
    return config.first_pool + (config.max_rounds - 1) * config.pool_size


def k_values(samples: int, budget: int) -> tuple[int, ...]:
    """The k to report: 1, K, and the loop's candidate budget when K samples can estimate it."""
    ks = {1, samples} | ({budget} if budget <= samples else set())
    return tuple(sorted(ks))


def generator_messages(task: Task) -> list[Message]:
    """The loop's round-1 prompt for `task` with no lessons and no failure shown."""
    user = prompts.render_generator(task.goal, task.output, task.workspace_files(), "")
    return [
        Message(role="system", content=prompts.GENERATOR_SYSTEM),
        Message(role="user", content=user),
    ]


class HotSamples(BaseModel):
    """K plain samples of one problem and their hidden-test verdicts."""

    model_config = ConfigDict(frozen=True)

    temperature: float
    seeds: tuple[int, ...]
    passed: tuple[bool, ...]
    visible: tuple[bool, ...]  # each sample's verdict on the task's (visible) check
    digests: tuple[str, ...]
    usage: Usage
    seconds: float  # generation
    check_seconds: float  # the hidden tests in the sandbox


def draw_hot_samples(
    llm: LLM,
    sandbox: Sandbox,
    problem: Problem,
    task: Task,
    *,
    samples: int,
    config: LoopConfig,
) -> HotSamples:
    """Draw `samples` generations (seeds 1..K, so a deterministic backend gives K different
    draws) and score each on the hidden tests."""
    if samples < 1:
        raise ValueError(f"hot samples must be >= 1, got {samples}")
    messages = generator_messages(task)
    seeds = tuple(range(1, samples + 1))
    passed: list[bool] = []
    visible: list[bool] = []
    digests: list[str] = []
    usage, generating, checking = Usage(), 0.0, 0.0
    for seed in seeds:
        t0 = time.monotonic()
        completion = llm.complete(
            messages,
            temperature=config.resample_temperature,
            max_tokens=config.max_tokens,
            seed=seed,
        )
        t1 = time.monotonic()
        candidate = parse_candidate(completion.text, task.output)
        passed.append(score_hidden(sandbox, problem, candidate.files.get(SOLUTION)).passed)
        visible.append(
            SOLUTION in candidate.files and execute(task, candidate.files, sandbox=sandbox).passed
        )
        checking += time.monotonic() - t1
        generating += t1 - t0
        usage += completion.usage
        digests.append(candidate.digest()[:12])
    return HotSamples(
        temperature=config.resample_temperature,
        seeds=seeds,
        passed=tuple(passed),
        visible=tuple(visible),
        digests=tuple(digests),
        usage=usage,
        seconds=generating,
        check_seconds=checking,
    )


def hot_record(hot: HotSamples, budget: int) -> dict[str, Any]:
    """The problem's "hot" entry in the JSON; pass_at maps k (as text) to the estimate."""
    n, c = len(hot.passed), sum(hot.passed)
    return {
        "samples": n,
        "passed": c,
        "pass_at": {str(k): round(pass_at_k(n, c, k), 4) for k in k_values(n, budget)},
        "candidate_budget": budget,
        "temperature": hot.temperature,
        "seeds": list(hot.seeds),
        "sample_passed": list(hot.passed),
        "sample_visible": list(hot.visible),
        "picked_passed": picked(hot.passed, hot.visible),
        "distinct": len(set(hot.digests)),
        "tokens": {"prompt": hot.usage.prompt_tokens, "completion": hot.usage.completion_tokens},
        "seconds": round(hot.seconds, 2),
        "check_seconds": round(hot.check_seconds, 2),
    }


def picked(passed: Sequence[bool], visible: Sequence[bool]) -> bool:
    """The hidden verdict of the first sample the visible check passes (else the first)."""
    if not passed:
        return False
    return next((p for p, v in zip(passed, visible, strict=True) if v), passed[0])


def summarise_hot(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over the problems that have hot samples; {} when none has (the JSON keeps the
    shape of a run without them). A resumed run may mix problems with and without them, or
    with different K: pass@k is averaged over every hot problem for the k all of them have.
    """
    hot = [r["hot"] for r in records if "hot" in r]
    if not hot:
        return {}
    common = set.intersection(*(set(h["pass_at"]) for h in hot))
    budgets = {h["candidate_budget"] for h in hot}
    tokens = {k: sum(h["tokens"][k] for h in hot) for k in ("prompt", "completion")}
    return {
        "hot_problems": len(hot),
        "hot_samples_drawn": sum(h["samples"] for h in hot),
        "hot_samples_passed": sum(h["passed"] for h in hot),
        "hot_pass_at": {
            k: round(sum(pass_at_k(h["samples"], h["passed"], int(k)) for h in hot) / len(hot), 4)
            for k in sorted(common, key=int)
        },
        # Problems whose samples have visible verdicts (older records have none).
        "hot_picked_problems": sum("picked_passed" in h for h in hot),
        "hot_picked_passed": sum(bool(h.get("picked_passed")) for h in hot),
        "hot_candidate_budget": budgets.pop() if len(budgets) == 1 else None,
        "hot_tokens": tokens,
        "hot_tokens_per_problem": round(sum(tokens.values()) / len(hot), 1),
        "hot_seconds": round(sum(h["seconds"] + h["check_seconds"] for h in hot), 1),
    }
