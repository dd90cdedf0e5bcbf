"""Trap family `missing`: empty cells and placeholders such as N/A, NULL, NaN."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


def holes(rng: random.Random, n: int, k: int) -> set[int]:
    return set(rng.sample(range(n), k))


@trap
def missing_grades(rng: random.Random) -> Trap:
    classes = ["7A", "7B", "8A"]
    picks = spread(rng, classes, 30)
    blank = holes(rng, 30, 8)
    groups: dict[str, list[float]] = {}
    rows = []
    for i, cls in enumerate(picks):
        if i in blank:
            rows.append([f"pupil{i + 1:02d}", cls, rng.choice(["", "N/A", "n/a", "-"])])
            continue
        score = float(rng.randint(35, 100))
        groups.setdefault(cls, []).append(score)
        rows.append([f"pupil{i + 1:02d}", cls, f"{score:g}"])
    aggs = [("graded", "count"), ("avg", "avg")]
    return Trap(
        family="missing",
        nn=1,
        domain="grades",
        goal="Write solution.py that reads grades.csv (columns student, class, score) and writes "
        "result.json with, per class, how many students have a score and the average of those "
        'scores rounded to 2 decimals: {"7A": {"graded": 9, "avg": 71.33}, ...}',
        files={"grades.csv": csv_bytes(["student", "class", "score"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("grades.csv")', "class", 'parse_optional(row["score"])', aggs, skip_none=True
        ),
        summary="empty, 'N/A' and '-' scores",
    )


@trap
def missing_humidity(rng: random.Random) -> Trap:
    stations = ["greenhouse", "cellar", "attic"]
    groups: dict[str, list[float]] = {}
    rows = []
    for station in stations:
        gaps = holes(rng, 10, 3)
        for hour in range(10):
            when = f"2026-06-01T{hour + 8:02d}:00"
            if hour in gaps:
                rows.append([station, when, rng.choice(["", "NULL", "NaN"])])
                continue
            value = round(rng.uniform(35, 90), 1)
            groups.setdefault(station, []).append(value)
            rows.append([station, when, f"{value:.1f}"])
    aggs = [("avg", "avg"), ("min", "min"), ("max", "max")]
    return Trap(
        family="missing",
        nn=2,
        domain="humidity",
        goal="Write solution.py "
        "that reads humidity.csv (columns station, time, humidity) and writes "
        "result.json with, per station, the average, minimum and maximum of the recorded "
        "humidity, rounded to 2 decimals: " + shape("cellar", aggs),
        files={"humidity.csv": csv_bytes(["station", "time", "humidity"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("humidity.csv")',
            "station",
            'parse_optional(row["humidity"])',
            aggs,
            skip_none=True,
        ),
        summary="empty, 'NULL' and 'NaN' readings",
    )


@trap
def missing_overtime(rng: random.Random) -> Trap:
    employees = ["Hana", "Ivan", "Jola", "Kofi"]
    totals: dict[str, float] = dict.fromkeys(employees, 0.0)
    rows = []
    for employee in employees:
        for week in range(1, 8):
            if rng.random() < 0.35:
                rows.append([employee, f"2026-W{week:02d}", rng.choice(["", "N/A", " "])])
                continue
            hours = rng.choice([0.5, 1, 1.5, 2, 3, 4.5, 6])
            totals[employee] += hours
            rows.append([employee, f"2026-W{week:02d}", f"{hours:g}"])
    code = """def main():
    totals = {}
    for row in read_rows("overtime.csv"):
        hours = parse_optional(row["overtime_hours"])
        totals[row["employee"]] = totals.get(row["employee"], 0.0) + (hours or 0.0)
    write_json("result.json", {e: round(h, 2) for e, h in sorted(totals.items())})
"""
    return Trap(
        family="missing",
        nn=3,
        domain="overtime",
        goal="Write solution.py "
        "that reads overtime.csv (columns employee, week, overtime_hours) and "
        "writes result.json mapping every employee in the file to their total overtime hours: "
        '{"Hana": 12.5, ...}',
        files={"overtime.csv": csv_bytes(["employee", "week", "overtime_hours"], rows)},
        expected={e: round(h, 2) for e, h in sorted(totals.items())},
        code=code,
        summary="empty and 'N/A' hours",
    )


@trap
def missing_prices(rng: random.Random) -> Trap:
    products = ["oat milk", "espresso beans", "rye bread", "olive oil"]
    stores = ["Corner", "Market", "Superstore", "Online", "Deli"]
    groups: dict[str, list[float]] = {}
    rows = []
    for product in products:
        gaps = holes(rng, len(stores), 2)
        base = rng.uniform(1.5, 14)
        for j, store in enumerate(stores):
            if j in gaps:
                rows.append([product, store, rng.choice(["N/A", "\u2014", ""])])
                continue
            price = round(base * rng.uniform(0.8, 1.3), 2)
            groups.setdefault(product, []).append(price)
            rows.append([product, store, f"{price:.2f}"])
    aggs = [("min", "min"), ("max", "max")]
    return Trap(
        family="missing",
        nn=4,
        domain="prices",
        goal="Write solution.py that reads prices.csv (columns product, store, price) and writes "
        "result.json with, per product, the lowest and the highest listed price: "
        + shape("rye bread", aggs),
        files={"prices.csv": csv_bytes(["product", "store", "price"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("prices.csv")',
            "product",
            'parse_optional(row["price"])',
            aggs,
            skip_none=True,
        ),
        summary="'N/A', em dash and empty prices",
    )
