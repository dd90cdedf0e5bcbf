"""Reference solution for decimal_comma_01_sensors: temperatures like '21,4' and '-3,5'."""

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
    rows = read_rows("readings.csv")
    groups = {}
    for row in rows:
        value = parse_number(row["temperature_c"])
        groups.setdefault(row["sensor"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "min": round(min(values), 2),
            "max": round(max(values), 2),
            "avg": round(sum(values) / len(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
