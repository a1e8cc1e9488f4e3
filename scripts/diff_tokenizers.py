#!/usr/bin/env python3
"""Differential check of axmem's tokenizer.json encoding against the `tokenizers` library
(pip install tokenizers): random texts over an alphabet of the hard cases (whitespace runs,
CR/LF, contractions in both cases, digits, punctuation, combining marks, decomposed accents,
Hangul jamo, NBSP and other Unicode spaces, emoji with ZWJ, added tokens) are written as a
JSONL corpus, encoded by `axmem data encode`, and every document's ids are compared with
the library's (plus the end-of-text the dataset adds).

Usage: scripts/diff_tokenizers.py [--axmem build/bin/axmem] [--n 5000] [TOKENIZER.json...]
(default: every tokenizer under tests/fixtures/tokenizers/). Exit status 1 on a difference.
Not part of CI (it needs the library); the committed fixtures are what CI checks.
"""
import argparse
import glob
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

from tokenizers import Tokenizer

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
ALPHABET = (list(" \t\n\r") * 4 + list("abcXYZ'sStTlLmdvrRE") * 2 + list("0123456789") * 2 +
            list(".,;!?-_()[]<>|/\\\"'#@") +
            ["é", "e\u0301", "ß", "中", "ह", "ि", "\u0301", "\u0323", "\u0308", "٣", "½", "\u00a0",
             "\u3000", "\u2028", "\u0085", "🙂", "👩\u200d👧", "ſ", "K", "Å", "\u1100", "\u1161",
             "\u11a8", "▁", "\xff", "<|endoftext|>", "<s>", "</s>", "<|end_of_text|>", "        ",
             "'ll"])
EOT_NAMES = ["<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"]


def read_axd(path):
    b = open(path, "rb").read()
    _, width = struct.unpack("<II", b[12:20])
    nd, nt = struct.unpack("<QQ", b[24:40])
    off = struct.unpack("<%dQ" % (nd + 1), b[64:64 + 8 * (nd + 1)])
    start = 64 + 8 * (nd + 1)
    toks = struct.unpack("<%d%s" % (nt, "H" if width == 2 else "I"), b[start:start + width * nt])
    return [list(toks[off[i]:off[i + 1]]) for i in range(nd)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--axmem", default=os.path.join(ROOT, "build", "bin", "axmem"))
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("tokenizers", nargs="*")
    a = ap.parse_args()
    paths = a.tokenizers or sorted(glob.glob(os.path.join(ROOT, "tests/fixtures/tokenizers/*.json")))
    rng = random.Random(a.seed)
    # non-empty documents: an empty one is not a document for `data encode`
    texts = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 80))) for _ in range(a.n)]
    texts = [t for t in texts if t.strip()]
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        corpus = os.path.join(d, "c.jsonl")
        with open(corpus, "w") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        for p in paths:
            tok = Tokenizer.from_file(p)
            eot = next(tok.token_to_id(n) for n in EOT_NAMES if tok.token_to_id(n) is not None)
            out = os.path.join(d, "o.axd")
            subprocess.run([a.axmem, "data", "encode", "--tokenizer", p, "--input", corpus,
                            "--out", out, "--threads", "2"], check=True, capture_output=True)
            got = read_axd(out)
            exp = [e.ids for e in tok.encode_batch(texts, add_special_tokens=False)]
            # the dataset writer adds the end-of-text unless the text already ends with it
            exp = [e + [eot] if not e or e[-1] != eot else e for e in exp]
            bad = [i for i in range(len(texts)) if i >= len(got) or got[i] != exp[i]]
            print("%s: %d of %d documents differ" % (os.path.basename(p), len(bad), len(texts)))
            for i in bad[:3]:
                print("   text %s\n   library %s\n   axmem   %s" % (ascii(texts[i]), exp[i],
                                                                   got[i] if i < len(got) else None))
            failed += bool(bad)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
