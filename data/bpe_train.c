/* BPE training. Text is reduced to distinct pre-tokenised chunks with counts; merges are then
 * learned with incremental pair counts: a pair -> (count, list of words containing it) index
 * and a lazy-deletion max-heap keyed by (count, then smallest ids). Each merge touches only
 * the words that contain the merged pair, never the whole corpus. */
#include "data/pretok.h"
#include "data/tok_internal.h"
#include "lib/core/grow.h"
#include "lib/core/log.h"
#include "lib/core/status.h"
#include "lib/core/timer.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* longer chunks (huge whitespace runs, binary) are not learned from: no token is longer */
#define MAX_CHUNK AX_TOK_MAX_TOKEN_BYTES
#define NONE UINT32_MAX

typedef struct {
    uint64_t h, off, count;
    uint32_t len;
} chunk;

struct ax_bpe_trainer {
    uint8_t *keys;
    size_t keys_len, keys_cap;
    chunk *chunks;
    size_t n, cap;
    uint32_t *table; /* chunk index + 1; 0 = empty */
    uint64_t tmask;
    int trained;
};

ax_status ax_bpe_trainer_create(ax_bpe_trainer_t **out) {
    ax_bpe_trainer_t *tr = calloc(1, sizeof *tr);
    if (!tr) return ax_errorf(AX_ERR_NOMEM, "out of memory creating the BPE trainer");
    tr->tmask = (1u << 16) - 1;
    tr->table = calloc(tr->tmask + 1, sizeof *tr->table);
    tr->keys_cap = 1u << 20;
    tr->keys = malloc(tr->keys_cap);
    tr->cap = 1u << 15;
    tr->chunks = malloc(tr->cap * sizeof *tr->chunks);
    if (!tr->table || !tr->keys || !tr->chunks) {
        ax_bpe_trainer_free(tr);
        return ax_errorf(AX_ERR_NOMEM, "out of memory creating the BPE trainer");
    }
    *out = tr;
    return AX_OK;
}

void ax_bpe_trainer_free(ax_bpe_trainer_t *tr) {
    if (!tr) return;
    free(tr->keys);
    free(tr->chunks);
    free(tr->table);
    free(tr);
}

uint64_t ax_bpe_trainer_n_chunks(const ax_bpe_trainer_t *tr) {
    return tr->n;
}

static int table_grow(ax_bpe_trainer_t *tr) {
    uint64_t cap = (tr->tmask + 1) * 2;
    uint32_t *nt = calloc(cap, sizeof *nt);
    if (!nt) return 0;
    for (size_t i = 0; i < tr->n; i++) {
        uint64_t j = tr->chunks[i].h & (cap - 1);
        while (nt[j]) j = (j + 1) & (cap - 1);
        nt[j] = (uint32_t)i + 1;
    }
    free(tr->table);
    tr->table = nt;
    tr->tmask = cap - 1;
    return 1;
}

ax_status ax_bpe_trainer_add(ax_bpe_trainer_t *tr, const uint8_t *p, size_t n) {
    if (tr->trained) return ax_errorf(AX_ERR_INTERNAL, "BPE trainer: text added after training");
    for (size_t i = 0; i < n;) {
        size_t j = ax_pretok_next(p, n, i);
        const uint8_t *s = p + i;
        size_t len = j - i;
        i = j;
        if (len > MAX_CHUNK) continue;
        uint64_t h = XXH3_64bits(s, len);
        uint64_t k = h & tr->tmask;
        for (;; k = (k + 1) & tr->tmask) {
            uint32_t idx = tr->table[k];
            if (!idx) break;
            chunk *c = &tr->chunks[idx - 1];
            if (c->h == h && c->len == len && !memcmp(tr->keys + c->off, s, len)) {
                c->count++;
                goto next;
            }
        }
        if (tr->n >= UINT32_MAX - 1 ||
            !ax_grow(&tr->chunks, &tr->cap, tr->n + 1, sizeof(chunk), 16) ||
            !ax_grow(&tr->keys, &tr->keys_cap, tr->keys_len + len, 1, 16))
            return ax_errorf(AX_ERR_NOMEM,
                             "out of memory counting %zu distinct chunks; "
                             "train on less text (--max-bytes)",
                             tr->n);
        tr->chunks[tr->n] = (chunk){h, tr->keys_len, 1, (uint32_t)len};
        memcpy(tr->keys + tr->keys_len, s, len);
        tr->keys_len += len;
        tr->table[k] = (uint32_t)++tr->n;
        if (2 * tr->n > tr->tmask + 1 && !table_grow(tr))
            return ax_errorf(AX_ERR_NOMEM, "out of memory counting distinct chunks");
    next:;
    }
    return AX_OK;
}

/* ---- merge learning ---- */

typedef struct {
    int64_t count;
    uint32_t a, b, pid;
} hent;

/* max-heap order: higher count first, then smaller (a, b) */
static inline int hbefore(const hent *x, const hent *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->a != y->a) return x->a < y->a;
    return x->b < y->b;
}

typedef struct {
    /* words: the distinct chunks as symbol arrays */
    int32_t *sym;
    uint64_t *woff;
    uint32_t *wlen;
    int64_t *wcount;
    uint32_t *wstamp;
    size_t n_words;
    /* pairs */
    uint32_t *pa, *pb;
    int64_t *pcount;
    uint32_t *phead; /* occurrence list head (node index) */
    uint8_t *pdirty;
    size_t n_pairs, pcap;
    uint64_t *pkeys; /* open addressing: key (ax_tok_pair_key) */
    uint32_t *pvals;
    uint64_t pmask;
    /* occurrence nodes: word, next */
    uint32_t *node_w, *node_next;
    size_t n_nodes, ncap;
    /* heap */
    hent *heap;
    size_t hn, hcap;
    /* pairs changed during the current merge */
    uint32_t *dirty;
    size_t n_dirty, dcap;
    int oom;
} state;

static void hpush(state *s, hent e) {
    if (!ax_grow(&s->heap, &s->hcap, s->hn + 1, sizeof(hent), 16)) {
        s->oom = 1;
        return;
    }
    size_t i = s->hn++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!hbefore(&e, &s->heap[p])) break;
        s->heap[i] = s->heap[p];
        i = p;
    }
    s->heap[i] = e;
}

static void sift_down(hent *h, size_t n, size_t i) {
    hent e = h[i];
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && hbefore(&h[c + 1], &h[c])) c++;
        if (!hbefore(&h[c], &e)) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = e;
}

static hent hpop(state *s) {
    hent top = s->heap[0];
    s->heap[0] = s->heap[--s->hn];
    if (s->hn) sift_down(s->heap, s->hn, 0);
    return top;
}

static int pmap_grow(state *s) {
    uint64_t cap = (s->pmask + 1) * 2;
    uint64_t *nk = calloc(cap, sizeof *nk);
    uint32_t *nv = malloc(cap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return 0;
    }
    for (uint64_t i = 0; i <= s->pmask; i++) {
        if (!s->pkeys[i]) continue;
        uint64_t j = ax_tok_pair_slot(nk, cap - 1, s->pkeys[i]);
        nk[j] = s->pkeys[i];
        nv[j] = s->pvals[i];
    }
    free(s->pkeys);
    free(s->pvals);
    s->pkeys = nk;
    s->pvals = nv;
    s->pmask = cap - 1;
    return 1;
}

/* pair id for (a, b), created with count 0 if new */
static uint32_t pair_id(state *s, uint32_t a, uint32_t b) {
    uint64_t key = ax_tok_pair_key(a, b);
    uint64_t j = ax_tok_pair_slot(s->pkeys, s->pmask, key);
    if (s->pkeys[j]) return s->pvals[j];
    size_t id = s->n_pairs;
    size_t c1 = s->pcap, c2 = s->pcap, c3 = s->pcap, c4 = s->pcap, c5 = s->pcap;
    if (!ax_grow(&s->pa, &c1, id + 1, sizeof *s->pa, 16) ||
        !ax_grow(&s->pb, &c2, id + 1, sizeof *s->pb, 16) ||
        !ax_grow(&s->pcount, &c3, id + 1, sizeof *s->pcount, 16) ||
        !ax_grow(&s->phead, &c4, id + 1, sizeof *s->phead, 16) ||
        !ax_grow(&s->pdirty, &c5, id + 1, sizeof *s->pdirty, 16)) {
        s->oom = 1;
        return NONE;
    }
    s->pcap = c1;
    s->pa[id] = a;
    s->pb[id] = b;
    s->pcount[id] = 0;
    s->phead[id] = NONE;
    s->pdirty[id] = 0;
    s->pkeys[j] = key;
    s->pvals[j] = (uint32_t)id;
    s->n_pairs++;
    if (2 * s->n_pairs > s->pmask + 1 && !pmap_grow(s)) s->oom = 1;
    return (uint32_t)id;
}

/* add delta occurrences of (a, b) in word w; increments also record w in the pair's list */
static void pair_add(state *s, uint32_t a, uint32_t b, int64_t delta, uint32_t w) {
    uint32_t p = pair_id(s, a, b);
    if (p == NONE) return;
    s->pcount[p] += delta;
    if (!s->pdirty[p]) {
        if (!ax_grow(&s->dirty, &s->dcap, s->n_dirty + 1, sizeof *s->dirty, 16)) {
            s->oom = 1;
            return;
        }
        s->pdirty[p] = 1;
        s->dirty[s->n_dirty++] = p;
    }
    if (delta > 0 && (s->phead[p] == NONE || s->node_w[s->phead[p]] != w)) {
        size_t c1 = s->ncap, c2 = s->ncap;
        if (s->n_nodes >= NONE - 1 ||
            !ax_grow(&s->node_w, &c1, s->n_nodes + 1, sizeof *s->node_w, 16) ||
            !ax_grow(&s->node_next, &c2, s->n_nodes + 1, sizeof *s->node_next, 16)) {
            s->oom = 1;
            return;
        }
        s->ncap = c1;
        s->node_w[s->n_nodes] = w;
        s->node_next[s->n_nodes] = s->phead[p];
        s->phead[p] = (uint32_t)s->n_nodes++;
    }
}

/* push every pair changed in this step with its exact new count; older entries go stale */
static void flush_dirty(state *s) {
    for (size_t i = 0; i < s->n_dirty; i++) {
        uint32_t p = s->dirty[i];
        s->pdirty[p] = 0;
        if (s->pcount[p] > 0) hpush(s, (hent){s->pcount[p], s->pa[p], s->pb[p], p});
    }
    s->n_dirty = 0;
}

static void state_free(state *s) {
    free(s->sym);
    free(s->woff);
    free(s->wlen);
    free(s->wcount);
    free(s->wstamp);
    free(s->pa);
    free(s->pb);
    free(s->pcount);
    free(s->phead);
    free(s->pdirty);
    free(s->pkeys);
    free(s->pvals);
    free(s->node_w);
    free(s->node_next);
    free(s->heap);
    free(s->dirty);
}

/* merge (a, b) -> c in every word that contains it, updating pair counts incrementally */
static void apply_merge(state *s, uint32_t pid, uint32_t stamp) {
    uint32_t a = s->pa[pid], b = s->pb[pid];
    int32_t c = (int32_t)(AX_TOK_FIRST_MERGE) + (int32_t)(stamp - 1);
    uint32_t node = s->phead[pid];
    s->phead[pid] = NONE; /* every occurrence disappears below */
    for (; node != NONE && !s->oom; node = s->node_next[node]) {
        uint32_t w = s->node_w[node];
        if (s->wstamp[w] == stamp) continue; /* listed twice */
        s->wstamp[w] = stamp;
        int32_t *y = s->sym + s->woff[w];
        size_t n = s->wlen[w], o = 0;
        int64_t cnt = s->wcount[w];
        for (size_t i = 0; i < n;) {
            if (i + 1 < n && (uint32_t)y[i] == a && (uint32_t)y[i + 1] == b) {
                /* y[o-1] is already rewritten, so back-to-back merges net out correctly */
                if (o > 0) {
                    pair_add(s, (uint32_t)y[o - 1], a, -cnt, w);
                    pair_add(s, (uint32_t)y[o - 1], (uint32_t)c, cnt, w);
                }
                if (i + 2 < n) {
                    pair_add(s, b, (uint32_t)y[i + 2], -cnt, w);
                    pair_add(s, (uint32_t)c, (uint32_t)y[i + 2], cnt, w);
                }
                pair_add(s, a, b, -cnt, w);
                y[o++] = c;
                i += 2;
            } else {
                y[o++] = y[i++];
            }
        }
        s->wlen[w] = (uint32_t)o;
    }
}

ax_status ax_bpe_trainer_train(ax_bpe_trainer_t *tr, int vocab_size, volatile int *stop,
                               ax_tokenizer_t **out) {
    *out = NULL;
    if (vocab_size < AX_TOK_FIRST_MERGE || vocab_size > AX_TOK_MAX_VOCAB)
        return ax_errorf(AX_ERR_ARG, "vocabulary size %d is out of range; use %d..%d", vocab_size,
                         AX_TOK_FIRST_MERGE, AX_TOK_MAX_VOCAB);
    if (tr->trained) return ax_errorf(AX_ERR_INTERNAL, "BPE trainer: train called twice");
    tr->trained = 1;
    int want = vocab_size - AX_TOK_FIRST_MERGE;
    double t0 = ax_now();
    state s = {0};
    ax_status st = AX_OK;
    uint32_t *merges = malloc(sizeof(uint32_t) * 2 * (size_t)(want ? want : 1));
    s.n_words = tr->n;
    s.sym = malloc((tr->keys_len ? tr->keys_len : 1) * sizeof *s.sym);
    s.woff = malloc((tr->n ? tr->n : 1) * sizeof *s.woff);
    s.wlen = malloc((tr->n ? tr->n : 1) * sizeof *s.wlen);
    s.wcount = malloc((tr->n ? tr->n : 1) * sizeof *s.wcount);
    s.wstamp = calloc(tr->n ? tr->n : 1, sizeof *s.wstamp);
    s.pmask = (1u << 16) - 1;
    s.pkeys = calloc(s.pmask + 1, sizeof *s.pkeys);
    s.pvals = malloc((s.pmask + 1) * sizeof *s.pvals);
    if (!merges || !s.sym || !s.woff || !s.wlen || !s.wcount || !s.wstamp || !s.pkeys || !s.pvals)
        goto nomem;
    /* words keep the chunk order, which is the order of first appearance in the text */
    for (size_t w = 0; w < tr->n; w++) {
        const chunk *c = &tr->chunks[w];
        s.woff[w] = c->off;
        s.wlen[w] = c->len;
        s.wcount[w] = (int64_t)c->count;
        for (uint32_t i = 0; i < c->len; i++) s.sym[c->off + i] = tr->keys[c->off + i];
    }
    for (size_t w = 0; w < tr->n && !s.oom; w++) {
        const int32_t *y = s.sym + s.woff[w];
        for (uint32_t i = 0; i + 1 < s.wlen[w]; i++)
            pair_add(&s, (uint32_t)y[i], (uint32_t)y[i + 1], s.wcount[w], (uint32_t)w);
    }
    if (s.oom) goto nomem;
    /* heapify everything at once instead of n pushes */
    for (size_t i = 0; i < s.n_dirty; i++) s.pdirty[s.dirty[i]] = 0;
    s.n_dirty = 0;
    if (!ax_grow(&s.heap, &s.hcap, s.n_pairs + 1, sizeof(hent), 16)) goto nomem;
    for (size_t p = 0; p < s.n_pairs; p++)
        if (s.pcount[p] > 0) s.heap[s.hn++] = (hent){s.pcount[p], s.pa[p], s.pb[p], (uint32_t)p};
    for (size_t i = s.hn / 2; i-- > 0;) sift_down(s.heap, s.hn, i);
    AX_INFO("tokenizer-train: %zu distinct chunks, %zu distinct pairs; learning %d merges", tr->n,
            s.n_pairs, want);

    int m = 0;
    double last = ax_now();
    while (m < want) {
        if (stop && *stop) {
            st = ax_errorf(AX_ERR_INTERRUPTED,
                           "tokenizer training interrupted after %d of %d "
                           "merges; nothing was written",
                           m, want);
            goto done;
        }
        hent e;
        int found = 0;
        while (s.hn) {
            e = hpop(&s);
            if (s.pcount[e.pid] == e.count) {
                found = 1;
                break;
            }
        }
        if (!found) break;
        merges[2 * m] = e.a;
        merges[2 * m + 1] = e.b;
        m++;
        apply_merge(&s, e.pid, (uint32_t)m);
        flush_dirty(&s);
        if (s.oom) goto nomem;
        if (s.pcount[e.pid] != 0) {
            st = ax_errorf(AX_ERR_INTERNAL, "BPE trainer: pair (%u, %u) survived its merge", e.a,
                           e.b);
            goto done;
        }
        double now = ax_now();
        if (now - last > 2.0) {
            last = now;
            AX_INFO("tokenizer-train: merge %d/%d (pair count %lld), %.1f s", m, want,
                    (long long)e.count, now - t0);
        }
    }
    if (m < want)
        AX_WARN("tokenizer-train: the text has no more pairs to merge after %d merges; the "
                "vocabulary is %d, not %d (train on more text for a larger one)",
                m, AX_TOK_FIRST_MERGE + m, vocab_size);
    st = ax_tok_from_merges(merges, m, "trained tokenizer", out);
    if (st == AX_OK) (*out)->checksum = ax_tok_compute_checksum(*out);
    AX_INFO("tokenizer-train: %d merges in %.2f s", m, ax_now() - t0);
    goto done;
nomem:
    st = ax_errorf(AX_ERR_NOMEM,
                   "out of memory training the tokenizer (%zu distinct chunks); "
                   "train on less text (--max-bytes)",
                   tr->n);
done:
    free(merges);
    state_free(&s);
    return st;
}
