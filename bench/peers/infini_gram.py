#!/usr/bin/env python3
"""axmem's memscan index next to infini-gram (a suffix-array n-gram engine, from PyPI) on the
same tokens and the same count queries, in the same run (issue 12 item 6).

    python3 bench/peers/infini_gram.py [--tokens 1M | --data FILE.axd] [--n 32] [--queries 1000]

What it does:
  1. the dataset: --data FILE.axd, or bench_memscan --write-data (the synthetic corpus of
     bench/bench_memscan.c: ~1000-token documents, planted passages copied 2..512 times);
  2. the queries: --queries windows of n tokens, half taken from the dataset at random places
     (present, some of them planted duplicates) and half random token ids (absent);
  3. axmem: `memscan index` (build time, index bytes per token), then `memscan lookup --file
     Q.jsonl` (one process for the whole batch: wall time per query, open cost included) and a
     cold single-query process (median of 5);
  4. infini-gram: installs `infini-gram` (and numpy, which its indexer imports) from PyPI into
     a virtual environment (AXMEM_PEERS_VENV, default ~/.cache/axmem-peers/venv), writes the
     same documents in its on-disk token format (tokenized.0: per document a 0xff..ff separator
     then its tokens; offset.0: u64 byte offset of each document) so its own tokenizing step
     (which would download a Hugging Face tokenizer) is skipped, builds its suffix array with
     its indexer (`python -m infini_gram.indexing`: local, nothing downloaded), and times
     engine.count() on each query (and the engine's open);
  5. prints both side by side, and whether every count agrees (both count occurrences inside
     documents: the end-of-text token that ends each .axd document is not written, the
     separator stops matches at document boundaries).

If infini-gram cannot be installed or run here, it says exactly why and still measures axmem.
Timings on a shared, loaded machine are not conclusions; run it on an idle one.
"""
import argparse
import json
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def parse_size(s):
    mult = {"k": 10**3, "m": 10**6, "g": 10**9}
    s = s.strip().lower()
    return int(float(s[:-1]) * mult[s[-1]]) if s and s[-1] in mult else int(s)


class Axd:
    """The .axd layout of data/axd.h: 64-byte header, u64 offsets[n_docs + 1], tokens."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.raw = f.read()
        if self.raw[:8] != b"AXMEMAXD":
            sys.exit(f"{path}: not an .axd dataset (magic); make one with `axmem data encode`")
        self.vocab, self.width, eot = struct.unpack_from("<III", self.raw, 12)
        self.version = struct.unpack_from("<I", self.raw, 8)[0]
        self.eot = eot if self.version >= 3 else 256  # AX_TOK_EOT for versions 1-2
        self.n_docs, self.n_tokens = struct.unpack_from("<QQ", self.raw, 24)
        self.off = struct.unpack_from(f"<{self.n_docs + 1}Q", self.raw, 64)
        self.tok0 = 64 + 8 * (self.n_docs + 1)

    def tokens(self, a, b):
        """tokens [a, b) as a list of ints"""
        fmt = "H" if self.width == 2 else "I"
        return list(struct.unpack_from(f"<{b - a}{fmt}", self.raw, self.tok0 + a * self.width))

    def doc_text(self, d):
        """document d without its trailing end-of-text token"""
        a, b = self.off[d], self.off[d + 1]
        if b > a and self.tokens(b - 1, b)[0] == self.eot:
            b -= 1
        return a, b


def run(cmd, **kw):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    return time.perf_counter() - t0, p


def make_queries(ds, n, q, seed=1):
    rng = random.Random(seed)
    docs = [d for d in range(ds.n_docs) if ds.doc_text(d)[1] - ds.doc_text(d)[0] >= n]
    if not docs:
        sys.exit(f"no document of the dataset holds {n} tokens: use a smaller --n")
    out = []
    for i in range(q):
        if i % 2 == 0:
            a, b = ds.doc_text(rng.choice(docs))
            s = rng.randrange(a, b - n + 1)
            out.append(ds.tokens(s, s + n))
        else:
            out.append([rng.randrange(ds.vocab) for _ in range(n)])
    return out


def axmem_side(args, ds, queries, work):
    r = {}
    idx = os.path.join(work, "axmem.idx")
    dt, p = run([args.axmem, "memscan", "index", "--data", args.data_path, "--n", str(args.n),
                 "--out", idx])
    if p.returncode:
        sys.exit(f"axmem memscan index failed:\n{p.stderr}")
    r["build_s"] = dt
    r["index_bytes"] = os.path.getsize(idx)
    qf = os.path.join(work, "q.jsonl")
    with open(qf, "w") as f:
        for i, t in enumerate(queries):
            f.write(json.dumps({"id": i, "tokens": t}) + "\n")
    dt, p = run([args.axmem, "memscan", "lookup", "--index", idx, "--file", qf])
    if p.returncode:
        sys.exit(f"axmem memscan lookup --file failed:\n{p.stderr}")
    counts = [0] * len(queries)
    for line in p.stdout.splitlines():
        o = json.loads(line)
        w = o["matching_windows"]
        counts[o["id"]] = w[0]["count"] if w else 0
    r["batch_s"] = dt
    r["counts"] = counts
    one = os.path.join(work, "q1.jsonl")
    with open(one, "w") as f:
        f.write(json.dumps({"tokens": queries[0]}) + "\n")
    singles = []
    for _ in range(5):
        dt, p = run([args.axmem, "memscan", "lookup", "--index", idx, "--file", one])
        if p.returncode:
            sys.exit(f"axmem memscan lookup (one query) failed:\n{p.stderr}")
        singles.append(dt)
    r["single_s"] = statistics.median(singles)
    return r


# Runs inside the virtual environment: builds the suffix array and times the counts.
WORKER = r"""
import json, os, resource, statistics, subprocess, sys, time
from infini_gram.engine import InfiniGramEngine
a = json.load(open(sys.argv[1]))
# its indexer sets the open-file limit to --ulimit, soft and hard: ask for what is allowed
hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
ulimit = 1048576 if hard == resource.RLIM_INFINITY else min(hard, 1048576)
t0 = time.perf_counter()
p = subprocess.run([sys.executable, "-m", "infini_gram.indexing", "--data_dir", a["empty"],
                    "--save_dir", a["save"], "--temp_dir", a["temp"], "--token_dtype", a["dtype"],
                    "--cpus", str(a["cpus"]), "--mem", str(a["mem"]), "--ulimit", str(ulimit)],
                   capture_output=True, text=True)
build = time.perf_counter() - t0
if p.returncode or not os.path.exists(os.path.join(a["save"], "table.0")):
    print(json.dumps({"error": "its indexer failed (exit %d): %s" % (p.returncode,
                      (p.stderr or p.stdout)[-1500:])}))
    sys.exit(0)
t0 = time.perf_counter()
eng = InfiniGramEngine(index_dir=a["save"], eos_token_id=a["eot"], vocab_size=a["vmax"],
                       version=4, token_dtype=a["dtype"])
open_s = time.perf_counter() - t0
qs = json.load(open(a["queries"]))
counts, lat = [], []
for q in qs:
    t0 = time.perf_counter()
    r = eng.count(input_ids=q)
    lat.append(time.perf_counter() - t0)
    if "error" in r:
        print(json.dumps({"error": "count: " + str(r["error"])}))
        sys.exit(0)
    counts.append(int(r["count"]))
print(json.dumps({"build_s": build, "open_s": open_s, "counts": counts,
                  "median_s": statistics.median(lat), "mean_s": sum(lat) / len(lat)}))
"""


def venv_python(args):
    """The virtual environment's python with infini-gram installed, or (None, why)."""
    venv = args.venv
    py = os.path.join(venv, "bin", "python")
    probe = [py, "-c", "import infini_gram.engine, numpy"]
    if os.path.exists(py) and subprocess.run(probe, capture_output=True).returncode == 0:
        return py, None
    if not os.path.exists(py):
        _, p = run([sys.executable, "-m", "venv", venv])
        if p.returncode:
            return None, f"`{sys.executable} -m venv {venv}` failed: {p.stderr.strip()[-500:]}"
    _, p = run([py, "-m", "pip", "install", "--quiet", "infini-gram", "numpy", "tqdm"])
    if p.returncode:
        return None, ("`pip install infini-gram numpy tqdm` failed (infini-gram ships wheels for "
                      "CPython >= 3.11 on x86-64 Linux only): " + p.stderr.strip()[-800:])
    p = subprocess.run(probe, capture_output=True, text=True)
    if p.returncode:
        return None, "infini-gram installed but does not import: " + p.stderr.strip()[-800:]
    return py, None


def peer_side(args, ds, queries, work):
    """infini-gram's numbers, or {"error": why}."""
    if ds.vocab >= 2**32 - 1:
        return {"error": "vocabulary too large for infini-gram's u32 tokens"}
    py, why = venv_python(args)
    if not py:
        return {"error": why}
    dtype, sep, width = ("u16", b"\xff\xff", 2) if ds.vocab < 0xFFFF else ("u32", b"\xff" * 4, 4)
    save = os.path.join(work, "ig")
    empty = os.path.join(work, "ig_raw")
    os.makedirs(save)
    os.makedirs(empty)
    # its token format: per document the separator then the tokens; offsets in bytes
    fmt = "<%d" + ("H" if width == 2 else "I")
    pos = 0
    with open(os.path.join(save, "tokenized.0"), "wb") as ft, \
            open(os.path.join(save, "offset.0"), "wb") as fo:
        for d in range(ds.n_docs):
            a, b = ds.doc_text(d)
            if ds.width == width:
                body = ds.raw[ds.tok0 + a * width: ds.tok0 + b * width]
            else:
                t = ds.tokens(a, b)
                body = struct.pack(fmt % len(t), *t)
            fo.write(struct.pack("<Q", pos))
            ft.write(sep + body)
            pos += len(sep) + len(body)
    qpath = os.path.join(work, "ig_queries.json")
    with open(qpath, "w") as f:
        json.dump(queries, f)
    cfg = {"empty": empty, "save": save, "temp": os.path.join(work, "ig_tmp"), "dtype": dtype,
           "cpus": args.cpus, "mem": args.mem_gib, "eot": ds.eot,
           "vmax": 0xFFFF if width == 2 else 2**32 - 1, "queries": qpath}
    cpath = os.path.join(work, "ig_cfg.json")
    with open(cpath, "w") as f:
        json.dump(cfg, f)
    wpath = os.path.join(work, "ig_worker.py")
    with open(wpath, "w") as f:
        f.write(WORKER)
    _, p = run([py, wpath, cpath])
    try:
        r = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {"error": "its run failed (exit %d): %s" % (p.returncode, p.stderr.strip()[-1500:])}
    if "error" not in r:
        r["table_bytes"] = os.path.getsize(os.path.join(save, "table.0"))
        r["data_bytes"] = os.path.getsize(os.path.join(save, "tokenized.0")) + \
            os.path.getsize(os.path.join(save, "offset.0"))
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", help="an .axd dataset (default: a synthetic one of --tokens)")
    ap.add_argument("--tokens", default="1M", help="synthetic dataset size (K/M/G suffixes)")
    ap.add_argument("--n", type=int, default=32, help="window (query) length in tokens")
    ap.add_argument("--queries", type=int, default=1000)
    ap.add_argument("--axmem", default=os.path.join(ROOT, "build/bin/axmem"))
    ap.add_argument("--bench", default=os.path.join(ROOT, "build/bench/bench_memscan"))
    ap.add_argument("--venv", default=os.environ.get(
        "AXMEM_PEERS_VENV", os.path.expanduser("~/.cache/axmem-peers/venv")))
    ap.add_argument("--cpus", type=int, default=os.cpu_count() or 1,
                    help="infini-gram indexer processes")
    ap.add_argument("--mem-gib", type=int, default=4, help="infini-gram indexer memory (GiB)")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    args = ap.parse_args()
    for exe in (args.axmem,) + (() if args.data else (args.bench,)):
        if not os.access(exe, os.X_OK):
            sys.exit(f"{exe} not found: build it first (scons -Q -j2)")
    work = tempfile.mkdtemp(prefix="axmem_peers_")
    try:
        if args.data:
            args.data_path = os.path.abspath(args.data)
        else:
            args.data_path = os.path.join(work, "synth.axd")
            _, p = run([args.bench, "--write-data", args.data_path, args.tokens])
            if p.returncode:
                sys.exit(f"bench_memscan --write-data failed:\n{p.stderr}")
        ds = Axd(args.data_path)
        queries = make_queries(ds, args.n, args.queries)
        print(f"dataset {args.data_path}: {ds.n_tokens} tokens, {ds.n_docs} documents, vocab "
              f"{ds.vocab}; {len(queries)} count queries of {args.n} tokens (half present)")
        ax = axmem_side(args, ds, queries, work)
        ig = peer_side(args, ds, queries, work)
        T, Q = ds.n_tokens, len(queries)
        rows = [("build (s)", f"{ax['build_s']:.3f}"),
                ("index bytes per token", f"{ax['index_bytes'] / T:.2f}"),
                ("open (s)", "(in each process)"),
                ("count query, batch (ms/query, open incl.)", f"{1e3 * ax['batch_s'] / Q:.3f}"),
                ("count query, median (ms)", "-"),
                ("cold one-query process (ms, median of 5)", f"{1e3 * ax['single_s']:.1f}")]
        if "error" in ig:
            peer = ["-"] * len(rows)
        else:
            peer = [f"{ig['build_s']:.3f}",
                    f"{ig['table_bytes'] / T:.2f} (+{ig['data_bytes'] / T:.2f} its token copy)",
                    f"{ig['open_s']:.3f}",
                    f"{1e3 * (ig['open_s'] + Q * ig['mean_s']) / Q:.3f}",
                    f"{1e3 * ig['median_s']:.3f}", "-"]
        print(f"{'':44s} {'axmem memscan':>22s}   infini-gram")
        for (name, a), b in zip(rows, peer):
            print(f"{name:44s} {a:>22s}   {b}")
        if "error" in ig:
            print(f"infini-gram not measured: {ig['error']}")
        else:
            agree = sum(x == y for x, y in zip(ax["counts"], ig["counts"]))
            print(f"counts agree on {agree} of {Q} queries"
                  f" ({sum(c > 0 for c in ax['counts'])} present, max count "
                  f"{max(ax['counts'])})")
            if agree != Q:
                bad = [i for i in range(Q) if ax["counts"][i] != ig["counts"][i]][:5]
                print("  first differences (query: axmem, infini-gram): " +
                      ", ".join(f"{i}: {ax['counts'][i]}, {ig['counts'][i]}" for i in bad))
                return 1
        print("(timings on a loaded machine are not conclusions)")
        return 0
    finally:
        if args.keep:
            print(f"work directory kept: {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
