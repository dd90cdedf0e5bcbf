"""Reference solution for decimal_comma_02_lab: tab-separated values like '5,12'."""

import csv
import json


# --- trap helpers: decimal_comma ---
def parse_number(text):
    """'21,4' -> 21.4 and '1.234,5' -> 1234.5 (decimal comma, dot as thousands separator)."""
    cleaned = text.strip().replace(" ", "")
    if "," in cleaned:
        cleaned = cleaned.replace(".", "").replace(",", ".")
    return float(cleaned)


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    rows = read_rows("lab_results.tsv", delimiter="\t")
    groups = {}
    for row in rows:
        value = parse_number(row["value"])
        groups.setdefault(row["analyte"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "count": len(values),
            "avg": round(sum(values) / len(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
