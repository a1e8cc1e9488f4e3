/* `axmem data dedup` (index/dedup_run.h): the index's occurrence lists mark repeat windows
 * chunk by chunk, and rank 0 walks the corpus in order writing what is kept. */
#include "index/dedup_run.h"
#include "index/dedup_docs.h"
#include "index/dedup_summary.h"
#include "index/hash.h"
#include "index/index.h"

#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/log.h"
#include "lib/core/progress.h"
#include "lib/core/timer.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ax_dedup_opts_default(ax_dedup_opts *o) {
    memset(o, 0, sizeof *o);
    o->hash_bits = 64;
    o->top = AX_DEDUP_TOP_DEFAULT;
}

/* ---- marking: 1 at a repeat window's start, c >= 2 at the first occurrence of a window
 * occurring c times (capped at INT32_MAX), 0 elsewhere; positions [lo, hi) ---- */
static void mark_chunk(const ax_memscan_index_t *idx, uint64_t g0, uint64_t g1, uint64_t lo,
                       uint64_t hi, int32_t *marks) {
    for (uint64_t g = g0; g < g1; g++) {
        const uint64_t *l;
        uint64_t c = ax_memscan_index_group(idx, g, &l);
        if (c < 2) continue;   /* damaged: ax_memscan_index_check fails the run */
        if (l[0] >= hi) break; /* groups ascend by first occurrence, and lists from it */
        if (l[c - 1] < lo) continue;
        if (l[0] >= lo) marks[l[0] - lo] = c > INT32_MAX ? INT32_MAX : (int32_t)c;
        for (uint64_t i = 1; i < c && l[i] < hi; i++)
            if (l[i] >= lo) marks[l[i] - lo] = 1;
    }
}

/* ---- rank 0's walk over the corpus in order ---- */
typedef struct {
    const ax_axd_t *ds;
    const uint64_t *off;
    uint64_t D;
    uint64_t n;
    uint32_t eot;
    const uint8_t *dup; /* duplicate documents (NULL: none) */
    ax_axd_writer_t *w;
    int top;
    ax_dedup_result *r;
    uint64_t d, text_end, cover; /* current document, its text's end, repeat windows' reach */
    int32_t *doc;                /* its kept tokens */
    size_t len, cap, kept_text;
    int32_t *tok; /* read buffer */
    volatile int *stop;
    ax_progress *prog; /* NULL: no progress lines */
    int run;           /* a run of first occurrences of equally repeated windows */
    uint64_t run_first, run_last, run_count;
} walker;

#define WALK_BLOCK 65536

/* span order: count, then length, descending; then position */
static int span_before(const ax_dedup_span *a, const ax_dedup_span *b) {
    if (a->count != b->count) return a->count > b->count;
    if (a->len != b->len) return a->len > b->len;
    return a->first < b->first;
}

static void close_run(walker *k) {
    if (!k->run) return;
    k->run = 0;
    ax_dedup_result *r = k->r;
    ax_dedup_span s = {.count = k->run_count,
                       .first = k->run_first,
                       .len = k->run_last - k->run_first + k->n,
                       .doc = k->d,
                       .offset = k->run_first - k->off[k->d]};
    size_t at = r->n_spans;
    if (at == (size_t)k->top) {
        if (!at || !span_before(&s, &r->spans[at - 1])) return;
        at--;
    } else {
        r->n_spans++;
    }
    while (at > 0 && span_before(&s, &r->spans[at - 1])) {
        r->spans[at] = r->spans[at - 1];
        at--;
    }
    r->spans[at] = s;
}

static ax_status push(walker *k, int32_t t) {
    if (k->len == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 4096;
        int32_t *p = realloc(k->doc, cap * sizeof *p);
        if (!p)
            return ax_errorf(AX_ERR_NOMEM, "data dedup: out of memory for document %llu",
                             (unsigned long long)k->d);
        k->doc = p;
        k->cap = cap;
    }
    k->doc[k->len++] = t;
    return AX_OK;
}

static void start_doc(walker *k) {
    k->len = k->kept_text = 0;
    k->cover = 0;
    if (k->d < k->D) k->text_end = ax_ms_doc_text_end(k->ds, k->d);
}

/* document k->d is read whole: write what is kept, or count it dropped */
static ax_status finish_doc(walker *k) {
    close_run(k);
    ax_dedup_result *r = k->r;
    uint64_t d = k->d, text = k->text_end - k->off[d];
    ax_status st = AX_OK;
    if (k->dup && k->dup[d]) {
        r->dup_docs++;
        r->dup_doc_tokens += k->off[d + 1] - k->off[d];
    } else if (text > 0 && k->kept_text == 0) {
        r->emptied_docs++;
    } else {
        st = ax_axd_writer_add_doc(k->w, k->doc, k->len);
        r->docs_after++;
        r->tokens_after += k->len + (k->len == 0 || (uint32_t)k->doc[k->len - 1] != k->eot);
    }
    k->d++;
    start_doc(k);
    return st;
}

/* tokens [lo, hi) in order (marks: the chunk's, or NULL when spans are kept); documents that
 * end by hi are written */
static ax_status walk_chunk(walker *k, uint64_t lo, uint64_t hi, const int32_t *marks) {
    uint64_t t = lo;
    ax_status st = AX_OK;
    while (t < hi && st == AX_OK) {
        while (k->d < k->D && k->off[k->d + 1] <= t && st == AX_OK) st = finish_doc(k);
        if (st != AX_OK) break;
        uint64_t dend = k->off[k->d + 1], e = dend < hi ? dend : hi;
        if (k->dup && k->dup[k->d]) { /* every window in it occurs earlier: nothing to see */
            t = e;
            continue;
        }
        while (t < e && st == AX_OK) {
            if (k->stop && *k->stop)
                return ax_errorf(AX_ERR_INTERRUPTED, "data dedup: stopped; nothing written");
            if (k->prog) ax_progress_tick(k->prog, (long)t);
            size_t b = e - t < WALK_BLOCK ? (size_t)(e - t) : WALK_BLOCK;
            ax_axd_tokens(k->ds, t, b, k->tok);
            for (size_t i = 0; i < b && st == AX_OK; i++, t++) {
                if (t < k->text_end) {
                    int32_t m = marks ? marks[t - lo] : 0;
                    if (m >= 2) {
                        if (k->run && t == k->run_last + 1 && (uint64_t)m == k->run_count) {
                            k->run_last = t;
                        } else {
                            close_run(k);
                            k->run = 1;
                            k->run_first = k->run_last = t;
                            k->run_count = (uint64_t)m;
                        }
                    } else {
                        close_run(k);
                        if (m == 1 && t + k->n > k->cover) k->cover = t + k->n;
                    }
                    if (t < k->cover) {
                        k->r->span_tokens++;
                        continue;
                    }
                    k->kept_text++;
                }
                st = push(k, k->tok[i]);
            }
        }
    }
    while (st == AX_OK && k->d < k->D && k->off[k->d + 1] <= hi) st = finish_doc(k);
    return st;
}

/* ---- the command ---- */

static int same_file(const char *a, const char *b) {
    struct stat x, y;
    if (!strcmp(a, b)) return 1;
    return stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

static ax_status check_opts(const ax_dedup_opts *o) {
    if (!o->input || !*o->input)
        return ax_errorf(AX_ERR_ARG, "data dedup: --input FILE.axd is required");
    if (!o->out || !*o->out) return ax_errorf(AX_ERR_ARG, "data dedup: --out FILE.axd is required");
    if (o->n < 0 || o->n > AX_MEMSCAN_N_MAX)
        return ax_errorf(AX_ERR_ARG, "data dedup: --n %d is outside 1..%d (0: keep spans)", o->n,
                         AX_MEMSCAN_N_MAX);
    if (o->n == 0 && !o->documents)
        return ax_errorf(AX_ERR_ARG, "data dedup: nothing to do: give --n N (remove repeated "
                                     "spans of >= N tokens, e.g. 50) and/or --documents");
    if (o->hash_bits < 1 || o->hash_bits > 64)
        return ax_errorf(AX_ERR_ARG, "data dedup: --hash-bits %d is outside 1..64", o->hash_bits);
    if (o->top < 0 || o->top > AX_DEDUP_TOP_MAX)
        return ax_errorf(AX_ERR_ARG, "data dedup: --top %d is outside 0..%d", o->top,
                         AX_DEDUP_TOP_MAX);
    if (same_file(o->input, o->out))
        return ax_errorf(AX_ERR_ARG,
                         "data dedup: --out %s is the input; write the deduplicated dataset to "
                         "another file",
                         o->out);
    return AX_OK;
}

/* rank 0's checks of the files: outputs apart from the input and each other, the tokenizer
 * the dataset's */
static ax_status check_files(const ax_dedup_opts *o, const ax_axd_t *ds, const char *summary,
                             ax_tokenizer_t **tok) {
    if (same_file(summary, o->input) || same_file(summary, o->out))
        return ax_errorf(AX_ERR_ARG, "data dedup: --summary %s is %s; give another file", summary,
                         same_file(summary, o->input) ? "the input" : "--out");
    if (!o->tokenizer || !*o->tokenizer) return AX_OK;
    AX_CHECK(ax_tokenizer_load(o->tokenizer, tok));
    return ax_axd_check_tokenizer(ds, *tok, o->tokenizer);
}

static uint64_t half_the_machine(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 2 : (1ULL << 32);
}

/* the index of the windows: built in memory (each rank its own windows) or, over the limit,
 * spilled to tmp and opened in place on every rank (each rank an equal share of the lists) */
static ax_status build_index(const ax_dedup_opts *o, const ax_axd_t *ds, ax_grid_t *g,
                             uint64_t mem_limit, const char *tmp, ax_memscan_index_t **idx,
                             ax_dedup_result *r, uint64_t *g0, uint64_t *g1) {
    int P = ax_grid_size(g), rank = ax_grid_rank(g);
    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    bo.n = o->n;
    bo.seed = o->seed;
    bo.hash_bits = o->hash_bits;
    bo.progress = o->progress && rank == 0;
    bo.stop = o->stop;
    bo.mem_limit = mem_limit;
    if (o->round_windows) bo.round_windows = o->round_windows;
    double t0 = ax_now();
    ax_status st;
    r->spilled =
        ax_memscan_windows_of(ds, o->n) / (uint64_t)P > mem_limit / AX_MEMSCAN_BYTES_PER_WINDOW;
    if (r->spilled) {
        ax_memscan_info info;
        st = ax_memscan_index_build_bounded(ds, &bo, mem_limit, tmp, &info);
        st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup: index");
        if (st == AX_OK) st = ax_memscan_index_open(tmp, ds, idx);
        st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup: opening the index");
        if (st != AX_OK) return st;
        uint64_t G = ax_memscan_index_groups(*idx);
        *g0 = G * (uint64_t)rank / (uint64_t)P;
        *g1 = G * (uint64_t)(rank + 1) / (uint64_t)P;
    } else {
        st = ax_memscan_index_build(ds, &bo, idx);
        if (st != AX_OK) return st; /* the build agrees on failures itself */
        *g0 = 0;
        *g1 = ax_memscan_index_groups(*idx);
    }
    const ax_memscan_info *in = ax_memscan_index_info(*idx);
    r->windows = in->n_windows;
    r->distinct = in->n_distinct;
    r->repeated = in->n_dup;
    r->index_s = ax_now() - t0;
    return AX_OK;
}

static void remove_index_files(const char *tmp) {
    char side[4400];
    unlink(tmp);
    snprintf(side, sizeof side, "%s.json", tmp);
    unlink(side);
}

ax_status ax_dedup_run(const ax_dedup_opts *o, ax_dedup_result *r) {
    memset(r, 0, sizeof *r);
    double t0 = ax_now();
    ax_grid_t *g = NULL;
    ax_axd_t *ds = NULL;
    ax_tokenizer_t *tok = NULL;
    ax_memscan_index_t *idx = NULL;
    ax_axd_writer_t *w = NULL;
    uint8_t *dup = NULL;
    int32_t *marks = NULL;
    walker k = {0};
    char tmp[4300];
    int have_tmp = 0;

    ax_status st = ax_grid_create_world(&g);
    if (st != AX_OK) return st;
    int P = ax_grid_size(g), rank = ax_grid_rank(g);
    r->ranks = P;
    st = check_opts(o);
    if (st == AX_OK) {
        if (o->summary && *o->summary)
            snprintf(r->summary, sizeof r->summary, "%s", o->summary);
        else
            snprintf(r->summary, sizeof r->summary, "%s.dedup.json", o->out);
        snprintf(tmp, sizeof tmp, "%s.dedup-index", o->out);
        st = ax_axd_open(o->input, AX_AXD_VERIFY, &ds);
    }
    if (st == AX_OK && rank == 0) st = check_files(o, ds, r->summary, &tok);
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup");
    if (st != AX_OK) goto done;
    uint64_t N = ax_axd_n_tokens(ds), mem_limit = o->mem_limit ? o->mem_limit : half_the_machine();
    r->tokens_before = N;
    r->docs_before = ax_axd_n_docs(ds);

    if (o->documents) {
        uint64_t n_dup;
        st = ax_dedup_docs(ds, g, o->seed, o->hash_bits, &dup, &n_dup);
        st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup --documents");
        if (st != AX_OK) goto done;
    }
    uint64_t g0 = 0, g1 = 0;
    if (o->n > 0) {
        have_tmp = 1;
        st = build_index(o, ds, g, mem_limit, tmp, &idx, r, &g0, &g1);
        if (st != AX_OK) goto done;
    }

    /* chunks of positions: 4 bytes a position, at most an eighth of the limit (>= 1M) */
    uint64_t C = mem_limit / 8 / sizeof(int32_t);
    if (C < (1u << 20)) C = 1u << 20;
    if (o->chunk_tokens) C = o->chunk_tokens;
    if (C > N) C = N ? N : 1;
    if (o->n > 0 && !(marks = malloc(sizeof *marks * (size_t)C)))
        st = ax_errorf(AX_ERR_NOMEM, "data dedup: out of memory for %llu marks",
                       (unsigned long long)C);
    if (st == AX_OK && rank == 0) {
        st = ax_axd_writer_create(o->out, ax_axd_vocab_size(ds), &w);
        if (st == AX_OK) {
            ax_axd_writer_set_tokenizer(w, ax_axd_tokenizer_checksum(ds));
            if (ax_axd_eot(ds) != AX_TOK_EOT) st = ax_axd_writer_set_eot(w, ax_axd_eot(ds));
        }
        k = (walker){.ds = ds,
                     .off = ax_axd_doc_offsets(ds),
                     .D = ax_axd_n_docs(ds),
                     .n = (uint64_t)o->n,
                     .eot = ax_axd_eot(ds),
                     .dup = dup,
                     .w = w,
                     .top = o->top,
                     .r = r,
                     .stop = o->stop};
        k.tok = malloc(sizeof *k.tok * WALK_BLOCK);
        if (!k.tok && st == AX_OK) st = ax_errorf(AX_ERR_NOMEM, "data dedup: out of memory");
        start_doc(&k);
    }
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup");
    ax_progress prog;
    int show = o->progress && rank == 0;
    if (show) {
        ax_progress_begin(&prog, "data dedup: tokens", 0, (long)N);
        k.prog = &prog;
    }
    for (uint64_t lo = 0; st == AX_OK && lo < N; lo += C) {
        uint64_t hi = N - lo < C ? N : lo + C;
        if (marks) {
            memset(marks, 0, sizeof *marks * (size_t)(hi - lo));
            mark_chunk(idx, g0, g1, lo, hi, marks);
            st = ax_memscan_index_check(idx);
        }
        if (st == AX_OK && o->stop && *o->stop)
            st = ax_errorf(AX_ERR_INTERRUPTED, "data dedup: stopped; nothing written");
        st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup");
        if (st == AX_OK && marks && P > 1)
            st = ax_coll_allreduce(g, AX_AXIS_WORLD, marks, (long)(hi - lo), AX_DT_I32,
                                   AX_OP_SUM); /* no position is marked on two ranks */
        if (st == AX_OK && rank == 0) {
            st = walk_chunk(&k, lo, hi, marks);
            if (show) ax_progress_tick(&prog, (long)hi);
        }
    }
    if (show) ax_progress_end(&prog);
    if (st == AX_OK && rank == 0) /* documents after the last token: none in a valid dataset */
        while (st == AX_OK && k.d < k.D) st = finish_doc(&k);
    if (st == AX_OK && o->stop && *o->stop)
        st = ax_errorf(AX_ERR_INTERRUPTED, "data dedup: stopped; nothing written");
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup");
    if (rank == 0 && w) {
        if (st == AX_OK)
            st = ax_axd_writer_close(w);
        else
            ax_axd_writer_abort(w);
        w = NULL;
    }
    if (st == AX_OK && rank == 0) {
        r->total_s = ax_now() - t0;
        st = ax_dedup_previews(ds, tok, r);
        if (st == AX_OK) st = ax_dedup_write_summary(o, ds, tok, r);
    }
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "data dedup");
done:
    if (w) ax_axd_writer_abort(w);
    ax_memscan_index_free(idx);
    if (have_tmp && r->spilled) { /* every rank has closed it before rank 0 removes it */
        ax_barrier(g, AX_AXIS_WORLD);
        if (rank == 0) remove_index_files(tmp);
    }
    free(k.doc);
    free(k.tok);
    free(marks);
    free(dup);
    ax_tokenizer_free(tok);
    ax_axd_free(ds);
    ax_grid_free(g);
    if (st == AX_OK) r->total_s = ax_now() - t0;
    return st;
}
