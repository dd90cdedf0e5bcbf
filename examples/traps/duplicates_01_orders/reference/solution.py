"""Reference solution for duplicates_01_orders: a block of rows exported twice."""

import csv
import json


# --- trap helpers: duplicates ---
def unique_by(rows, key):
    """Rows with repeated key values dropped (the first occurrence is kept)."""
    seen = set()
    unique = []
    for row in rows:
        if row[key] not in seen:
            seen.add(row[key])
            unique.append(row)
    return unique


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    rows = read_rows("orders.csv")
    rows = unique_by(rows, "order_id")
    groups = {}
    for row in rows:
        value = float(row["total"])
        groups.setdefault(row["customer"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "orders": len(values),
            "total": round(sum(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
