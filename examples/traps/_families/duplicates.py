"""Trap family `duplicates`: records exported twice."""

from __future__ import annotations

import random
from typing import Any

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, spread, trap


def with_repeats(rng: random.Random, rows: list[list[Any]], k: int) -> list[list[Any]]:
    """rows plus k of them repeated verbatim, as a second export of one page would do."""
    start = rng.randrange(0, len(rows) - k)
    return rows + rows[start : start + k]


@trap
def duplicates_orders(rng: random.Random) -> Trap:
    customers = ["C-01", "C-02", "C-03", "C-04"]
    rows = []
    for i, customer in enumerate(spread(rng, customers, 24)):
        rows.append([f"O-{7700 + i}", customer, f"{rng.uniform(12, 480):.2f}"])
    groups: dict[str, list[float]] = {}
    for _, customer, total in rows:
        groups.setdefault(customer, []).append(float(total))
    aggs = [("orders", "count"), ("total", "total")]
    return Trap(
        family="duplicates",
        nn=1,
        domain="orders",
        goal="Write solution.py "
        "that reads orders.csv (columns order_id, customer, total) and writes "
        "result.json with, per customer, the number of orders and their total value rounded to "
        "2 decimals (an order is identified by its order_id): "
        '{"C-01": {"orders": 3, "total": 12.5}, ...}',
        files={
            "orders.csv": csv_bytes(["order_id", "customer", "total"], with_repeats(rng, rows, 6))
        },
        expected=grouped_expected(groups, aggs),
        code=grouped_code(
            'read_rows("orders.csv")', "customer", 'float(row["total"])', aggs, dedup="order_id"
        ),
        summary="a block of rows exported twice",
    )


@trap
def duplicates_tickets(rng: random.Random) -> Trap:
    agents = ["kim", "lee", "max"]
    rows = []
    for i, agent in enumerate(spread(rng, agents, 24)):
        status = rng.choice(["resolved", "resolved", "open"])
        rows.append([f"T-{300 + i}", agent, status, f"{rng.choice([0.5, 1, 1.5, 2, 3, 5]):g}"])
    expected: dict[str, dict[str, float]] = {}
    for _, agent, status, hours in rows:
        stats = expected.setdefault(agent, {"resolved": 0, "hours": 0.0})
        stats["resolved"] += status == "resolved"
        stats["hours"] += float(hours)
    expected = {
        a: {"resolved": s["resolved"], "hours": round(s["hours"], 2)}
        for a, s in sorted(expected.items())
    }
    code = """def main():
    result = {}
    for row in unique_by(read_rows("tickets.csv"), "ticket_id"):
        stats = result.setdefault(row["agent"], {"resolved": 0, "hours": 0.0})
        if row["status"] == "resolved":
            stats["resolved"] += 1
        stats["hours"] += float(row["hours"])
    for stats in result.values():
        stats["hours"] = round(stats["hours"], 2)
    write_json("result.json", dict(sorted(result.items())))
"""
    return Trap(
        family="duplicates",
        nn=2,
        domain="tickets",
        goal="Write solution.py "
        "that reads tickets.csv (columns ticket_id, agent, status, hours) and "
        "writes result.json with, per agent, the number of tickets with status resolved and the "
        "total hours over all their tickets (a ticket is identified by its ticket_id): "
        '{"kim": {"resolved": 4, "hours": 9.5}, ...}',
        files={
            "tickets.csv": csv_bytes(
                ["ticket_id", "agent", "status", "hours"], with_repeats(rng, rows, 5)
            )
        },
        expected=expected,
        code=code,
        summary="a block of rows exported twice",
    )


@trap
def duplicates_transactions(rng: random.Random) -> Trap:
    accounts = ["ACC-1", "ACC-2", "ACC-3"]
    rows = []
    for i, account in enumerate(spread(rng, accounts, 26)):
        amount = round(rng.uniform(-400, 900), 2)
        rows.append([f"tx{5000 + 3 * i}", f"2026-02-{1 + i:02d}", account, f"{amount:.2f}"])
    balances: dict[str, float] = {}
    for _, _, account, amount in rows:
        balances[account] = balances.get(account, 0.0) + float(amount)
    code = """def main():
    balances = {}
    for row in unique_by(read_rows("transactions.csv"), "txn_id"):
        balances[row["account"]] = balances.get(row["account"], 0.0) + float(row["amount"])
    write_json("result.json", {a: round(b, 2) for a, b in sorted(balances.items())})
"""
    return Trap(
        family="duplicates",
        nn=3,
        domain="transactions",
        goal="Write solution.py "
        "that reads transactions.csv (columns txn_id, date, account, amount; "
        "amounts are signed) and writes result.json mapping each account to its balance (the "
        "sum of its transactions, each txn_id being one transaction), rounded to 2 decimals: "
        '{"ACC-1": 1520.75, ...}',
        files={
            "transactions.csv": csv_bytes(
                ["txn_id", "date", "account", "amount"], with_repeats(rng, rows, 7)
            )
        },
        expected={a: round(b, 2) for a, b in sorted(balances.items())},
        code=code,
        summary="a block of rows exported twice",
    )
