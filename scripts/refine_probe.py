"""Re-ask the refiner one recorded repair, and check what it answers now.

    python scripts/refine_probe.py RUN.json --round 3 --k 3 --tasks examples/traps \
        [--feedback recorded|current] [--model SPEC] [--out probe.jsonl]

A stream's failing task often hinges on one repair: the refiner saw a candidate and its
check result and did not fix it. This rebuilds that request from a kept run
(`bench_learning.py --keep-stores --out DIR` keeps DIR/runs/*.json, each an
`agent.result.RunResult`): the candidate round ROUND repaired, the check result it was
shown (`recorded`), or that candidate checked again in the sandbox by today's code
(`current`, the default: what a change to the feedback would show it), the fixes the
earlier rounds' chosen candidates tried, and the refiner prompt as the loop renders it
(`agent.prompts.refiner_messages`; no lessons: a run's recalled lessons are not kept with
it). Then one greedy and K hot answers (temperature 0.8, seeds 1..K), each checked in the
sandbox with the task's check. Prints the feedback shown and one line per answer; `--out`
appends them as JSON lines. Runs the model: one at a time.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.candidate import parse_candidate
from agent.checks import execute
from agent.container import Limits
from agent.imports import complete_imports
from agent.prompts import refiner_messages
from agent.result import RunResult
from agent.sandbox import Sandbox
from agent.splice import programs_of, splice_repair
from agent.task import load_task

HOT = 0.8


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="a kept run's JSON (an agent.result.RunResult)")
    ap.add_argument("--round", type=int, required=True, help="the refine round to ask again")
    ap.add_argument("--k", type=int, default=3, help="hot answers after the greedy one")
    ap.add_argument("--tasks", type=Path, default=Path("examples/traps"))
    ap.add_argument("--feedback", choices=("recorded", "current"), default="current")
    ap.add_argument("--model", default=None, help="default: LESSONLOOP_MODEL, else local")
    ap.add_argument("--max-tokens", type=int, default=1024)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--show", action="store_true", help="print each answer whole")
    a = ap.parse_args(argv)

    from agent.app.settings import Settings
    from agent.llm.resolve import resolve_llm

    if a.out:  # before any model call: a bad --out must not cost a generation
        a.out.parent.mkdir(parents=True, exist_ok=True)
    run = RunResult.model_validate_json(a.run.read_text())
    rounds = {r.round: r for r in run.rounds}
    probed = rounds.get(a.round)
    repairs = probed.base_round if probed is not None else None
    if repairs is None or repairs not in rounds:
        raise SystemExit(f"round {a.round} of {a.run} is no recorded repair")
    base = rounds[repairs]
    task = load_task(a.tasks / run.task_id)
    sandbox = Sandbox(Limits(cpu_s=60))
    checks = base.checks
    if a.feedback == "current":
        checks = (execute(task, base.candidate.files, sandbox=sandbox),)
    verdict = checks[-1]
    # The fixes the chosen candidates of the rounds before tried (the loop also lists the
    # notes of the other draws of their pools, which a run does not keep).
    tried = [r.candidate.fix_note for r in run.rounds[1 : a.round - 1] if r.candidate.fix_note]
    messages = refiner_messages(
        task,
        base.candidate,
        checks,
        repairs,
        tried=list(dict.fromkeys(tried)),
        lessons="",
        inputs=task.workspace_files(),
    )
    print(f"{run.task_id} round {a.round} repairs round {repairs}; {a.feedback} feedback:")
    print(verdict.compressed())

    settings = Settings.from_env(model=a.model)
    llm = resolve_llm(settings.model, settings)
    records: list[dict[str, object]] = []
    for draw in range(a.k + 1):
        temperature = 0.0 if draw == 0 else HOT
        started = time.monotonic()
        completion = llm.complete(
            messages, temperature=temperature, max_tokens=a.max_tokens, seed=draw
        )
        # As the loop's repair step makes a candidate of an answer (`agent.loop`): fragments
        # completed from the repaired program, forgotten standard-library imports added.
        answer = parse_candidate(completion.text, task.output)
        candidate = complete_imports(splice_repair(base.candidate, answer, programs_of(task)))
        if all(name in candidate.files for name in task.output):
            feedback = execute(task, candidate.files, sandbox=sandbox)
            kind, credit, said = feedback.kind, feedback.credit, feedback.summary
        else:
            kind, credit, said = "no_files", None, "the answer had no complete file"
        record = {
            "run": str(a.run),
            "task": run.task_id,
            "round": a.round,
            "feedback": a.feedback,
            "draw": draw,
            "temperature": temperature,
            "kind": kind,
            "credit": credit,
            "summary": said[:200],
            "fix_note": candidate.fix_note,
            "tokens": completion.usage.completion_tokens,
            "seconds": round(time.monotonic() - started, 1),
        }
        records.append(record)
        print(json.dumps(record), flush=True)
        if a.show:
            print(completion.text, flush=True)
        if a.out:
            with a.out.open("a") as out:
                out.write(json.dumps(record) + "\n")
    passed = sum(r["kind"] == "success" for r in records)
    print(f"passed {passed} of {len(records)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
