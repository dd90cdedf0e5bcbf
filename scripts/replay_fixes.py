"""Replay `agent.transplant.failure_fix` on the passing runs a benchmark kept, without a model.

    python scripts/replay_fixes.py /work/bench-out/s26/stream12/runs [more run dirs] \
        --tasks examples/traps --out fixes.json

For every run JSON (`bench_learning.py --out DIR` keeps DIR/runs/*.json, each an
`agent.result.RunResult`) that passed after a failure: the failure the pass repaired (its
line of repairs, as the retrospective reads it), the change a lesson showed for it (the
reduced change when the run kept one, else the whole one, told by
`retrospectives.change.diff_summary`) and the failure's own fix, found and checked now in
the sandbox with the task's check. Prints one block per run and the counts: runs with a
failure to fix, how many got a fix, and the characters of the change told each way.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agent.candidate import Candidate
from agent.checks import execute
from agent.container import Limits
from agent.feedback import Feedback
from agent.result import RunResult
from agent.sandbox import Sandbox
from agent.task import load_task
from agent.transplant import failure_fix
from retrospectives.change import diff_summary
from retrospectives.facts import WHOLE, candidate_diff, line_of


def replay(run: RunResult, tasks: Path, sandbox: Sandbox) -> dict[str, object] | None:
    """The run's repaired failure, the change told for it, and its fix; None when the run
    did not pass after a failure."""
    attempts = run.attempts
    passed_at = next((k for k, r in enumerate(attempts) if r.feedback.passed), None)
    if passed_at is None:
        return None
    line = line_of(run, passed_at)
    base_at = next((k for k, by in line.items() if by == passed_at), None)
    if base_at is None:
        return None
    base, passing = attempts[base_at], attempts[passed_at]
    after = passing.candidate
    if run.verified_files and run.verified_base == base.candidate.digest():
        after = after.model_copy(update={"files": run.verified_files})
    task = load_task(tasks / run.task_id)

    def judge(files: Mapping[str, str]) -> Feedback:
        return execute(task, files, sandbox=sandbox)

    fix = failure_fix(base.candidate.files, after.files, base.feedback, judge)
    told = diff_summary(candidate_diff(base.candidate, after, None, WHOLE))
    fixed = Candidate(files=fix, text="") if fix is not None else None
    own = diff_summary(candidate_diff(base.candidate, fixed, None, WHOLE)) if fixed else ""
    return {
        "run": run.run_id,
        "task": run.task_id,
        "failure": f"{base.feedback.kind} {base.feedback.error_type or ''} "
        f"at {base.feedback.location}: {base.feedback.key_message or ''}"[:200],
        "change": told,
        "failure_fix": own,
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("runs_dirs", type=Path, nargs="+")
    p.add_argument("--tasks", type=Path, default=Path("examples/traps"))
    p.add_argument("--out", type=Path)
    a = p.parse_args(argv)
    sandbox = Sandbox(Limits(cpu_s=30))
    rows = []
    for runs_dir in a.runs_dirs:
        for f in sorted(runs_dir.glob("*.json")):
            run = RunResult.model_validate_json(f.read_text(encoding="utf-8"))
            if not (a.tasks / run.task_id).is_dir():
                continue
            row = replay(run, a.tasks, sandbox)
            if row is None:
                continue
            rows.append({"file": str(f), **row})
            print(f"{f.name} {row['task']}\n  failure: {row['failure']}")
            print(f"  change:  {row['change']}\n  its fix: {row['failure_fix'] or '-'}\n")
    fixed = [r for r in rows if r["failure_fix"]]
    figures = {
        "runs_with_a_repaired_failure": len(rows),
        "with_a_failure_fix": len(fixed),
        "mean_chars_change": round(sum(len(str(r["change"])) for r in fixed) / max(1, len(fixed))),
        "mean_chars_failure_fix": round(
            sum(len(str(r["failure_fix"])) for r in fixed) / max(1, len(fixed))
        ),
    }
    print(json.dumps(figures))
    if a.out:
        a.out.write_text(json.dumps({"figures": figures, "runs": rows}, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
