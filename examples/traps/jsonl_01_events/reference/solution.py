"""Reference solution for jsonl_01_events: view events carry no amount key."""

import json


# --- trap helpers: jsonl ---
def field(record, key):
    """The record's value for key, or None when the key is absent (or null)."""
    return record.get(key)


# --- end trap helpers ---


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    totals = {}
    for record in read_jsonl("events.jsonl"):
        amount = field(record, "amount")
        totals[record["user"]] = totals.get(record["user"], 0.0) + (amount or 0.0)
    write_json("result.json", {u: round(t, 2) for u, t in sorted(totals.items())})


if __name__ == "__main__":
    main()
