"""Reference solution for log_status: count HTTP status codes in access.log."""

import json
import re

# host ident user [time] "request" status size
LINE = re.compile(r'^\S+ \S+ \S+ \[[^\]]*\] "[^"]*" (\d{3}) \S+$')


def main():
    by_status = {}
    total = 0
    with open("access.log", encoding="utf-8") as f:
        for line in f:
            match = LINE.match(line.strip())
            if not match:
                continue
            total += 1
            by_status[match[1]] = by_status.get(match[1], 0) + 1
    result = {
        "total": total,
        "by_status": dict(sorted(by_status.items())),
        "errors": sum(n for code, n in by_status.items() if int(code) >= 400),
    }
    with open("status_counts.json", "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)


if __name__ == "__main__":
    main()
