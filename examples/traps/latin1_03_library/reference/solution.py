"""Reference solution for latin1_03_library: Windows-1252 encoded CSV with accented author names."""

import csv
import io
import json


# --- trap helpers: latin1 ---
def read_text(path):
    """File text: UTF-8 when it decodes, else Windows-1252 (a superset of Latin-1)."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252")


# --- end trap helpers ---


def read_rows(path):
    return list(csv.DictReader(io.StringIO(read_text(path))))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    counts = {}
    for row in read_rows("loans.csv"):
        counts[row["author"]] = counts.get(row["author"], 0) + 1
    write_json("result.json", dict(sorted(counts.items())))


if __name__ == "__main__":
    main()
