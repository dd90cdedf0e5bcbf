"""Reference solution for duplicates_03_transactions: a block of rows exported twice."""

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
    balances = {}
    for row in unique_by(read_rows("transactions.csv"), "txn_id"):
        balances[row["account"]] = balances.get(row["account"], 0.0) + float(row["amount"])
    write_json("result.json", {a: round(b, 2) for a, b in sorted(balances.items())})


if __name__ == "__main__":
    main()
