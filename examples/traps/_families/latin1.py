"""Trap family `latin1`: files encoded in Windows-1252 / Latin-1 instead of UTF-8."""

from __future__ import annotations

import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


@trap
def latin1_customers(rng: random.Random) -> Trap:
    cities = ["München", "Köln", "Zürich", "Málaga", "Besançon"]
    people = [
        "Jürgen Weiß",
        "Françoise Lefèvre",
        "José Núñez",
        "Søren Ødegård",
        "Zoë Brontë",
        "Ærø Olsen",
        "Inés Peña",
        "Björn Åberg",
    ]
    groups: dict[str, list[float]] = {}
    rows = []
    for city in spread(rng, cities, 24):
        spend = round(rng.uniform(15, 900), 2)
        groups.setdefault(city, []).append(spend)
        rows.append([rng.choice(people), city, f"{spend:.2f}"])
    aggs = [("count", "count"), ("total", "total")]
    return Trap(
        family="latin1",
        nn=1,
        domain="customers",
        goal="Write solution.py "
        "that reads customers.csv (columns customer, city, spend) and writes "
        "result.json with, per city, the number of customers and their total spend rounded to "
        "2 decimals: " + shape("Zürich", aggs),
        files={"customers.csv": csv_bytes(["customer", "city", "spend"], rows, encoding="cp1252")},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("customers.csv")', "city", 'float(row["spend"])', aggs),
        support=("read_rows_text", "write_json"),
        summary="Windows-1252 encoded CSV with accented names",
    )


@trap
def latin1_menu(rng: random.Random) -> Trap:
    dishes = {
        "Dessert": ["Crème brûlée", "Gâteau basque", "Île flottante", "Apfelstrüdel"],
        "Drinks": ["Café au lait", "Piña colada", "Glühwein"],
        "Main": ["Rösti", "Smørrebrød", "Paëlla valenciana", "Bœuf bourguignon"],
    }
    price_range = {"Dessert": (5, 12), "Drinks": (2.8, 9), "Main": (12, 29)}
    rows = []
    groups: dict[str, list[tuple[float, str]]] = {}
    for category, names in dishes.items():
        for name in names:
            price = round(rng.uniform(*price_range[category]), 1)
            groups.setdefault(category, []).append((price, name))
            rows.append([name, category, f"{price:.2f}"])
    rng.shuffle(rows)
    expected = {}
    for category, entries in sorted(groups.items()):
        prices = [p for p, _ in entries]
        expected[category] = {
            "count": len(entries),
            "avg_price": round(sum(prices) / len(prices), 2),
            "priciest": max(entries)[1],
        }
    code = """def main():
    groups = {}
    for row in read_rows("menu.csv"):
        groups.setdefault(row["category"], []).append((float(row["price"]), row["dish"]))
    result = {}
    for category, entries in sorted(groups.items()):
        prices = [price for price, _ in entries]
        result[category] = {
            "count": len(entries),
            "avg_price": round(sum(prices) / len(prices), 2),
            "priciest": max(entries)[1],
        }
    write_json("result.json", result)
"""
    return Trap(
        family="latin1",
        nn=2,
        domain="menu",
        goal="Write solution.py that reads menu.csv (columns dish, category, price) and writes "
        "result.json with, per category, the number of dishes, the average price rounded to "
        "2 decimals and the name of the most expensive dish: "
        '{"Main": {"count": 4, "avg_price": 17.25, "priciest": "Dish name"}, ...}',
        files={"menu.csv": csv_bytes(["dish", "category", "price"], rows, encoding="cp1252")},
        expected=expected,
        code=code,
        support=("read_rows_text", "write_json"),
        summary="Windows-1252 encoded CSV with accented dish names",
    )


@trap
def latin1_library(rng: random.Random) -> Trap:
    books = {
        "Gabriel García Márquez": "Cien años de soledad",
        "Heinrich Böll": "Ansichten eines Clowns",
        "José Saramago": "Ensaio sobre a cegueira",
        "Günter Grass": "Die Blechtrommel",
        "Émile Zola": "Germinal",
        "Selma Lagerlöf": "Gösta Berlings saga",
    }
    counts: dict[str, int] = {}
    rows = []
    for i, author in enumerate(spread(rng, list(books), 30)):
        counts[author] = counts.get(author, 0) + 1
        rows.append([f"LN-{4000 + i}", author, books[author], rng.randint(3, 28)])
    code = """def main():
    counts = {}
    for row in read_rows("loans.csv"):
        counts[row["author"]] = counts.get(row["author"], 0) + 1
    write_json("result.json", dict(sorted(counts.items())))
"""
    return Trap(
        family="latin1",
        nn=3,
        domain="library",
        goal="Write solution.py that reads loans.csv (columns loan_id, author, title, days) and "
        'writes result.json mapping each author to the number of loans: {"Author Name": 5, ...}',
        files={
            "loans.csv": csv_bytes(["loan_id", "author", "title", "days"], rows, encoding="cp1252")
        },
        expected=dict(sorted(counts.items())),
        code=code,
        support=("read_rows_text", "write_json"),
        summary="Windows-1252 encoded CSV with accented author names",
    )
