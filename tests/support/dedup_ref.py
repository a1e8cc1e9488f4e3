#!/usr/bin/env python3
"""An independent reference for `axmem data dedup` (tests only).

  dedup_ref.py gen PREFIX [--seed S] [--docs D] [--n N]
      writes PREFIX.bin + PREFIX.idx (a Megatron indexed dataset, u16 ids, end-of-text 256
      appended by `axmem data import-megatron --eot 256`) holding planted duplicates: exact
      copies of a passage, partial overlaps, spans exactly N and N-1 tokens long, long runs of
      one token, copies across documents, duplicate documents (long and shorter than N), a
      document made only of earlier text, empty documents, and small-alphabet text.
  dedup_ref.py check IN.axd OUT.axd --n N [--documents] [--summary FILE [--top K]]
      computes the expected output straight from the definition and compares it with OUT.axd
      (documents and tokens) and, with --summary, the JSON's counts and top spans; exit 1 and
      the first difference when they differ.

The definition, applied literally: windows lie inside a document's text (its tokens before
the trailing end-of-text); the window at p is a repeat when an earlier position holds the same
n tokens (a set of the windows seen so far, compared as tuples, in corpus order); a token is
removed iff some repeat window covers it; a document whose text was non-empty and is now empty
is dropped; with --documents a document equal to an earlier one is dropped first."""
import json
import random
import struct
import sys

EOT = 256


def read_axd(path):
    b = open(path, 'rb').read()
    assert b[:8] == b'AXMEMAXD', path
    version, vocab, width, eot = struct.unpack_from('<IIII', b, 8)
    n_docs, n_tok = struct.unpack_from('<QQ', b, 24)
    off = struct.unpack_from('<%dQ' % (n_docs + 1), b, 64)
    base = 64 + 8 * (n_docs + 1)
    fmt = '<%d%s' % (n_tok, 'H' if width == 2 else 'I')
    toks = struct.unpack_from(fmt, b, base)
    eot = eot if version >= 3 else EOT
    return [list(toks[off[d]:off[d + 1]]) for d in range(n_docs)], eot, vocab


def text_len(doc, eot):
    return len(doc) - 1 if doc and doc[-1] == eot else len(doc)


def expected(docs, eot, n, documents):
    """-> (kept docs, stats, top spans)"""
    dup = [False] * len(docs)
    if documents:
        seen = set()
        for d, doc in enumerate(docs):
            t = tuple(doc)
            dup[d] = t in seen
            seen.add(t)
    seen = set()
    count, first = {}, {}
    removed, marks = [], []  # per document: removed flags; per position: ('r'|count|None)
    pos = 0
    starts = []
    for d, doc in enumerate(docs):
        starts.append(pos)
        tl = text_len(doc, eot)
        rem = [False] * len(doc)
        if n > 0:
            for p in range(0, tl - n + 1):
                w = tuple(doc[p:p + n])
                count[w] = count.get(w, 0) + 1
                if w in seen:
                    for i in range(p, p + n):
                        rem[i] = True
                else:
                    seen.add(w)
                    first[w] = (d, p)
        removed.append(rem)
        pos += len(doc)
    out, st = [], dict(span_tokens=0, dup_docs=0, dup_doc_tokens=0, emptied=0)
    for d, doc in enumerate(docs):
        if dup[d]:
            st['dup_docs'] += 1
            st['dup_doc_tokens'] += len(doc)
            continue
        tl = text_len(doc, eot)
        kept = [t for i, t in enumerate(doc) if not removed[d][i]]
        st['span_tokens'] += sum(removed[d])
        if tl > 0 and all(removed[d][:tl]):
            st['emptied'] += 1
            continue
        out.append(kept)
    # spans: runs of consecutive first occurrences (same document) of windows equally repeated
    spans = []
    if n > 0:
        for d, doc in enumerate(docs):
            tl = text_len(doc, eot)
            run = None
            for p in range(0, tl - n + 1):
                w = tuple(doc[p:p + n])
                c = count[w] if first[w] == (d, p) and count[w] >= 2 else 0
                if c and run and run[2] == c and run[1] == p - 1:
                    run[1] = p
                    continue
                if run:
                    spans.append(run)
                run = [p, p, c, d] if c else None
            if run:
                spans.append(run)
    top = sorted(({'count': c, 'tokens': b - a + n, 'first': starts[d] + a, 'doc': d,
                   'offset': a} for a, b, c, d in spans),
                 key=lambda s: (-s['count'], -s['tokens'], s['first']))
    return out, st, top


def gen(prefix, seed, n_docs, n):
    rng = random.Random(seed)
    word = lambda k, alpha=200: [rng.randrange(alpha) for _ in range(k)]
    passage = word(max(3 * n, 80))
    docs = []
    for d in range(n_docs):
        kind = d % 17
        doc = word(rng.randrange(0, 3 * n + 40))
        if kind == 1:  # an exact copy of the passage at a random offset
            at = rng.randrange(len(doc) + 1)
            doc[at:at] = passage
        elif kind == 2:  # a partial overlap: a piece of the passage
            a = rng.randrange(len(passage) // 2)
            doc[len(doc) // 2:len(doc) // 2] = passage[a:a + n + rng.randrange(2 * n)]
        elif kind == 3:  # spans exactly n and n - 1 long, copied from an earlier document
            if docs and len(docs[-1]) >= n:
                src = docs[rng.randrange(len(docs))]
                if len(src) >= n:
                    a = rng.randrange(len(src) - n + 1)
                    doc += src[a:a + n] + word(3) + src[a:a + n - 1]
        elif kind == 4:  # a long run of one token (overlapping repeats)
            doc[5:5] = [rng.randrange(4)] * (2 * n + rng.randrange(50))
        elif kind == 5 and docs:  # a duplicate document
            doc = list(docs[rng.randrange(len(docs))])
        elif kind == 6:  # a short document, duplicated at once
            doc = word(max(1, n // 2))
            docs.append(doc)
            doc = list(doc)
        elif kind == 7:  # only earlier text: left empty
            doc = list(passage[:n + rng.randrange(n)])
        elif kind == 8:  # empty documents
            doc = []
        elif kind == 9:  # a small alphabet: natural repeats
            doc = word(rng.randrange(50, 200), 3)
        docs.append(doc)
    sizes = [len(d) for d in docs]
    with open(prefix + '.bin', 'wb') as f:
        for doc in docs:
            f.write(struct.pack('<%dH' % len(doc), *doc))
    with open(prefix + '.idx', 'wb') as f:
        f.write(b'MMIDIDX\x00\x00' + struct.pack('<QB', 1, 8))
        f.write(struct.pack('<QQ', len(docs), len(docs) + 1))
        f.write(struct.pack('<%di' % len(docs), *sizes))
        ptr, ptrs = 0, []
        for s in sizes:
            ptrs.append(ptr)
            ptr += 2 * s
        f.write(struct.pack('<%dq' % len(docs), *ptrs))
        f.write(struct.pack('<%dq' % (len(docs) + 1), *range(len(docs) + 1)))


def check(inp, outp, n, documents, summary, top_n):
    docs, eot, _ = read_axd(inp)
    got, _, _ = read_axd(outp)
    want, st, top = expected(docs, eot, n, documents)
    if len(got) != len(want):
        print('dedup_ref: %s has %d documents, expected %d' % (outp, len(got), len(want)))
        return 1
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            j = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
            print('dedup_ref: %s document %d differs at token %d (%d vs %d tokens)' %
                  (outp, i, j, len(a), len(b)))
            return 1
    ntok = sum(len(d) for d in docs)
    if summary:
        s = json.load(open(summary))
        checks = [('tokens.before', s['tokens']['before'], ntok),
                  ('tokens.after', s['tokens']['after'], sum(len(d) for d in want)),
                  ('tokens.in_repeated_spans', s['tokens']['in_repeated_spans'],
                   st['span_tokens']),
                  ('tokens.in_duplicate_documents', s['tokens']['in_duplicate_documents'],
                   st['dup_doc_tokens']),
                  ('documents.after', s['documents']['after'], len(want)),
                  ('documents.duplicates', s['documents']['duplicates'], st['dup_docs']),
                  ('documents.emptied', s['documents']['emptied'], st['emptied'])]
        k = len(s['top_spans'])
        keys = ('count', 'tokens', 'first', 'doc', 'offset')
        checks.append(('top_spans', [{q: t[q] for q in keys} for t in s['top_spans']], top[:k]))
        checks.append(('top_spans length', k, min(len(top), top_n)))
        for name, a, b in checks:
            if a != b:
                print('dedup_ref: %s: %s is %s, expected %s' % (summary, name, a, b))
                return 1
    print('dedup_ref: %s matches the definition (n %d%s): %d of %d documents, %d of %d tokens'
          % (outp, n, ', documents' if documents else '', len(want), len(docs),
             sum(len(d) for d in want), ntok))
    return 0


def main(argv):
    if len(argv) >= 2 and argv[0] == 'gen':
        opt = dict(zip(argv[2::2], argv[3::2]))
        gen(argv[1], int(opt.get('--seed', 1)), int(opt.get('--docs', 200)),
            int(opt.get('--n', 8)))
        return 0
    if len(argv) >= 3 and argv[0] == 'check':
        rest = argv[3:]
        n = int(rest[rest.index('--n') + 1]) if '--n' in rest else 0
        summary = rest[rest.index('--summary') + 1] if '--summary' in rest else None
        top_n = int(rest[rest.index('--top') + 1]) if '--top' in rest else 20
        return check(argv[1], argv[2], n, '--documents' in rest, summary, top_n)
    print(__doc__)
    return 2


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
