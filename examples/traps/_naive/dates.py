from datetime import date, datetime


def parse_timestamp(text):
    # Naive: the wall-clock time is kept and the UTC offset ignored.
    return datetime.fromisoformat(text.strip()).replace(tzinfo=None)


def parse_day(text):
    # Naive: every date is taken to be ISO (YYYY-MM-DD).
    return date.fromisoformat(text.strip())
