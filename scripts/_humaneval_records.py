"""The JSON record of one HumanEval problem, the totals over a run, and how they are shown.

`problem_record` turns one loop run and its two hidden-test scores into the record
`scripts/bench_humaneval.py` writes; `summarise` totals the records, `write_json` rewrites
the result file atomically, `print_summary` and `one_line` show them, and
`resumable_records` takes the records of an earlier run back for `--resume`. A record may hold
a "hot" entry (`--hot-samples`, scripts/_humaneval_hot.py); the totals and the table show it
only where some record has one, so a run without it keeps its shape.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from agent.candidate import Candidate, parse_candidate
from agent.llm.base import Completion, Usage
from agent.result import RoundRecord, RunResult
from scripts._humaneval_checks import SOLUTION, HiddenScore, Problem
from scripts._humaneval_hot import summarise_hot


def _tokens(usage: Usage) -> dict[str, int]:
    return {"prompt": usage.prompt_tokens, "completion": usage.completion_tokens}


def _round_record(record: RoundRecord) -> dict[str, Any]:
    feedback = record.feedback
    return {
        "round": record.round,
        "action": record.action,
        "kind": feedback.kind,
        "stage": feedback.stage,
        "feedback": feedback.compressed(),
        "resamples": record.resamples,
        "tokens": _tokens(record.usage),
        "seconds": round(record.seconds, 2),
        "digest": record.candidate.digest()[:12],
        "fix_note": record.candidate.fix_note,
        "reply": record.candidate.text,
    }


def _refiner_gave_up(result: RunResult) -> bool:
    """A stall where every refiner sample repeated an earlier answer (no new round was made)."""
    if result.stop_reason != "stall":
        return False
    rounds = result.rounds
    base = rounds[-1].base_round
    # The last round failed as the round it repaired did: a real stall, not a give-up.
    return base is None or rounds[-1].feedback.signature() != rounds[base - 1].feedback.signature()


class SingleShot(BaseModel):
    """The loop's greedy round-1 generation: what a single-shot run would hand in."""

    model_config = ConfigDict(frozen=True)

    candidate: Candidate
    visible_passed: bool
    usage: Usage
    seconds: float

    @classmethod
    def of(cls, result: RunResult, first_reply: Completion[Any], seconds: float) -> SingleShot:
        """The run's first (greedy) reply, `seconds` its generation: round 1's chosen candidate
        when the round kept only it, else one of its pool (the round searched because the
        greedy one failed the visible check)."""
        first = result.rounds[0]
        if not first.pool:
            candidate, passed = first.candidate, first.feedback.passed
        else:
            candidate = parse_candidate(first_reply.text, (SOLUTION,))
            passed = next(e for e in first.pool if e.origin == "generate").kind == "success"
        return cls(
            candidate=candidate, visible_passed=passed, usage=first_reply.usage, seconds=seconds
        )


def problem_record(
    problem: Problem,
    n_examples: int,
    result: RunResult,
    shot: SingleShot,
    scores: tuple[HiddenScore, HiddenScore],
    metered: tuple[Usage, int],
) -> dict[str, Any]:
    """The JSON record of one problem; `scores` is (single shot, loop)."""
    single, loop = scores
    usage, repeats = metered
    outcome = "same"
    if loop.passed != single.passed:
        outcome = "fixed" if loop.passed else "broke"
    return {
        "task_id": problem["task_id"],
        "entry_point": problem["entry_point"],
        "visible_examples": n_examples,
        "outcome": outcome,
        "round1_digest": shot.candidate.digest()[:12],
        "single": {
            "hidden_passed": single.passed,
            "visible_passed": shot.visible_passed,
            "tokens": _tokens(shot.usage),
            "seconds": round(shot.seconds, 2),
            "hidden_detail": single.detail,
        },
        "loop": {
            "hidden_passed": loop.passed,
            "visible_passed": result.passed,
            "best_round": result.best_round,
            "rounds": len(result.rounds),
            "stop_reason": result.stop_reason,
            "refiner_gave_up": _refiner_gave_up(result),
            "resamples": sum(r.resamples for r in result.rounds),
            "round1_candidates": max(1, len(result.rounds[0].pool)),
            "refiner_calls": usage.calls - result.rounds[0].usage.calls,
            "refiner_repeats": repeats,
            "tokens": _tokens(usage),
            "seconds": round(result.seconds, 2),
            "hidden_detail": loop.detail,
        },
        "rounds": [_round_record(r) for r in result.rounds],
    }


def summarise(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Totals over the problems done so far."""
    n = len(records)

    def total(cond: str, key: str) -> float:
        return float(sum(r[cond][key] for r in records))

    def tokens(cond: str) -> dict[str, int]:
        return {k: sum(r[cond]["tokens"][k] for r in records) for k in ("prompt", "completion")}

    refine_rounds = sum(r["loop"]["rounds"] - 1 for r in records)
    return {
        "problems": n,
        "with_visible_examples": sum(1 for r in records if r["visible_examples"]),
        "single_passed": int(total("single", "hidden_passed")),
        "loop_passed": int(total("loop", "hidden_passed")),
        "single_pass_at_1": round(total("single", "hidden_passed") / n, 4) if n else 0.0,
        "loop_pass_at_1": round(total("loop", "hidden_passed") / n, 4) if n else 0.0,
        "single_visible_passed": int(total("single", "visible_passed")),
        "loop_visible_passed": int(total("loop", "visible_passed")),
        "fixed": sum(1 for r in records if r["outcome"] == "fixed"),
        "broke": sum(1 for r in records if r["outcome"] == "broke"),
        "problems_refined": sum(1 for r in records if not r["single"]["visible_passed"]),
        "refine_rounds": refine_rounds,
        "resamples": int(total("loop", "resamples")),
        "refiner_calls": int(total("loop", "refiner_calls")),
        "refiner_repeats": int(total("loop", "refiner_repeats")),
        "refiner_gave_up": sum(1 for r in records if r["loop"]["refiner_gave_up"]),
        "stop_reasons": dict(Counter(r["loop"]["stop_reason"] for r in records)),
        "single_tokens": tokens("single"),
        "loop_tokens": tokens("loop"),
        "single_seconds": round(total("single", "seconds"), 1),
        "loop_seconds": round(total("loop", "seconds"), 1),
        **summarise_hot(records),
    }


def write_json(path: Path, meta: Mapping[str, Any], records: Sequence[Mapping[str, Any]]) -> None:
    """Atomic rewrite: an interrupt mid-write never leaves a truncated file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    payload = {**meta, "summary": summarise(records), "problems": list(records)}
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(payload, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def print_summary(console: Console, summary: Mapping[str, Any]) -> None:
    hot = summary.get("hot_problems", 0)
    table = Table(title=f"HumanEval, {summary['problems']} problems")
    table.add_column("")
    table.add_column("single shot", justify="right")
    table.add_column("loop", justify="right")
    if hot:
        of = "" if hot == summary["problems"] else f", {hot} problems"
        table.add_column(f"hot samples{of}", justify="right")
    conds = ("single", "loop")

    def row(label: str, cells: Sequence[str], hot_cell: str) -> None:
        table.add_row(label, *cells, *((hot_cell,) if hot else ()))

    pass_at = summary.get("hot_pass_at", {})
    row(
        "pass@1 (hidden tests)",
        [f"{summary[c + '_passed']} ({summary[c + '_pass_at_1']:.1%})" for c in conds],
        f"{pass_at.get('1', 0.0):.1%} ({summary.get('hot_samples_passed')} of "
        f"{summary.get('hot_samples_drawn')} samples)",
    )
    for k in (k for k in pass_at if k != "1"):
        budget = " (= the loop's budget)" if int(k) == summary["hot_candidate_budget"] else ""
        row(f"pass@{k}{budget}", ["", ""], f"{pass_at[k]:.1%}")
    if summary.get("hot_picked_problems"):
        row(
            "picked by the visible check",
            ["", ""],
            f"{summary['hot_picked_passed']} of {summary['hot_picked_problems']} problems",
        )
    row("visible checks passed", [str(summary[c + "_visible_passed"]) for c in conds], "")

    def tokens(c: str) -> str:
        used = summary.get(c + "_tokens", {})
        return f"{used.get('prompt')} / {used.get('completion')}"

    row("tokens prompt / completion", [tokens(c) for c in conds], tokens("hot"))
    if hot:
        per = [f"{sum(summary[c + '_tokens'].values()) / summary['problems']:.0f}" for c in conds]
        row("tokens per problem", per, f"{summary['hot_tokens_per_problem']:.0f}")
    row(
        "wall time (s)",
        [f"{summary[c + '_seconds']:.0f}" for c in conds],
        f"{summary.get('hot_seconds', 0.0):.0f}",
    )
    console.print(table)
    console.print(
        f"loop fixed {summary['fixed']}, broke {summary['broke']}; "
        f"{summary['problems_refined']} problems refined in {summary['refine_rounds']} rounds, "
        f"{summary['resamples']} resamples; {summary['refiner_repeats']} of "
        f"{summary['refiner_calls']} refiner answers repeated an earlier candidate; "
        f"refiner gave up (only repeats) on "
        f"{summary['refiner_gave_up']}; stop reasons {summary['stop_reasons']}; "
        f"{summary['with_visible_examples']} problems had docstring examples"
    )


def resumable_records(previous: Mapping[str, Any], meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The records of an earlier run, if it used the same model and loop settings."""
    for key in ("spec", "model", "config"):
        if previous.get(key) != meta[key]:
            raise ValueError(f"it was run with {key}={previous.get(key)!r}, not {meta[key]!r}")
    # Wall time adds up across sessions; backend errors are retried.
    meta["seconds"] = float(previous.get("seconds", 0.0))
    meta["resumed"] = previous.get("resumed", 0) + 1
    return list(previous["problems"])


def one_line(record: Mapping[str, Any]) -> str:
    """A log line per problem (a nohup log shows no progress bar)."""
    loop = record["loop"]

    def mark(passed: bool) -> str:
        return "pass" if passed else "FAIL"

    hot = record.get("hot")
    return (
        f"{record['task_id']}: single {mark(record['single']['hidden_passed'])}, "
        f"loop {mark(loop['hidden_passed'])} ({record['outcome']}); rounds {loop['rounds']}, "
        f"stop {loop['stop_reason']}, repeats {loop['refiner_repeats']}/{loop['refiner_calls']}, "
        f"{loop['seconds']:.0f} s"
        + (f"; hot samples {hot['passed']}/{hot['samples']} passed" if hot else "")
    )
