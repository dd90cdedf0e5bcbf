"""Reference solution for missing_03_overtime: empty and 'N/A' hours."""

import csv
import json
import math

# --- trap helpers: missing ---
MISSING = {"", "n/a", "na", "-", "\u2014", "null", "none", "nan"}


def parse_optional(text):
    """A number, or None for an empty / placeholder cell ('', 'N/A', 'NULL', 'NaN', '-')."""
    cleaned = (text or "").strip()
    if cleaned.lower() in MISSING:
        return None
    number = float(cleaned)
    return None if math.isnan(number) else number


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    totals = {}
    for row in read_rows("overtime.csv"):
        hours = parse_optional(row["overtime_hours"])
        totals[row["employee"]] = totals.get(row["employee"], 0.0) + (hours or 0.0)
    write_json("result.json", {e: round(h, 2) for e, h in sorted(totals.items())})


if __name__ == "__main__":
    main()
