def parse_optional(text):
    # Naive: every cell is taken to hold a number.
    return float(text)
