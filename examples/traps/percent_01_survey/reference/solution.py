"""Reference solution for percent_01_survey: completion like '87.5%'."""

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
    rows = read_rows("survey.csv")
    groups = {}
    for row in rows:
        value = parse_percent(row["completion"])
        groups.setdefault(row["team"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "avg": round(sum(values) / len(values), 2),
            "min": round(min(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
