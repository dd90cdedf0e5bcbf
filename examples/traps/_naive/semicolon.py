import csv


def read_rows(path):
    # Naive: csv.DictReader with its default comma delimiter.
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
