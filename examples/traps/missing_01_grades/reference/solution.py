"""Reference solution for missing_01_grades: empty, 'N/A' and '-' scores."""

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
    rows = read_rows("grades.csv")
    groups = {}
    for row in rows:
        value = parse_optional(row["score"])
        if value is None:
            continue
        groups.setdefault(row["class"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "graded": len(values),
            "avg": round(sum(values) / len(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
