"""Reference solution for duplicates_02_tickets: a block of rows exported twice."""

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
    result = {}
    for row in unique_by(read_rows("tickets.csv"), "ticket_id"):
        stats = result.setdefault(row["agent"], {"resolved": 0, "hours": 0.0})
        if row["status"] == "resolved":
            stats["resolved"] += 1
        stats["hours"] += float(row["hours"])
    for stats in result.values():
        stats["hours"] = round(stats["hours"], 2)
    write_json("result.json", dict(sorted(result.items())))


if __name__ == "__main__":
    main()
