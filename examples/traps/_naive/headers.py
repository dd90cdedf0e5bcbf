import csv


def read_rows(path):
    # Naive: header names used exactly as written in the file.
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
