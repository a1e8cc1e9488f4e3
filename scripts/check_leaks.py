#!/usr/bin/env python3
"""Judges an ASan/UBSan unit-test log (scripts/unit_asan.sh): fails on any failing or crashing
test and on any leak with a frame outside the test runner and the system libraries.

Criterion's workers print LeakSanitizer reports for leaks in test code but still pass the test
(exit code 0), so the exit code alone misses them. Its runner process, for its part, sometimes
leaks a 48-byte block of its own at exit (only libcriterion frames; Snaipe/Criterion#515 lists
leaks of that kind), which sets the exit code although no code of ours is involved. So the
verdict comes from the log: the Synthesis line, and each leak's stack.
usage: check_leaks.py LOG"""
import re
import sys

SYSTEM = re.compile(r"libcriterion|libsanitizer|/asan_|libasan|libubsan|libc\.so|ld-linux|libgomp")


def main(path):
    text = open(path, errors="replace").read()
    synth = re.findall(r"Synthesis: Tested: (\d+) \| Passing: (\d+) \| Failing: (\d+) \| Crashing: (\d+)", text)
    if not synth:
        print(f"check_leaks: {path} has no Synthesis line: the test run did not finish")
        return 1
    tested, passing, failing, crashing = map(int, synth[-1])
    bad = 0
    if failing or crashing or tested == 0:
        print(f"check_leaks: {failing} failing and {crashing} crashing of {tested} tests")
        bad = 1
    runner_only = 0
    for block in re.split(r"\n(?=(?:Direct|Indirect) leak of )", text)[1:]:
        frames = re.findall(r"^\s+#\d+ 0x[0-9a-f]+ (.*)$", block, re.M)
        head = block.splitlines()[0]
        if frames and all(SYSTEM.search(f) for f in frames):
            runner_only += 1
            continue
        print(f"check_leaks: {head}")
        for f in frames[:8]:
            print(f"    {f}")
        bad = 1
    if runner_only:
        print(f"check_leaks: {runner_only} leak(s) inside the test runner only (libcriterion), not counted")
    if not bad:
        print(f"check_leaks: {tested} tests passed, no leak of ours")
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
