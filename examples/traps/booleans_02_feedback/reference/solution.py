"""Reference solution for booleans_02_feedback: Yes/no/Y/n answers."""

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
    counts = {}
    for row in read_rows("feedback.csv"):
        acc = counts.setdefault(row["product"], [0, 0])
        acc[0] += 1
        if parse_bool(row["would_recommend"]):
            acc[1] += 1
    result = {
        product: {"responses": total, "recommend_pct": round(100 * yes / total, 2)}
        for product, (total, yes) in sorted(counts.items())
    }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
