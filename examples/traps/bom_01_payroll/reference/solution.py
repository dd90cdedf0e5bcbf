"""Reference solution for bom_01_payroll: UTF-8 BOM before the first header."""

import csv
import io
import json


# --- trap helpers: bom ---
def read_text(path):
    """File text without a UTF-8 byte order mark (utf-8-sig drops it when present)."""
    with open(path, encoding="utf-8-sig") as f:
        return f.read()


# --- end trap helpers ---


def read_rows(path):
    return list(csv.DictReader(io.StringIO(read_text(path))))


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    rows = read_rows("payroll.csv")
    groups = {}
    for row in rows:
        value = float(row["salary"])
        groups.setdefault(row["department"], []).append(value)
    result = {}
    for key, values in sorted(groups.items()):
        result[key] = {
            "count": len(values),
            "total": round(sum(values), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
