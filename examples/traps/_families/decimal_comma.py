"""Trap family `decimal_comma`: numbers with a decimal comma (dots as thousands separators)."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


def comma_decimal(value: float, places: int, thousands: bool = False) -> str:
    text = f"{value:,.{places}f}" if thousands else f"{value:.{places}f}"
    return text.replace(",", "_").replace(".", ",").replace("_", ".")


@trap
def decimal_comma_sensors(rng: random.Random) -> Trap:
    sensors = ["T-01", "T-02", "T-03", "T-04"]
    base = {"T-01": 21.0, "T-02": 18.5, "T-03": -2.0, "T-04": 30.0}
    groups: dict[str, list[float]] = {}
    rows = []
    for i, sensor in enumerate(spread(rng, sensors, 32)):
        value = round(base[sensor] + rng.uniform(-4, 4), 1)
        groups.setdefault(sensor, []).append(value)
        recorded = f"2026-03-01 {i // 4:02d}:{15 * (i % 4):02d}"
        rows.append([sensor, recorded, comma_decimal(value, 1)])
    aggs = [("min", "min"), ("max", "max"), ("avg", "avg")]
    return Trap(
        family="decimal_comma",
        nn=1,
        domain="sensors",
        goal="Write solution.py "
        "that reads readings.csv (columns sensor, recorded, temperature_c) and "
        "writes result.json with, per sensor, the minimum, maximum and average temperature, "
        "rounded to 2 decimals: " + shape("T-01", aggs),
        files={"readings.csv": csv_bytes(["sensor", "recorded", "temperature_c"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("readings.csv")', "sensor", 'parse_number(row["temperature_c"])', aggs
        ),
        summary="temperatures like '21,4' and '-3,5'",
    )


@trap
def decimal_comma_lab(rng: random.Random) -> Trap:
    analytes = {
        "glucose": (4.0, 7.5),
        "sodium": (135, 146),
        "potassium": (3.4, 5.2),
        "calcium": (2.1, 2.6),
    }
    groups: dict[str, list[float]] = {}
    rows = []
    for i, analyte in enumerate(spread(rng, list(analytes), 30)):
        lo, hi = analytes[analyte]
        value = round(rng.uniform(lo, hi), 2)
        groups.setdefault(analyte, []).append(value)
        rows.append([f"S{7100 + i}", analyte, comma_decimal(value, 2)])
    aggs = [("count", "count"), ("avg", "avg")]
    return Trap(
        family="decimal_comma",
        nn=2,
        domain="lab",
        goal="Write solution.py "
        "that reads lab_results.tsv (tab-separated; columns sample_id, analyte, "
        "value) and writes result.json with, per analyte, the number of results and the average "
        "value rounded to 2 decimals: " + shape("glucose", aggs),
        files={
            "lab_results.tsv": csv_bytes(["sample_id", "analyte", "value"], rows, delimiter="\t")
        },
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("lab_results.tsv", delimiter="\\t")',
            "analyte",
            'parse_number(row["value"])',
            aggs,
        ),
        summary="tab-separated values like '5,12'",
    )


@trap
def decimal_comma_fuel(rng: random.Random) -> Trap:
    stations = ["Aral Mitte", "Shell Nord", "Total Ost"]
    expected: dict[str, dict[str, float]] = {}
    sums: dict[str, list[float]] = {}
    rows = []
    for i, station in enumerate(spread(rng, stations, 22)):
        litres = round(rng.uniform(18, 65), 2)
        price = round(rng.uniform(1.62, 1.95), 2)
        acc = sums.setdefault(station, [0.0, 0.0])
        acc[0] += litres
        acc[1] += litres * price
        rows.append(
            [f"2026-01-{1 + i:02d}", station, comma_decimal(litres, 2), comma_decimal(price, 2)]
        )
    for station in sorted(sums):
        expected[station] = {
            "litres": round(sums[station][0], 2),
            "cost": round(sums[station][1], 2),
        }
    code = """def main():
    result = {}
    for row in read_rows("fuel_log.csv"):
        litres = parse_number(row["litres"])
        price = parse_number(row["price_per_litre"])
        totals = result.setdefault(row["station"], {"litres": 0.0, "cost": 0.0})
        totals["litres"] += litres
        totals["cost"] += litres * price
    for totals in result.values():
        totals["litres"] = round(totals["litres"], 2)
        totals["cost"] = round(totals["cost"], 2)
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="decimal_comma",
        nn=3,
        domain="fuel",
        goal="Write solution.py that reads fuel_log.csv (columns date, station, litres, "
        "price_per_litre) and writes result.json with, per station, the total litres and the "
        "total cost (sum of litres * price_per_litre), rounded to 2 decimals: "
        '{"Shell Nord": {"litres": 120.5, "cost": 210.37}, ...}',
        files={"fuel_log.csv": csv_bytes(["date", "station", "litres", "price_per_litre"], rows)},
        expected=expected,
        code=code,
        summary="litres '42,17' and prices '1,79'",
    )


@trap
def decimal_comma_energy(rng: random.Random) -> Trap:
    meters = ["M-100", "M-200", "M-300"]
    groups: dict[str, list[float]] = {}
    rows = []
    for meter in meters:
        for month in range(1, 9):
            value = round(rng.uniform(380, 2900), 1)
            groups.setdefault(meter, []).append(value)
            rows.append([meter, f"2025-{month:02d}", comma_decimal(value, 1, thousands=True)])
    aggs = [("total", "total"), ("max", "max")]
    return Trap(
        family="decimal_comma",
        nn=4,
        domain="energy",
        goal="Write solution.py that reads meters.csv (columns meter, month, kwh) and writes "
        "result.json with, per meter, the total consumption in kWh and the highest monthly "
        "consumption, rounded to 2 decimals: " + shape("M-100", aggs),
        files={"meters.csv": csv_bytes(["meter", "month", "kwh"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("meters.csv")', "meter", 'parse_number(row["kwh"])', aggs),
        summary="consumption like '1.234,5' and '845,2'",
    )
