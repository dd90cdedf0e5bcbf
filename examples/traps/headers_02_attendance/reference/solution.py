"""Reference solution for headers_02_attendance: header names with padding and capitals."""

import csv
import json


# --- trap helpers: headers ---
def read_rows(path):
    """CSV rows as dicts keyed by the header names stripped and lower-cased."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        reader.fieldnames = [name.strip().lower() for name in reader.fieldnames or []]
        return list(reader)


# --- end trap helpers ---


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    rows = read_rows("attendance.csv")
    groups = {}
    for row in rows:
        value = int(row["present_days"])
        groups.setdefault(row["course"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "count": len(values),
            "avg": round(sum(values) / len(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
