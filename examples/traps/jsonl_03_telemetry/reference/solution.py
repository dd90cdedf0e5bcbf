"""Reference solution for jsonl_03_telemetry: each line reports only some of the readings."""

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
    values = {}
    for record in read_jsonl("telemetry.jsonl"):
        device = values.setdefault(record["device"], {"temp": [], "humidity": []})
        for key in ("temp", "humidity"):
            if field(record, key) is not None:
                device[key].append(field(record, key))
    result = {}
    for name, device in sorted(values.items()):
        result[name] = {
            "avg_temp": round(sum(device["temp"]) / len(device["temp"]), 2),
            "avg_humidity": round(sum(device["humidity"]) / len(device["humidity"]), 2),
        }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
