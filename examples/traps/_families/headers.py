"""Trap family `headers`: CSV header names with stray whitespace and capitals."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


@trap
def headers_sales(rng: random.Random) -> Trap:
    regions = ["East", "North", "South", "West"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, region in enumerate(spread(rng, regions, 28)):
        amount = round(rng.uniform(20, 1500), 2)
        groups.setdefault(region, []).append(amount)
        rows.append([region, f"{amount:.2f}", f"2026-01-{1 + i % 28:02d}"])
    aggs = [("count", "count"), ("total", "total")]
    return Trap(
        family="headers",
        nn=1,
        domain="sales",
        goal="Write solution.py that reads sales.csv (region, amount and order date columns) and "
        "writes result.json with, per region, the number of sales and the total amount rounded "
        "to 2 decimals: " + shape("North", aggs),
        files={"sales.csv": csv_bytes([" Region ", "AMOUNT ", " Order_Date"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("sales.csv")', "region", 'float(row["amount"])', aggs),
        support=("write_json",),
        summary="header names with padding and capitals",
    )


@trap
def headers_attendance(rng: random.Random) -> Trap:
    courses = ["algebra", "biology", "chemistry"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, course in enumerate(spread(rng, courses, 27)):
        days = rng.randint(8, 40)
        groups.setdefault(course, []).append(days)
        rows.append([f"student{i + 1:02d}", course, days])
    aggs = [("count", "count"), ("avg", "avg")]
    return Trap(
        family="headers",
        nn=2,
        domain="attendance",
        goal="Write solution.py "
        "that reads attendance.csv (student, course and present_days columns) "
        "and writes result.json with, per course, the number of students and their average "
        "present_days rounded to 2 decimals: " + shape("algebra", aggs),
        files={"attendance.csv": csv_bytes(["Student ", " COURSE", "Present_Days "], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("attendance.csv")', "course", 'int(row["present_days"])', aggs
        ),
        support=("write_json",),
        summary="header names with padding and capitals",
    )


@trap
def headers_rainfall(rng: random.Random) -> Trap:
    stations = ["Bergen", "Cork", "Galway", "Oban"]
    groups: dict[str, list[float]] = {}
    rows = []
    for station in stations:
        for day in range(1, 8):
            mm = round(max(0.0, rng.uniform(-4, 22)), 1)
            groups.setdefault(station, []).append(mm)
            rows.append([station, f"2026-05-{day:02d}", f"{mm:.1f}"])
    aggs = [("total", "total"), ("max", "max")]
    return Trap(
        family="headers",
        nn=3,
        domain="rainfall",
        goal="Write solution.py that reads rainfall.csv (station, date and mm columns) and writes "
        "result.json with, per station, the total and the highest daily rainfall in mm, rounded "
        "to 2 decimals: " + shape("Cork", aggs),
        files={"rainfall.csv": csv_bytes(["STATION", " Date", " MM "], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("rainfall.csv")', "station", 'float(row["mm"])', aggs),
        support=("write_json",),
        summary="header names with padding and capitals",
    )
