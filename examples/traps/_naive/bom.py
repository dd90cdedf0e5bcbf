def read_text(path):
    # Naive: plain UTF-8, so a byte order mark stays in the text as U+FEFF.
    with open(path, encoding="utf-8") as f:
        return f.read()
