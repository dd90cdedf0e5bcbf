"""Reference solution for orders_report: per-region count, total and average order value."""

import csv
import json


def parse_amount(text):
    """'$1,299.99', ' $45 ', '$2,000' -> float."""
    cleaned = text.strip().replace("$", "").replace(",", "")
    return float(cleaned)


def main():
    # utf-8-sig: the export starts with a byte order mark that would otherwise stick to
    # the first header name ('\ufefforder_id').
    with open("orders.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    amounts = {}
    for row in rows:
        amounts.setdefault(row["region"].strip(), []).append(parse_amount(row["amount"]))
    result = {
        region: {
            "count": len(values),
            "total": round(sum(values), 2),
            "avg": round(sum(values) / len(values), 2),
        }
        for region, values in sorted(amounts.items())
    }
    with open("result.json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
