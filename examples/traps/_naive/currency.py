def parse_money(text):
    # Naive: the amount is taken to be a plain number.
    return float(text)
