def parse_money(text):
    """'$1,299.99', ' GBP 45 ', '1,975.00 USD', '-$120.00', '($120.00)' -> float."""
    cleaned = text.strip()
    negative = "-" in cleaned or (cleaned.startswith("(") and cleaned.endswith(")"))
    number = float("".join(ch for ch in cleaned if ch.isdigit() or ch == "."))
    return -number if negative else number
