"""Reference solution for bom_03_catalog: UTF-8 BOM before a JSON document."""

import json


# --- trap helpers: bom ---
def read_text(path):
    """File text without a UTF-8 byte order mark (utf-8-sig drops it when present)."""
    with open(path, encoding="utf-8-sig") as f:
        return f.read()


# --- end trap helpers ---


def write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=2, ensure_ascii=False)


def main():
    catalog = json.loads(read_text("catalog.json"))
    groups = {}
    for product in catalog["products"]:
        groups.setdefault(product["category"], []).append(product["price"])
    result = {}
    for category, prices in sorted(groups.items()):
        result[category] = {"count": len(prices), "avg": round(sum(prices) / len(prices), 2)}
    write_json("result.json", result)


if __name__ == "__main__":
    main()
