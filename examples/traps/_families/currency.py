"""Trap family `currency`: amounts with currency symbols or codes and thousands separators."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


def cents(rng: random.Random, lo: float, hi: float, whole: float = 0.0) -> float:
    """A money-like value; with probability `whole` a whole number."""
    if rng.random() < whole:
        return float(rng.randint(int(lo), int(hi)))
    return round(rng.uniform(lo, hi), 2)


def money_text(value: float, prefix: str = "$", suffix: str = "", pad: bool = False) -> str:
    body = f"{abs(value):,.0f}" if value == int(value) else f"{abs(value):,.2f}"
    text = f"{'-' if value < 0 else ''}{prefix}{body}{suffix}"
    return f" {text} " if pad else text


@trap
def currency_invoices(rng: random.Random) -> Trap:
    clients = ["Acme Corp", "Globex", "Initech", "Umbrella", "Stark Industries"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, client in enumerate(spread(rng, clients, 30)):
        value = cents(rng, 40, 4800, whole=0.25)
        if i == 11:
            value = -120.0  # a credit note
        groups.setdefault(client, []).append(value)
        rows.append([f"INV-{1001 + i}", client, money_text(value, pad=rng.random() < 0.2)])
    aggs = [("count", "count"), ("total", "total"), ("avg", "avg")]
    return Trap(
        family="currency",
        nn=1,
        domain="invoices",
        goal="Write solution.py that reads invoices.csv (columns invoice_no, client, amount) and "
        "writes result.json with, per client, the number of invoices, the total amount and "
        "the average amount, rounded to 2 decimals: " + shape("Acme Corp", aggs),
        files={"invoices.csv": csv_bytes(["invoice_no", "client", "amount"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("invoices.csv")', "client", 'parse_money(row["amount"])', aggs
        ),
        summary="amounts like '$1,299.99', ' $85 ' and '-$120'",
    )


@trap
def currency_expenses(rng: random.Random) -> Trap:
    categories = ["travel", "meals", "software", "office"]
    employees = ["Ana", "Ben", "Chloe", "Dev"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, category in enumerate(spread(rng, categories, 28)):
        value = cents(rng, 8, 2600, whole=0.3)
        groups.setdefault(category, []).append(value)
        text = money_text(value, prefix=rng.choice(["€", "€ "]))
        rows.append([f"2026-02-{1 + i % 28:02d}", rng.choice(employees), category, text])
    aggs = [("total", "total"), ("max", "max")]
    return Trap(
        family="currency",
        nn=2,
        domain="expenses",
        goal="Write solution.py "
        "that reads expenses.csv (columns date, employee, category, cost) and "
        "writes result.json with, per category, the total cost and the largest single cost, "
        "rounded to 2 decimals: " + shape("travel", aggs),
        files={"expenses.csv": csv_bytes(["date", "employee", "category", "cost"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("expenses.csv")', "category", 'parse_money(row["cost"])', aggs
        ),
        summary="costs like '€1,234.50' and '€ 89.90'",
    )


@trap
def currency_donations(rng: random.Random) -> Trap:
    campaigns = ["Spring Appeal", "Winter Drive", "Schools Fund"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, campaign in enumerate(spread(rng, campaigns, 26)):
        value = cents(rng, 5, 5000, whole=0.5)
        groups.setdefault(campaign, []).append(value)
        text = money_text(value, prefix="GBP " if rng.random() < 0.3 else "£")
        rows.append([f"D{2300 + i}", campaign, text])
    aggs = [("count", "count"), ("total", "total")]
    return Trap(
        family="currency",
        nn=3,
        domain="donations",
        goal="Write solution.py "
        "that reads donations.csv (columns donor_id, campaign, gift) and writes "
        "result.json with, per campaign, the number of gifts and their total value rounded to "
        "2 decimals: " + shape("Spring Appeal", aggs),
        files={"donations.csv": csv_bytes(["donor_id", "campaign", "gift"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("donations.csv")', "campaign", 'parse_money(row["gift"])', aggs
        ),
        summary="gifts like '£2,500' and 'GBP 1,000.00'",
    )


@trap
def currency_rentals(rng: random.Random) -> Trap:
    cities = ["Austin", "Boston", "Denver", "Portland"]
    groups: dict[str, list[float]] = {}
    rows = []
    for i, city in enumerate(spread(rng, cities, 24)):
        value = float(rng.randrange(900, 4200, 25)) if rng.random() < 0.6 else cents(rng, 900, 4200)
        groups.setdefault(city, []).append(value)
        if rng.random() < 0.3:
            text = money_text(value, prefix="", suffix=" USD")
        else:
            text = money_text(value, prefix="USD ")
        rows.append([f"L-{500 + i}", city, rng.randint(0, 4), text])
    aggs = [("avg", "avg"), ("min", "min"), ("max", "max")]
    return Trap(
        family="currency",
        nn=4,
        domain="rentals",
        goal="Write solution.py that reads listings.csv (columns listing_id, city, bedrooms, "
        "monthly_rent) and writes result.json with, per city, the average, lowest and highest "
        "monthly rent, rounded to 2 decimals: " + shape("Austin", aggs),
        files={"listings.csv": csv_bytes(["listing_id", "city", "bedrooms", "monthly_rent"], rows)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("listings.csv")', "city", 'parse_money(row["monthly_rent"])', aggs
        ),
        summary="rents like 'USD 1,850.00' and '1,975 USD'",
    )
