"""Reference solution for config_merge: deep-merge overrides.json into defaults.json."""

import json


def merge(base, override):
    """Objects merge key by key; any other override value replaces the base value."""
    if isinstance(base, dict) and isinstance(override, dict):
        merged = dict(base)
        for key, value in override.items():
            merged[key] = merge(base[key], value) if key in base else value
        return merged
    return override


def main():
    with open("defaults.json", encoding="utf-8") as f:
        defaults = json.load(f)
    with open("overrides.json", encoding="utf-8") as f:
        overrides = json.load(f)
    with open("merged.json", "w", encoding="utf-8") as f:
        json.dump(merge(defaults, overrides), f, indent=2)


if __name__ == "__main__":
    main()
