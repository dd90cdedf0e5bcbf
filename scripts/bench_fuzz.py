"""Malformed model output at scale: N hypothesis cases per role through the real code.

    python scripts/bench_fuzz.py [--examples 500] [--roles generator critic ...]
                                 [--out bench-results/fuzz.json]

Roles and cases: scripts/fuzz_roles.py (the loop with the real sandbox and ScriptedLLM for
the generator, refiner and critic; the retrospective for its own answers). Figures per role
and category: cases tried, passes, crashes, false passes, untyped failures, escapes. Exit
status 1 when any case failed. tests/test_fuzz_model_output.py runs the same cases, fewer.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel, ConfigDict
from rich.console import Console
from rich.table import Table

from scripts._benchlib import REPO, write_json_atomic
from scripts.fuzz_roles import ROLES, Case, Outcome, default_sandbox


class RoleFigures(BaseModel):
    """What N cases of one role did."""

    model_config = ConfigDict(frozen=True)

    role: str
    cases: int
    passes: int
    crashes: int
    false_passes: int
    untyped: int
    escapes: int
    by_category: dict[str, int]
    failures: tuple[Outcome, ...]
    seconds: float


def run_role(role: str, examples: int) -> RoleFigures:
    """Draw `examples` cases of `role` with hypothesis and play each one."""
    strategy, play = ROLES[role]
    sandbox = default_sandbox()
    outcomes: list[Outcome] = []
    started = time.perf_counter()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=strategy)
    def one(case: Case) -> None:
        outcomes.append(play(case, sandbox))

    one()
    return RoleFigures(
        role=role,
        cases=len(outcomes),
        passes=sum(o.passed for o in outcomes),
        crashes=sum(o.crashed is not None for o in outcomes),
        false_passes=sum(o.false_pass for o in outcomes),
        untyped=sum(o.untyped for o in outcomes),
        escapes=sum(o.escaped for o in outcomes),
        by_category=dict(sorted(Counter(o.category for o in outcomes).items())),
        failures=tuple(o for o in outcomes if not o.ok),
        seconds=round(time.perf_counter() - started, 1),
    )


def _print(figures: list[RoleFigures]) -> None:
    console = Console()
    table = Table(title="malformed model output")
    for name in ("role", "cases", "passes", "crashes", "false passes", "untyped", "escapes", "s"):
        table.add_column(name, justify="left" if name == "role" else "right")
    for f in figures:
        table.add_row(
            f.role,
            *(
                str(v)
                for v in (
                    f.cases,
                    f.passes,
                    f.crashes,
                    f.false_passes,
                    f.untyped,
                    f.escapes,
                    f.seconds,
                )
            ),
        )
    console.print(table)
    for f in figures:
        cats = ", ".join(f"{k} {v}" for k, v in f.by_category.items())
        console.print(f"{f.role}: {cats}")
        for failure in f.failures[:10]:
            console.print(f"  FAILED {failure}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=500, help="cases per role")
    parser.add_argument("--roles", nargs="+", choices=sorted(ROLES), default=list(ROLES))
    parser.add_argument("--out", type=Path, default=REPO / "bench-results" / "fuzz.json")
    args = parser.parse_args(argv)
    figures = [run_role(role, args.examples) for role in args.roles]
    _print(figures)
    write_json_atomic(
        args.out, {"examples": args.examples, "roles": [f.model_dump() for f in figures]}
    )
    return 1 if any(f.failures for f in figures) else 0


if __name__ == "__main__":
    raise SystemExit(main())
