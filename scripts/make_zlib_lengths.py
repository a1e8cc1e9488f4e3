#!/usr/bin/env python3
"""Reference zlib lengths for tests/unit/test_privacy_metrics.c: Python's len(zlib.compress(b))
(its default level, Z_DEFAULT_COMPRESSION = 6, as Carlini et al. 2021's zlib attack uses) and,
for contrast, len(zlib.compress(b, 9)), for texts the C test rebuilds byte for byte. Prints the
C table rows; paste them into the test when the texts change."""
import zlib


def lcg_text(n, seed, alphabet):
    """n bytes drawn from alphabet by a 64-bit LCG (Knuth's MMIX constants): x -> a x + c mod
    2^64, byte = alphabet[(x >> 33) % len(alphabet)]"""
    x, out = seed, bytearray()
    for _ in range(n):
        x = (x * 6364136223846793005 + 1442695040888963407) % 2**64
        out.append(alphabet[(x >> 33) % len(alphabet)])
    return bytes(out)


TEXTS = [
    ("empty", b""),
    ("a", b"a"),
    ("bytes 0..255", bytes(range(256))),
    ("abc x 1000", b"abc" * 1000),
    ("genesis x 20", "In the beginning God created the heaven and the earth. ".encode() * 20),
    ("lcg ab 1000", lcg_text(1000, 1, b"ab")),
    ("lcg ab 5000", lcg_text(5000, 1, b"ab")),
    ("lcg abcd 20000", lcg_text(20000, 1, b"abcd")),
]

for name, b in TEXTS:
    print(f'    /* {name}: {len(b)} bytes */ {{{len(zlib.compress(b))}, {len(zlib.compress(b, 9))}}},')
