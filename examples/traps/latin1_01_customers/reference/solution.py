"""Reference solution for latin1_01_customers: Windows-1252 encoded CSV with accented names."""

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
    rows = read_rows("customers.csv")
    groups = {}
    for row in rows:
        value = float(row["spend"])
        groups.setdefault(row["city"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "count": len(values),
            "total": round(sum(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
