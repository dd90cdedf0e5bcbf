import csv


def read_rows(path):
    """CSV rows as dicts keyed by the header names stripped and lower-cased."""
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        reader.fieldnames = [name.strip().lower() for name in reader.fieldnames or []]
        return list(reader)
