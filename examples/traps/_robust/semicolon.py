import csv
import io


def read_rows(path):
    """CSV rows as dicts, with the delimiter (, ; tab |) taken from the header line."""
    with open(path, newline="", encoding="utf-8") as f:
        text = f.read()
    header = text.splitlines()[0] if text else ""
    delimiter = max(",;\t|", key=header.count)
    return list(csv.DictReader(io.StringIO(text), delimiter=delimiter))
