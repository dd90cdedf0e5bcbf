"""Reference solution for bom_04_tags: UTF-8 BOM before the first line of a text file."""

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
    counts = {}
    for line in read_text("tags.txt").splitlines():
        tag = line.strip()
        if tag:
            counts[tag] = counts.get(tag, 0) + 1
    write_json("result.json", dict(sorted(counts.items())))


if __name__ == "__main__":
    main()
