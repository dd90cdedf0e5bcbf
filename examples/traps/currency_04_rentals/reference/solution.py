"""Reference solution for currency_04_rentals: rents like 'USD 1,850.00' and '1,975 USD'."""

import csv
import json


# --- trap helpers: currency ---
def parse_money(text):
    """'$1,299.99', ' GBP 45 ', '1,975.00 USD', '-$120.00', '($120.00)' -> float."""
    cleaned = text.strip()
    negative = "-" in cleaned or (cleaned.startswith("(") and cleaned.endswith(")"))
    number = float("".join(ch for ch in cleaned if ch.isdigit() or ch == "."))
    return -number if negative else number


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    rows = read_rows("listings.csv")
    groups = {}
    for row in rows:
        value = parse_money(row["monthly_rent"])
        groups.setdefault(row["city"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "avg": round(sum(values) / len(values), 2),
            "min": round(min(values), 2),
            "max": round(max(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
