def read_text(path):
    """File text without a UTF-8 byte order mark (utf-8-sig drops it when present)."""
    with open(path, encoding="utf-8-sig") as f:
        return f.read()
