def parse_number(text):
    # Naive: the number is taken to use a decimal point.
    return float(text)
