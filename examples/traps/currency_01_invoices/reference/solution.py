"""Reference solution for currency_01_invoices: amounts like '$1,299.99', ' $85 ' and '-$120'."""

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
    rows = read_rows("invoices.csv")
    groups = {}
    for row in rows:
        value = parse_money(row["amount"])
        groups.setdefault(row["client"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "count": len(values),
            "total": round(sum(values), 2),
            "avg": round(sum(values) / len(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
