#!/usr/bin/env python3
"""Regenerate data/corpus/kjv.jsonl from Debian's bible-kjv package (public domain KJV).

One JSON document per chapter: {"text": "Genesis 1\n\n1 In the beginning ...\n..."}.
Usage: apt-get install bible-kjv && python3 scripts/make_kjv_corpus.py > data/corpus/kjv.jsonl
"""
import json
import re
import subprocess
import sys

TITLE = re.compile(r"^[1-3]?\s?[A-Z][A-Za-z ]+ \d+$")
VERSE = re.compile(r"^  (\d+) (.*)$")


def main():
    raw = subprocess.run(["bible", "-m", "8192", "Gen1:1-Rev22:21"],
                         check=True, capture_output=True, text=True).stdout
    title, verses, cur = None, [], None
    out = sys.stdout

    def flush():
        nonlocal verses, cur
        if cur:
            verses.append(cur)
        cur = None
        if title and verses:
            out.write(json.dumps({"text": title + "\n\n" + "\n".join(verses) + "\n"}) + "\n")
        verses = []

    for ln in raw.split("\n"):
        m = VERSE.match(ln)
        if ln and not ln.startswith(" ") and TITLE.match(ln):
            flush()
            title = ln
        elif m:
            if cur:
                verses.append(cur)
            cur = m.group(1) + " " + m.group(2)
        elif ln.strip() and cur is not None:
            cur += " " + ln.strip()
    flush()


if __name__ == "__main__":
    main()
