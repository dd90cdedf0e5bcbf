"""Reference solution for semicolon_03_water: semicolon-delimited CSV."""

import csv
import io
import json


# --- trap helpers: semicolon ---
def read_rows(path):
    """CSV rows as dicts, with the delimiter (, ; tab |) taken from the header line."""
    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    header = text.splitlines()[0] if text else ""
    delimiter = max(",;\t|", key=header.count)
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))


# --- end trap helpers ---


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    rows = read_rows("water.csv")
    groups = {}
    for row in rows:
        value = float(row["m3"])
        groups.setdefault(row["meter"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "total": round(sum(values), 2),
            "max": round(max(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
