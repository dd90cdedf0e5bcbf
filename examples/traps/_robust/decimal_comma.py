def parse_number(text):
    """'21,4' -> 21.4 and '1.234,5' -> 1234.5 (decimal comma, dot as thousands separator)."""
    cleaned = text.strip().replace(" ", "")
    if "," in cleaned:
        cleaned = cleaned.replace(".", "").replace(",", ".")
    return float(cleaned)
