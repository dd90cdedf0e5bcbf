"""Reference solution for word_freq: the 10 most frequent words of article.txt."""

import json
import re
from collections import Counter


def main():
    with open("article.txt", encoding="utf-8") as f:
        words = re.findall(r"[a-z]+", f.read().lower())
    counts = Counter(words)
    top = sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:10]
    with open("top_words.json", "w", encoding="utf-8") as f:
        json.dump([[word, count] for word, count in top], f)


if __name__ == "__main__":
    main()
