"""Reference solution for dates_04_bills: due dates in several spellings."""

import csv
import json
from datetime import UTC, datetime

# --- trap helpers: dates ---
DAY_FORMATS = (
    "%Y-%m-%d",
    "%Y/%m/%d",
    "%d/%m/%Y",
    "%d.%m.%Y",
    "%b %d, %Y",
    "%B %d, %Y",
    "%d %b %Y",
    "%d %B %Y",
)


def parse_timestamp(text):
    """ISO 8601 with an offset or Z -> aware datetime in UTC (no offset: taken as UTC)."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC)


def parse_day(text):
    """A calendar date written in any of DAY_FORMATS."""
    for fmt in DAY_FORMATS:
        try:
            return datetime.strptime(text.strip(), fmt).date()
        except ValueError:
            continue
    raise ValueError(f"unrecognised date: {text!r}")


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    totals = {}
    for row in read_rows("bills.csv"):
        month = parse_day(row["due_date"]).strftime("%Y-%m")
        totals[month] = totals.get(month, 0.0) + float(row["amount"])
    write_json("result.json", {m: round(t, 2) for m, t in sorted(totals.items())})


if __name__ == "__main__":
    main()
