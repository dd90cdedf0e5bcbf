"""Reference solution for jsonl_02_requests: timed-out requests have no latency_ms."""

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
    stats = {}
    for record in read_jsonl("requests.jsonl"):
        acc = stats.setdefault(record["endpoint"], [0, []])
        acc[0] += 1
        latency = field(record, "latency_ms")
        if latency is not None:
            acc[1].append(latency)
    result = {
        endpoint: {"requests": count, "avg_latency_ms": round(sum(lat) / len(lat), 2)}
        for endpoint, (count, lat) in sorted(stats.items())
    }
    write_json("result.json", result)


if __name__ == "__main__":
    main()
