def parse_bool(text):
    # Naive: only the word "true" counts as true.
    return text.strip().lower() == "true"
