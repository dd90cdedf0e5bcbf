"""Reference solution for booleans_01_subscribers: yes/no, Y/N, TRUE/false, 1/0."""

import csv
import json

# --- trap helpers: booleans ---
TRUE_WORDS = {"yes", "y", "true", "t", "1"}
FALSE_WORDS = {"no", "n", "false", "f", "0", ""}


def parse_bool(text):
    """'yes', 'Y', 'TRUE', '1' -> True; 'no', 'N', 'false', '0' -> False."""
    word = text.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"not a yes/no value: {text!r}")


# --- end trap helpers ---


def read_rows(path, delimiter=","):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter=delimiter))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    result = {}
    for row in read_rows("subscribers.csv"):
        stats = result.setdefault(row["plan"], {"subscribers": 0, "active": 0})
        stats["subscribers"] += 1
        if parse_bool(row["active"]):
            stats["active"] += 1
    write_json("result.json", dict(sorted(result.items())))


if __name__ == "__main__":
    main()
