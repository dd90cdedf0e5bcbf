"""Reference solution for decimal_comma_03_fuel: litres '42,17' and prices '1,79'."""

import csv
import json


# --- trap helpers: decimal_comma ---
def parse_number(text):
    """'21,4' -> 21.4 and '1.234,5' -> 1234.5 (decimal comma, dot as thousands separator)."""
    cleaned = text.strip().replace(" ", "")
    if "," in cleaned:
        cleaned = cleaned.replace(".", "").replace(",", ".")
    return float(cleaned)


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
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


if __name__ == "__main__":
    main()
