"""Trap family `semicolon`: CSV files delimited by semicolons."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


@trap
def semicolon_shipments(rng: random.Random) -> Trap:
    carriers = ["DHL", "FedEx", "GLS", "UPS"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, carrier in enumerate(spread(rng, carriers, 28)):
        weight = round(rng.uniform(0.4, 48), 2)
        groups.setdefault(carrier, []).append(weight)
        rows.append([f"SH{9100 + i}", carrier, f"{weight:.2f}", f"{rng.uniform(4, 90):.2f}"])
    aggs = [("count", "count"), ("total_weight", "total")]
    return Trap(
        family="semicolon",
        nn=1,
        domain="shipments",
        goal="Write solution.py that reads shipments.csv (columns shipment_id, carrier, weight_kg, "
        "cost) and writes result.json with, per carrier, the number of shipments and their total "
        'weight in kg rounded to 2 decimals: {"DHL": {"count": 3, "total_weight": 12.5}, ...}',
        files={
            "shipments.csv": csv_bytes(
                ["shipment_id", "carrier", "weight_kg", "cost"], rows, delimiter=";"
            )
        },
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("shipments.csv")', "carrier", 'float(row["weight_kg"])', aggs),
        support=("write_json",),
        summary="semicolon-delimited CSV",
    )


@trap
def semicolon_timesheets(rng: random.Random) -> Trap:
    projects = ["apollo", "borealis", "cobalt"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, project in enumerate(spread(rng, projects, 27)):
        hours = rng.choice([0.5, 1, 1.5, 2, 2.5, 3, 4, 6, 7.5, 8])
        groups.setdefault(project, []).append(hours)
        rows.append(
            [
                rng.choice(["mia", "noah", "omar", "pia"]),
                project,
                f"2026-02-{2 + i % 20:02d}",
                f"{hours:g}",
            ]
        )
    groups_expected = {p: round(sum(v), 2) for p, v in sorted(groups.items())}
    code = """def main():
    totals = {}
    for row in read_rows("timesheets.csv"):
        totals[row["project"]] = totals.get(row["project"], 0.0) + float(row["hours"])
    write_json("result.json", {p: round(h, 2) for p, h in sorted(totals.items())})
"""
    return Trap(
        family="semicolon",
        nn=2,
        domain="timesheets",
        goal="Write solution.py "
        "that reads timesheets.csv (columns employee, project, date, hours) and "
        'writes result.json mapping each project to its total hours: {"apollo": 31.5, ...}',
        files={
            "timesheets.csv": csv_bytes(
                ["employee", "project", "date", "hours"], rows, delimiter=";"
            )
        },
        expected=groups_expected,
        code=code,
        support=("write_json",),
        summary="semicolon-delimited CSV",
    )


@trap
def semicolon_water(rng: random.Random) -> Trap:
    meters = ["W-11", "W-12", "W-13"]
    groups: dict[str, list[float]] = {}
    rows = []
    for meter in meters:
        for day in range(1, 9):
            m3 = round(rng.uniform(0.2, 3.8), 3)
            groups.setdefault(meter, []).append(m3)
            rows.append([meter, f"2026-04-{day:02d}", f"{m3:.3f}"])
    aggs = [("total", "total"), ("max", "max")]
    return Trap(
        family="semicolon",
        nn=3,
        domain="water",
        goal="Write solution.py "
        "that reads water.csv (columns meter, date, m3) and writes result.json "
        "with, per meter, the total and the highest daily consumption in m3, rounded to "
        "2 decimals: " + shape("W-11", aggs),
        files={"water.csv": csv_bytes(["meter", "date", "m3"], rows, delimiter=";")},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("water.csv")', "meter", 'float(row["m3"])', aggs),
        support=("write_json",),
        summary="semicolon-delimited CSV",
    )
