def read_text(path):
    """File text: UTF-8 when it decodes, else Windows-1252 (a superset of Latin-1)."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("cp1252")
