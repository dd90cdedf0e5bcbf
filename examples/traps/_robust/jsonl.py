def field(record, key):
    """The record's value for key, or None when the key is absent (or null)."""
    return record.get(key)
