"""Reference solution for percent_02_discounts: discounts like '15%' and '7.5 %'."""

import csv
import json


# --- trap helpers: percent ---
def parse_percent(text):
    """'87.5%', '7.5 %', '+3.2%' -> 87.5, 7.5, 3.2 (percentage points)."""
    return float(text.strip().rstrip("%").strip())


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    result = {}
    for row in read_rows("sales.csv"):
        net = float(row["list_price"]) * (1 - parse_percent(row["discount"]) / 100)
        totals = result.setdefault(row["product"], {"orders": 0, "net_revenue": 0.0})
        totals["orders"] += 1
        totals["net_revenue"] += net
    for totals in result.values():
        totals["net_revenue"] = round(totals["net_revenue"], 2)
    write_json("result.json", dict(sorted(result.items())))


if __name__ == "__main__":
    main()
