def parse_percent(text):
    # Naive: the percentage is taken to be a plain number.
    return float(text)
