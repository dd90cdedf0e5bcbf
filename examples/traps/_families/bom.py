"""Trap family `bom`: a UTF-8 byte order mark at the start of the file."""

from __future__ import annotations

import json
import random

from _kit import Trap, csv_bytes, grouped_code, grouped_expected, shape, spread, trap


@trap
def bom_payroll(rng: random.Random) -> Trap:
    departments = ["Engineering", "Finance", "Sales", "Support"]
    groups: dict[str, list[float]] = {}
    rows = []
    names = ["Ada", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu"]
    for i, dept in enumerate(spread(rng, departments, 26)):
        salary = round(rng.uniform(2800, 9200), 2)
        groups.setdefault(dept, []).append(salary)
        rows.append([dept, f"{names[i % len(names)]} {chr(65 + i % 26)}.", f"{salary:.2f}"])
    aggs = [("count", "count"), ("total", "total")]
    return Trap(
        family="bom",
        nn=1,
        domain="payroll",
        goal="Write solution.py that reads payroll.csv (columns department, employee, salary) and "
        "writes result.json with, per department, the number of employees and the total "
        "salary rounded to 2 decimals: " + shape("Finance", aggs),
        files={"payroll.csv": csv_bytes(["department", "employee", "salary"], rows, bom=True)},
        expected=grouped_expected(groups, aggs),
        code=grouped_code('read_rows("payroll.csv")', "department", 'float(row["salary"])', aggs),
        support=("read_rows_text", "write_json"),
        summary="UTF-8 BOM before the first header",
    )


@trap
def bom_inventory(rng: random.Random) -> Trap:
    skus = ["SKU-104", "SKU-221", "SKU-315", "SKU-480", "SKU-502"]
    totals: dict[str, int] = {}
    rows = []
    for sku in spread(rng, skus, 25):
        qty = rng.randint(0, 140)
        totals[sku] = totals.get(sku, 0) + qty
        rows.append([sku, rng.choice(["Leeds", "Bristol", "Derby"]), qty])
    code = """def main():
    totals = {}
    for row in read_rows("stock.csv"):
        totals[row["sku"]] = totals.get(row["sku"], 0) + int(row["qty"])
    write_json("result.json", dict(sorted(totals.items())))
"""
    return Trap(
        family="bom",
        nn=2,
        domain="inventory",
        goal="Write solution.py that reads stock.csv (columns sku, warehouse, qty) and writes "
        "result.json mapping each sku to its total quantity over all warehouses: "
        '{"SKU-104": 212, ...}',
        files={"stock.csv": csv_bytes(["sku", "warehouse", "qty"], rows, bom=True)},
        expected=dict(sorted(totals.items())),
        code=code,
        support=("read_rows_text", "write_json"),
        summary="UTF-8 BOM before the first header",
    )


@trap
def bom_catalog(rng: random.Random) -> Trap:
    items = [
        ("Kettle", "kitchen"),
        ("Toaster", "kitchen"),
        ("Blender", "kitchen"),
        ("Desk lamp", "lighting"),
        ("Floor lamp", "lighting"),
        ("LED strip", "lighting"),
        ("Doormat", "home"),
        ("Vase", "home"),
        ("Cushion", "home"),
        ("Rug", "home"),
        ("Spatula", "kitchen"),
        ("Lantern", "lighting"),
    ]
    groups: dict[str, list[float]] = {}
    products = []
    for name, category in items:
        price = round(rng.uniform(4, 180), 2)
        groups.setdefault(category, []).append(price)
        products.append({"name": name, "category": category, "price": price})
    text = json.dumps({"products": products}, indent=2) + "\n"
    aggs = [("count", "count"), ("avg", "avg")]
    code = """def main():
    catalog = json.loads(read_text("catalog.json"))
    groups = {}
    for product in catalog["products"]:
        groups.setdefault(product["category"], []).append(product["price"])
    result = {}
    for category, prices in sorted(groups.items()):
        result[category] = {"count": len(prices), "avg": round(sum(prices) / len(prices), 2)}
    write_json("result.json", result)
"""
    return Trap(
        family="bom",
        nn=3,
        domain="catalog",
        goal="Write solution.py "
        'that reads catalog.json (an object {"products": [{"name", "category", '
        '"price"}, ...]}) and writes result.json with, per category, the number of products and '
        "their average price rounded to 2 decimals: " + shape("kitchen", aggs),
        files={"catalog.json": b"\xef\xbb\xbf" + text.encode()},
        expected=grouped_expected(groups, aggs),
        code=code,
        support=("write_json",),
        imports=("import json",),
        summary="UTF-8 BOM before a JSON document",
    )


@trap
def bom_tags(rng: random.Random) -> Trap:
    tags = ["python", "sql", "docker", "rust", "go", "linux"]
    lines = [rng.choice(tags) for _ in range(40)]
    lines[0] = "python"
    counts: dict[str, int] = {}
    for tag in lines:
        counts[tag] = counts.get(tag, 0) + 1
    code = """def main():
    counts = {}
    for line in read_text("tags.txt").splitlines():
        tag = line.strip()
        if tag:
            counts[tag] = counts.get(tag, 0) + 1
    write_json("result.json", dict(sorted(counts.items())))
"""
    return Trap(
        family="bom",
        nn=4,
        domain="tags",
        goal="Write solution.py "
        "that reads tags.txt (one tag per line) and writes result.json mapping "
        'each tag to the number of lines it appears on: {"python": 7, "sql": 3, ...}',
        files={"tags.txt": b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode()},
        expected=dict(sorted(counts.items())),
        code=code,
        support=("write_json",),
        summary="UTF-8 BOM before the first line of a text file",
    )
