#!/usr/bin/env python3
"""Reference values for tests/unit/test_memscan_probe.c (clustered_intervals_match_reference):
Clopper-Pearson at real counts (beta quantiles) and the Korn-Graubard interval of a rate from
probes clustered by document, computed with scipy from the formulas, independently of axmem.
Run: python3 tests/unit/ref/clustered_ci.py  (needs scipy)."""
from scipy.stats import beta


def cp_real(k, n):
    lo = 0.0 if k <= 0 else beta.ppf(0.025, k, n - k + 1)
    hi = 1.0 if k >= n else beta.ppf(0.975, k + 1, n - k)
    return lo, hi


def korn_graubard(x, cluster):
    n = len(x)
    p = sum(x) / n
    ids = sorted(set(cluster))
    C = len(ids)
    if p in (0.0, 1.0) or C == 1:
        ne = C
    else:
        s = {c: 0.0 for c in ids}
        m = {c: 0 for c in ids}
        for xi, ci in zip(x, cluster):
            s[ci] += xi
            m[ci] += 1
        v = C / (C - 1) * sum((s[c] - p * m[c]) ** 2 for c in ids) / n**2
        ne = min(p * (1 - p) / v, n) if v > 0 else n
    lo, hi = cp_real(p * ne, ne)
    return p, ne, lo, hi


# the test's data: document d has 1 + d % 4 probes; probe j of document d is exact when
# d % 3 == 0 (mostly by document: a design effect above 1) or (d * 7 + j * 3) % 11 == 0
x, cl = [], []
for d in range(12):
    for j in range(1 + d % 4):
        x.append(1.0 if d % 3 == 0 or (d * 7 + j * 3) % 11 == 0 else 0.0)
        cl.append(100 + 3 * d)
print("cp_real(2.5, 37.3) = %.12g %.12g" % cp_real(2.5, 37.3))
print("cp_real(0.7, 5.2) = %.12g %.12g" % cp_real(0.7, 5.2))
print("korn_graubard: p %.12g n* %.12g lo %.12g hi %.12g" % korn_graubard(x, cl))
print("all zero, 12 documents: lo %.12g hi %.12g" % cp_real(0, 12))
