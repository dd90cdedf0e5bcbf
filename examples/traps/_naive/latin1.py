def read_text(path):
    # Naive: every file is taken to be UTF-8.
    with open(path, encoding="utf-8") as f:
        return f.read()
