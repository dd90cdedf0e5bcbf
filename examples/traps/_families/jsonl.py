"""Trap family `jsonl`: JSON lines whose records lack some keys."""

from __future__ import annotations

import random
from typing import Any

from _kit import Trap, jsonl_bytes, spread, trap


@trap
def jsonl_events(rng: random.Random) -> Trap:
    users = ["u1", "u2", "u3", "u4", "u5"]
    totals = dict.fromkeys(users, 0.0)
    records = []
    for i, user in enumerate(spread(rng, users, 32)):
        kind = rng.choice(["view", "view", "purchase", "refund", "purchase"])
        record: dict[str, Any] = {"id": i + 1, "user": user, "type": kind}
        if kind != "view":
            amount = round(rng.uniform(3, 250), 2) * (-1 if kind == "refund" else 1)
            record["amount"] = round(amount, 2)
            totals[user] += record["amount"]
        records.append(record)
    code = """def main():
    totals = {}
    for record in read_jsonl("events.jsonl"):
        amount = field(record, "amount")
        totals[record["user"]] = totals.get(record["user"], 0.0) + (amount or 0.0)
    write_json("result.json", {u: round(t, 2) for u, t in sorted(totals.items())})
"""
    return Trap(
        family="jsonl",
        nn=1,
        domain="events",
        goal="Write solution.py "
        "that reads events.jsonl (one JSON object per line with id, user, type "
        "and amount) and writes result.json mapping every user in the file to the sum of their "
        'amounts, rounded to 2 decimals: {"u1": 250.4, ...}',
        files={"events.jsonl": jsonl_bytes(records)},
        expected={u: round(t, 2) for u, t in sorted(totals.items())},
        code=code,
        support=("read_jsonl", "write_json"),
        summary="view events carry no amount key",
    )


@trap
def jsonl_requests(rng: random.Random) -> Trap:
    endpoints = ["/login", "/search", "/checkout"]
    stats: dict[str, list[Any]] = {}
    records = []
    for endpoint in spread(rng, endpoints, 30):
        status = rng.choice([200, 200, 200, 500, 504])
        record: dict[str, Any] = {"endpoint": endpoint, "status": status}
        acc = stats.setdefault(endpoint, [0, []])
        acc[0] += 1
        if record["status"] != 504 and (rng.random() < 0.85 or not acc[1]):
            record["latency_ms"] = rng.randint(12, 900)
            acc[1].append(record["latency_ms"])
        records.append(record)
    expected = {
        e: {"requests": a[0], "avg_latency_ms": round(sum(a[1]) / len(a[1]), 2)}
        for e, a in sorted(stats.items())
    }
    code = """def main():
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
"""
    return Trap(
        family="jsonl",
        nn=2,
        domain="requests",
        goal="Write solution.py that reads requests.jsonl (one JSON object per line with endpoint, "
        "status and latency_ms) and writes result.json with, per endpoint, the number of requests "
        "and the average of the reported latencies rounded to 2 decimals: "
        '{"/login": {"requests": 9, "avg_latency_ms": 153.67}, ...}',
        files={"requests.jsonl": jsonl_bytes(records)},
        expected=expected,
        code=code,
        support=("read_jsonl", "write_json"),
        summary="timed-out requests have no latency_ms",
    )


@trap
def jsonl_telemetry(rng: random.Random) -> Trap:
    devices = ["pump-a", "pump-b", "valve-c"]
    sums: dict[str, dict[str, list[float]]] = {d: {"temp": [], "humidity": []} for d in devices}
    records = []
    for i, device in enumerate(spread(rng, devices, 27)):
        record: dict[str, Any] = {"device": device, "seq": i + 1}
        keys = rng.choice([("temp", "humidity"), ("temp",), ("humidity",), ("temp", "humidity")])
        if i < 2 * len(devices):  # every device reports both quantities at least once
            keys = ("temp", "humidity")
        if "temp" in keys:
            record["temp"] = round(rng.uniform(15, 70), 1)
            sums[device]["temp"].append(record["temp"])
        if "humidity" in keys:
            record["humidity"] = round(rng.uniform(20, 95), 1)
            sums[device]["humidity"].append(record["humidity"])
        records.append(record)
    expected = {
        d: {
            "avg_temp": round(sum(s["temp"]) / len(s["temp"]), 2),
            "avg_humidity": round(sum(s["humidity"]) / len(s["humidity"]), 2),
        }
        for d, s in sorted(sums.items())
    }
    code = """def main():
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
"""
    return Trap(
        family="jsonl",
        nn=3,
        domain="telemetry",
        goal="Write solution.py "
        "that reads telemetry.jsonl (one JSON object per line with device, seq, "
        "temp and humidity) and writes result.json with, per device, the average temp and the "
        "average humidity over the readings that report them, rounded to 2 decimals: "
        '{"pump-a": {"avg_temp": 41.5, "avg_humidity": 60.25}, ...}',
        files={"telemetry.jsonl": jsonl_bytes(records)},
        expected=expected,
        code=code,
        support=("read_jsonl", "write_json"),
        summary="each line reports only some of the readings",
    )
