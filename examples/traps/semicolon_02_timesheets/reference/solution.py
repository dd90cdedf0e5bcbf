"""Reference solution for semicolon_02_timesheets: semicolon-delimited CSV."""

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
    totals = {}
    for row in read_rows("timesheets.csv"):
        totals[row["project"]] = totals.get(row["project"], 0.0) + float(row["hours"])
    write_json("result.json", {p: round(h, 2) for p, h in sorted(totals.items())})


if __name__ == "__main__":
    main()
