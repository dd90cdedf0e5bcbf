import math

MISSING = {"", "n/a", "na", "-", "\u2014", "null", "none", "nan"}


def parse_optional(text):
    """A number, or None for an empty / placeholder cell ('', 'N/A', 'NULL', 'NaN', '-')."""
    cleaned = (text or "").strip()
    if cleaned.lower() in MISSING:
        return None
    number = float(cleaned)
    return None if math.isnan(number) else number
