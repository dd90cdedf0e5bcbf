"""Trap family `percent`: percentages written as strings with a % sign."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


@trap
def percent_survey(rng: random.Random) -> Trap:
    teams = ["Alpha", "Bravo", "Charlie", "Delta"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, team in enumerate(spread(rng, teams, 30)):
        value = round(rng.randrange(200, 1001) / 10 / 2.5) * 2.5  # 20.0 .. 100.0 in 2.5 steps
        groups.setdefault(team, []).append(value)
        text = f"{value:g}%"
        rows.append([f"R{300 + i}", team, text])
    aggs = [("avg", "avg"), ("min", "min")]
    return Trap(
        family="percent",
        nn=1,
        domain="survey",
        goal="Write solution.py that reads survey.csv (columns respondent, team, completion) and "
        "writes result.json with, per team, the average and the lowest completion as "
        "percentages rounded to 2 decimals: " + shape("Alpha", aggs),
        files={"survey.csv": csv_bytes(["respondent", "team", "completion"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("survey.csv")', "team", 'parse_percent(row["completion"])', aggs
        ),
        summary="completion like '87.5%'",
    )


@trap
def percent_discounts(rng: random.Random) -> Trap:
    products = {"Desk": 320.0, "Chair": 145.0, "Lamp": 39.9, "Shelf": 89.5}
    sums: dict[str, list[float]] = {}
    rows = []
    for i, product in enumerate(spread(rng, list(products), 26)):
        discount = rng.choice([0, 0, 5, 7.5, 10, 15, 20, 25])
        price = products[product]
        acc = sums.setdefault(product, [0, 0.0])
        acc[0] += 1
        acc[1] += price * (1 - discount / 100)
        text = rng.choice([f"{discount:g}%", f"{discount:g} %"])
        rows.append([f"SO-{880 + i}", product, f"{price:.2f}", text])
    expected = {
        p: {"orders": int(v[0]), "net_revenue": round(v[1], 2)} for p, v in sorted(sums.items())
    }
    code = """def main():
    result = {}
    for row in read_rows("sales.csv"):
        net = float(row["list_price"]) * (1 - parse_percent(row["discount"]) / 100)
        totals = result.setdefault(row["product"], {"orders": 0, "net_revenue": 0.0})
        totals["orders"] += 1
        totals["net_revenue"] += net
    for totals in result.values():
        totals["net_revenue"] = round(totals["net_revenue"], 2)
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="percent",
        nn=2,
        domain="discounts",
        goal="Write solution.py "
        "that reads sales.csv (columns order_id, product, list_price, discount) "
        "and writes result.json with, per product, the number of orders and the net revenue "
        "(sum of list_price reduced by the order's discount), rounded to 2 decimals: "
        '{"Desk": {"orders": 3, "net_revenue": 812.4}, ...}',
        files={"sales.csv": csv_bytes(["order_id", "product", "list_price", "discount"], rows)},
        expected=expected,
        code=code,
        summary="discounts like '15%' and '7.5 %'",
    )


@trap
def percent_battery(rng: random.Random) -> Trap:
    sites = ["north", "south", "east"]
    sums: dict[str, list[int]] = {}
    rows = []
    for i, site in enumerate(spread(rng, sites, 24)):
        level = rng.randint(3, 100)
        acc = sums.setdefault(site, [0, 0])
        acc[0] += 1
        acc[1] += level < 20
        rows.append([f"dev-{i + 1:03d}", site, f"{level}%"])
    expected = {s: {"devices": v[0], "low": v[1]} for s, v in sorted(sums.items())}
    code = """def main():
    result = {}
    for row in read_rows("devices.csv"):
        counts = result.setdefault(row["site"], {"devices": 0, "low": 0})
        counts["devices"] += 1
        if parse_percent(row["battery"]) < 20:
            counts["low"] += 1
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="percent",
        nn=3,
        domain="battery",
        goal="Write solution.py "
        "that reads devices.csv (columns device_id, site, battery) and writes "
        "result.json with, per site, the number of devices and how many of them have a battery "
        'level below 20 percent: {"north": {"devices": 8, "low": 2}, ...}',
        files={"devices.csv": csv_bytes(["device_id", "site", "battery"], rows)},
        expected=expected,
        code=code,
        summary="battery levels like '45%'",
    )


@trap
def percent_growth(rng: random.Random) -> Trap:
    regions = ["APAC", "EMEA", "LATAM", "NA"]
    groups: dict[str, list[float]] = {}
    rows = []
    for region in regions:
        for year in (2024, 2025):
            for q in range(1, 5):
                value = round(rng.uniform(-6, 9), 1)
                groups.setdefault(region, []).append(value)
                rows.append([region, f"{year}-Q{q}", f"{value:+.1f}%"])
    aggs = [("avg", "avg"), ("max", "max")]
    return Trap(
        family="percent",
        nn=4,
        domain="growth",
        goal="Write solution.py that reads kpis.csv (columns region, quarter, growth) and writes "
        "result.json with, per region, the average and the highest quarterly growth as "
        "percentages rounded to 2 decimals: " + shape("EMEA", aggs),
        files={"kpis.csv": csv_bytes(["region", "quarter", "growth"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("kpis.csv")', "region", 'parse_percent(row["growth"])', aggs),
        summary="growth like '+3.2%' and '-1.5%'",
    )
