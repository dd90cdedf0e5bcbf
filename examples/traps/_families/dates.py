"""Trap family `dates`: timestamps with UTC offsets and dates in mixed spellings."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta, timezone

from _kit import Trap, csv_bytes, trap


def ts(moment: datetime, offset_hours: float) -> str:
    """An ISO 8601 timestamp of the UTC moment as seen at the given offset ('Z' for 0)."""
    tz = timezone(timedelta(hours=offset_hours))
    text = moment.astimezone(tz).isoformat()
    return text.replace("+00:00", "Z") if offset_hours == 0 else text


START = datetime(2026, 3, 1, tzinfo=UTC)


@trap
def dates_logins(rng: random.Random) -> Trap:
    users = ["amir", "bea", "carl", "dana", "eli"]
    counts: dict[str, int] = {}
    rows = []
    for _ in range(30):
        # Cluster around midnight UTC so the local calendar date often differs from the UTC one.
        moment = START + timedelta(
            days=rng.randint(0, 3),
            hours=rng.choice([-5, -3, -2, 1, 2, 4]),
            minutes=rng.randint(0, 59),
        )
        day = moment.date().isoformat()
        counts[day] = counts.get(day, 0) + 1
        rows.append([rng.choice(users), ts(moment, rng.choice([-5, -8, 0, 2, 5.5, 9]))])
    code = """def main():
    counts = {}
    for row in read_rows("logins.csv"):
        day = parse_timestamp(row["login_at"]).date().isoformat()
        counts[day] = counts.get(day, 0) + 1
    write_json("result.json", dict(sorted(counts.items())))
"""
    return Trap(
        family="dates",
        nn=1,
        domain="logins",
        goal="Write solution.py "
        "that reads logins.csv (columns user, login_at) and writes result.json "
        "mapping each UTC calendar day (YYYY-MM-DD) to the number of logins on that day: "
        '{"2026-03-01": 7, ...}',
        files={"logins.csv": csv_bytes(["user", "login_at"], rows)},
        expected=dict(sorted(counts.items())),
        code=code,
        summary="ISO timestamps with mixed UTC offsets",
    )


@trap
def dates_flights(rng: random.Random) -> Trap:
    airports = {"JFK": -5, "LHR": 0, "FRA": 1, "DXB": 4, "DEL": 5.5, "HND": 9, "LAX": -8}
    expected: dict[str, int] = {}
    rows = []
    codes = list(airports)
    for i in range(14):
        origin, dest = rng.sample(codes, 2)
        depart = START + timedelta(hours=rng.randint(0, 200), minutes=5 * rng.randint(0, 11))
        minutes = rng.randint(70, 900)
        arrive = depart + timedelta(minutes=minutes)
        flight = f"{rng.choice(['LH', 'BA', 'EK', 'AA'])}{100 + 17 * i}"
        expected[flight] = minutes
        departure, arrival = ts(depart, airports[origin]), ts(arrive, airports[dest])
        rows.append([flight, origin, dest, departure, arrival])
    code = """def main():
    result = {}
    for row in read_rows("flights.csv"):
        duration = parse_timestamp(row["arrival"]) - parse_timestamp(row["departure"])
        result[row["flight"]] = round(duration.total_seconds() / 60)
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="dates",
        nn=2,
        domain="flights",
        goal="Write solution.py that reads flights.csv (columns flight, origin, destination, "
        "departure, arrival) and writes result.json mapping each flight to its duration in "
        'whole minutes: {"LH100": 545, ...}',
        files={
            "flights.csv": csv_bytes(
                ["flight", "origin", "destination", "departure", "arrival"], rows
            )
        },
        expected=dict(sorted(expected.items())),
        code=code,
        summary="times in the UTC offsets of the two airports",
    )


def mixed_day(rng: random.Random, day: date) -> str:
    """The date in one of several common spellings; numeric d/m forms only when unambiguous."""
    fmts = ["%Y-%m-%d", "%b %d, %Y", "%d %B %Y", "%Y/%m/%d"]
    if day.day > 12:
        fmts += ["%d/%m/%Y", "%d.%m.%Y"]
    return day.strftime(rng.choice(fmts))


@trap
def dates_signups(rng: random.Random) -> Trap:
    counts: dict[str, int] = {}
    rows = []
    for i in range(32):
        day = date(2025, 11, 1) + timedelta(days=rng.randint(0, 150))
        month = day.strftime("%Y-%m")
        counts[month] = counts.get(month, 0) + 1
        rows.append([f"user{i + 1}@example.com", mixed_day(rng, day)])
    code = """def main():
    counts = {}
    for row in read_rows("signups.csv"):
        month = parse_day(row["signed_up"]).strftime("%Y-%m")
        counts[month] = counts.get(month, 0) + 1
    write_json("result.json", dict(sorted(counts.items())))
"""
    return Trap(
        family="dates",
        nn=3,
        domain="signups",
        goal="Write solution.py that reads signups.csv (columns email, signed_up) and writes "
        "result.json mapping each month (YYYY-MM) to the number of signups in it: "
        '{"2025-11": 6, ...}',
        files={"signups.csv": csv_bytes(["email", "signed_up"], rows)},
        expected=dict(sorted(counts.items())),
        code=code,
        summary="dates in several spellings",
    )


@trap
def dates_due(rng: random.Random) -> Trap:
    sums: dict[str, float] = {}
    rows = []
    for i in range(28):
        day = date(2026, 1, 1) + timedelta(days=rng.randint(0, 120))
        amount = round(rng.uniform(60, 2400), 2)
        month = day.strftime("%Y-%m")
        sums[month] = sums.get(month, 0.0) + amount
        rows.append([f"B-{610 + i}", mixed_day(rng, day), f"{amount:.2f}"])
    code = """def main():
    totals = {}
    for row in read_rows("bills.csv"):
        month = parse_day(row["due_date"]).strftime("%Y-%m")
        totals[month] = totals.get(month, 0.0) + float(row["amount"])
    write_json("result.json", {m: round(t, 2) for m, t in sorted(totals.items())})
"""
    return Trap(
        family="dates",
        nn=4,
        domain="bills",
        goal="Write solution.py "
        "that reads bills.csv (columns bill_id, due_date, amount) and writes "
        "result.json mapping each month (YYYY-MM) to the total amount due in it, rounded to "
        '2 decimals: {"2026-01": 5120.4, ...}',
        files={"bills.csv": csv_bytes(["bill_id", "due_date", "amount"], rows)},
        expected={m: round(t, 2) for m, t in sorted(sums.items())},
        code=code,
        summary="due dates in several spellings",
    )
