"""Trap family `booleans`: yes/no, Y/N, TRUE/false and 1/0 written as words."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, spread, trap

TRUE_SPELLINGS = ["yes", "Yes", "Y", "y", "TRUE", "true", "1"]
FALSE_SPELLINGS = ["no", "No", "N", "n", "FALSE", "false", "0"]


def yes_no(rng: random.Random, value: bool, spellings: int = 7) -> str:
    return rng.choice((TRUE_SPELLINGS if value else FALSE_SPELLINGS)[:spellings])


@trap
def booleans_subscribers(rng: random.Random) -> Trap:
    plans = ["free", "pro", "team"]
    expected: dict[str, dict[str, int]] = {}
    rows = []
    for i, plan in enumerate(spread(rng, plans, 30)):
        active = rng.random() < 0.6
        stats = expected.setdefault(plan, {"subscribers": 0, "active": 0})
        stats["subscribers"] += 1
        stats["active"] += active
        rows.append([f"sub{i + 1}@mail.test", plan, yes_no(rng, active)])
    code = """def main():
    result = {}
    for row in read_rows("subscribers.csv"):
        stats = result.setdefault(row["plan"], {"subscribers": 0, "active": 0})
        stats["subscribers"] += 1
        if parse_bool(row["active"]):
            stats["active"] += 1
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="booleans",
        nn=1,
        domain="subscribers",
        goal="Write solution.py "
        "that reads subscribers.csv (columns email, plan, active) and writes "
        "result.json with, per plan, the number of subscribers and how many of them are active: "
        '{"pro": {"subscribers": 10, "active": 6}, ...}',
        files={"subscribers.csv": csv_bytes(["email", "plan", "active"], rows)},
        expected=dict(sorted(expected.items())),
        code=code,
        summary="yes/no, Y/N, TRUE/false, 1/0",
    )


@trap
def booleans_feedback(rng: random.Random) -> Trap:
    products = ["Blender X", "Kettle Pro", "Toaster Duo"]
    counts: dict[str, list[int]] = {}
    rows = []
    for i, product in enumerate(spread(rng, products, 27)):
        yes = rng.random() < 0.7
        acc = counts.setdefault(product, [0, 0])
        acc[0] += 1
        acc[1] += yes
        rows.append([f"r{i + 1}", product, yes_no(rng, yes, spellings=4)])
    expected = {
        p: {"responses": c[0], "recommend_pct": round(100 * c[1] / c[0], 2)}
        for p, c in sorted(counts.items())
    }
    code = """def main():
    counts = {}
    for row in read_rows("feedback.csv"):
        acc = counts.setdefault(row["product"], [0, 0])
        acc[0] += 1
        if parse_bool(row["would_recommend"]):
            acc[1] += 1
    result = {
        product: {"responses": total, "recommend_pct": round(100 * yes / total, 2)}
        for product, (total, yes) in sorted(counts.items())
    }
    write_json("result.json", result)
"""
    return Trap(
        family="booleans",
        nn=2,
        domain="feedback",
        goal="Write solution.py "
        "that reads feedback.csv (columns respondent, product, would_recommend) "
        "and writes result.json with, per product, the number of responses and the percentage "
        "of respondents who would recommend it, rounded to 2 decimals: "
        '{"Kettle Pro": {"responses": 9, "recommend_pct": 77.78}, ...}',
        files={"feedback.csv": csv_bytes(["respondent", "product", "would_recommend"], rows)},
        expected=expected,
        code=code,
        summary="Yes/no/Y/n answers",
    )


@trap
def booleans_inspections(rng: random.Random) -> Trap:
    sites = ["dock 1", "dock 2", "yard"]
    expected: dict[str, dict[str, int]] = {}
    rows = []
    for i, site in enumerate(spread(rng, sites, 24)):
        passed = rng.random() < 0.65
        stats = expected.setdefault(site, {"passed": 0, "failed": 0})
        stats["passed" if passed else "failed"] += 1
        rows.append(
            [site, rng.choice(["ola", "per", "quinn"]), f"2026-07-{1 + i:02d}", yes_no(rng, passed)]
        )
    code = """def main():
    result = {}
    for row in read_rows("inspections.csv"):
        stats = result.setdefault(row["site"], {"passed": 0, "failed": 0})
        stats["passed" if parse_bool(row["passed"]) else "failed"] += 1
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="booleans",
        nn=3,
        domain="inspections",
        goal="Write solution.py that reads inspections.csv (columns site, inspector, date, passed) "
        "and writes result.json with, per site, the number of passed and of failed inspections: "
        '{"yard": {"passed": 5, "failed": 2}, ...}',
        files={"inspections.csv": csv_bytes(["site", "inspector", "date", "passed"], rows)},
        expected=dict(sorted(expected.items())),
        code=code,
        summary="Y/N, yes/NO, TRUE/0",
    )
