def parse_percent(text):
    """'87.5%', '7.5 %', '+3.2%' -> 87.5, 7.5, 3.2 (percentage points)."""
    return float(text.strip().rstrip("%").strip())
