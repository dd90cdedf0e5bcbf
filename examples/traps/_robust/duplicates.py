def unique_by(rows, key):
    """Rows with repeated key values dropped (the first occurrence is kept)."""
    seen = set()
    unique = []
    for row in rows:
        if row[key] not in seen:
            seen.add(row[key])
            unique.append(row)
    return unique
