#!/usr/bin/env python3
"""Writes the Megatron / GPT-NeoX indexed-dataset fixtures in tests/fixtures/megatron/.

Each dataset is PREFIX.bin + PREFIX.idx in the "MMIDIDX" format that Megatron-LM's
indexed_dataset.py (_IndexWriter) and GPT-NeoX write, from the format's description alone (no
Megatron install needed):
    idx: b"MMIDIDX\\x00\\x00", u64 version 1, u8 dtype code, u64 n_seq, u64 n_doc_idx,
         i32 sizes[n_seq], i64 pointers[n_seq] (byte offsets into .bin),
         i64 doc_idx[n_doc_idx] (document d = sequences doc_idx[d] .. doc_idx[d+1]-1)
    bin: the tokens of every sequence, in order, as the dtype.
expected.json holds, per dataset, the source documents and what `axmem data import-megatron`
must produce: the same ids and document boundaries, each document ending with end-of-text
(appended only where the source lacks it).

Run: python3 scripts/make_megatron_fixture.py [OUT_DIR]   (deterministic; stdlib only)
"""
import json
import os
import random
import struct
import sys

DTYPES = {  # code: (struct format, bytes); Megatron's DType enum
    1: ("B", 1), 2: ("b", 1), 3: ("h", 2), 4: ("i", 4), 5: ("q", 8), 8: ("H", 2),
}


def write_dataset(prefix, code, docs):
    """docs: list of documents, each a list of sequences, each a list of token ids."""
    fmt, width = DTYPES[code]
    sizes, pointers, doc_idx = [], [], [0]
    payload = bytearray()
    for doc in docs:
        for seq in doc:
            pointers.append(len(payload))
            sizes.append(len(seq))
            payload += struct.pack("<%d%s" % (len(seq), fmt), *seq)
        doc_idx.append(len(sizes))
    idx = bytearray(b"MMIDIDX\x00\x00")
    idx += struct.pack("<QBQQ", 1, code, len(sizes), len(doc_idx))
    idx += struct.pack("<%di" % len(sizes), *sizes)
    idx += struct.pack("<%dq" % len(pointers), *pointers)
    idx += struct.pack("<%dq" % len(doc_idx), *doc_idx)
    with open(prefix + ".bin", "wb") as f:
        f.write(payload)
    with open(prefix + ".idx", "wb") as f:
        f.write(idx)


def expected(docs, eot, vocab):
    out = []
    for doc in docs:
        toks = [t for seq in doc for t in seq]
        if not toks or toks[-1] != eot:
            toks.append(eot)
        out.append(toks)
    return {"eot": eot, "vocab": vocab, "source_docs": [[t for s in d for t in s] for d in docs],
            "axd_docs": out}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "megatron")
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(13)
    result = {}

    # Pythia-like: uint16 ids from a 50k vocabulary, every document ends with end-of-text 0
    # (GPT-NeoX --append-eod); some documents in several sequences (--split-sentences); ids 0
    # and 256 inside documents (ordinary tokens here), one document of end-of-text alone.
    docs = []
    for d in range(10):
        n_seq = 1 + d % 3
        doc = [[rng.randrange(1, 50277) for _ in range(rng.randrange(1, 9))] for _ in range(n_seq)]
        doc[-1].append(0)
        docs.append(doc)
    docs[3][0][1:1] = [0, 256]
    docs.insert(5, [[0]])
    write_dataset(os.path.join(out_dir, "pythia_u16"), 8, docs)
    # imported without flags: end-of-text inferred (all documents end with 0), vocabulary size
    # the largest id + 1
    result["pythia_u16"] = expected(docs, 0, max(t for d in docs for s in d for t in s) + 1)

    # GPT-2-like without end-of-text (no --append-eod), int32: --eot 50256 must be appended;
    # an empty document (no sequences) and an empty sequence inside a document.
    docs = [[[rng.randrange(0, 50256) for _ in range(rng.randrange(1, 7))]] for _ in range(6)]
    docs[2].append([])
    docs[2].append([rng.randrange(0, 50256) for _ in range(3)])
    docs.insert(4, [])
    write_dataset(os.path.join(out_dir, "gpt2_i32"), 4, docs)
    result["gpt2_i32"] = expected(docs, 50256, 50257)  # imported with --eot 50256 --vocab-size 50257

    with open(os.path.join(out_dir, "expected.json"), "w") as f:
        json.dump(result, f, indent=None, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
