"""Reference solution for percent_03_battery: battery levels like '45%'."""

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
    for row in read_rows("devices.csv"):
        counts = result.setdefault(row["site"], {"devices": 0, "low": 0})
        counts["devices"] += 1
        if parse_percent(row["battery"]) < 20:
            counts["low"] += 1
    write_json("result.json", dict(sorted(result.items())))


if __name__ == "__main__":
    main()
