/* goldfish show over one text; goldfish stats over a dataset: static is counted from positions
 * alone, hash masks the token stream in chunks (with each chunk's left context), none is the
 * longest document. */
#include "goldfish/goldfish_run.h"
#include "lib/core/log.h"
#include "lib/core/progress.h"
#include "lib/core/stop.h"
#include "lib/core/timer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#define STATS_CHUNK (1L << 20) /* targets masked per step */

/* Longest run of kept targets that does not cross a document start (doc_pos == 0). */
typedef struct {
    uint64_t cur, best, best_end; /* best_end: index one past the run's last target */
} run_tracker;

static void runs_feed(run_tracker *r, const uint8_t *keep, const uint32_t *doc_pos, long n,
                      uint64_t base) {
    for (long i = 0; i < n; i++) {
        if (doc_pos[i] == 0) r->cur = 0;
        if (keep[i]) {
            if (++r->cur > r->best) {
                r->best = r->cur;
                r->best_end = base + (uint64_t)i + 1;
            }
        } else {
            r->cur = 0;
        }
    }
}

uint64_t ax_goldfish_longest_run(const uint8_t *keep, const uint32_t *doc_pos, long n) {
    run_tracker r = {0};
    runs_feed(&r, keep, doc_pos, n, 0);
    return r.best;
}

/* hash: mask every target chunk by chunk; counts dropped and prefix-kept targets */
static ax_status hash_pass(const ax_goldfish *g, const ax_axd_t *d, uint64_t *dropped,
                           uint64_t *prefix, run_tracker *runs) {
    const uint64_t n_tok = ax_axd_n_tokens(d), n_docs = ax_axd_n_docs(d), targets = n_tok - 1;
    const uint64_t *offs = ax_axd_doc_offsets(d);
    const int h = ax_goldfish_context(g);
    /* buf: [h left context | chunk]; pos: each target's index within its document */
    int32_t *buf = malloc(((size_t)h + STATS_CHUNK) * sizeof *buf);
    uint32_t *pos = malloc(STATS_CHUNK * sizeof *pos);
    uint8_t *keep = malloc(STATS_CHUNK);
    ax_status st = AX_OK;
    if (!buf || !pos || !keep) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory for a %ld-token chunk", STATS_CHUNK);
        goto out;
    }
    ax_stop_catch();
    volatile int *stop = ax_stop_flag();
    int show = ax_log_get_level() >= AX_LOG_INFO;
    ax_progress pr;
    ax_progress_begin(&pr, "goldfish stats: targets", 0, (long)targets);
    uint64_t doc = 0;
    for (uint64_t a = 1; a < n_tok; a += STATS_CHUNK) {
        long cnt = (long)(n_tok - a < (uint64_t)STATS_CHUNK ? n_tok - a : STATS_CHUNK);
        uint64_t ctx = a < (uint64_t)h ? a : (uint64_t)h;
        ax_axd_tokens(d, a - ctx, ctx + (uint64_t)cnt, buf + h - ctx);
        for (long i = 0; i < cnt; i++) {
            uint64_t t = a + (uint64_t)i;
            while (doc + 1 < n_docs && offs[doc + 1] <= t) doc++;
            uint64_t p = t - offs[doc];
            pos[i] = (uint32_t)(p < UINT32_MAX ? p : UINT32_MAX);
            *prefix += p < (uint64_t)h;
        }
        ax_goldfish_mask(g, buf + h, pos, cnt, keep);
        *dropped += (uint64_t)ax_goldfish_count_dropped(keep, cnt);
        runs_feed(runs, keep, pos, cnt, a);
        if (*stop) {
            if (show) ax_progress_end(&pr);
            st = ax_errorf(AX_ERR_INTERRUPTED,
                           "interrupted after %" PRIu64 " of %" PRIu64
                           " targets; nothing was reported",
                           a + (uint64_t)cnt - 1, targets);
            goto out;
        }
        if (show) ax_progress_tick(&pr, (long)(a + (uint64_t)cnt - 1));
    }
    if (show) ax_progress_end(&pr);
out:
    free(buf);
    free(pos);
    free(keep);
    return st;
}

ax_status ax_goldfish_stats_compute(const ax_goldfish *g, const ax_axd_t *d, uint64_t seq_len,
                                    ax_goldfish_stats *out) {
    memset(out, 0, sizeof *out);
    if (seq_len == 0)
        return ax_errorf(AX_ERR_ARG, "goldfish stats: the sequence length must be positive");
    const uint64_t n_tok = ax_axd_n_tokens(d), n_docs = ax_axd_n_docs(d);
    const uint64_t *offs = ax_axd_doc_offsets(d);
    const uint64_t targets = n_tok > 0 ? n_tok - 1 : 0;
    uint64_t dropped = 0, prefix = 0;
    run_tracker runs = {0};
    double t0 = ax_now();
    if (g->strategy == AX_GOLDFISH_STATIC) {
        /* position only: every window of seq_len targets drops floor(len/k), the rest kept */
        uint64_t k = (uint64_t)g->k, full = targets / seq_len, tail = targets % seq_len;
        dropped = full * (seq_len / k) + tail / k;
        runs.best = targets < k - 1 ? targets : k - 1;
    } else if (g->strategy == AX_GOLDFISH_HASH && targets > 0) {
        AX_CHECK(hash_pass(g, d, &dropped, &prefix, &runs));
    } else if (g->strategy == AX_GOLDFISH_NONE) {
        /* every target is supervised: the longest run is the longest document */
        uint64_t best = 0, best_doc = 0;
        for (uint64_t i = 0; i < n_docs; i++) {
            uint64_t len = offs[i + 1] - offs[i] - (i == 0 ? 1 : 0);
            if (offs[i + 1] > offs[i] && len > best) {
                best = len;
                best_doc = i;
            }
        }
        runs.best = best;
        runs.best_end = n_docs ? offs[best_doc + 1] : 0;
    }
    out->docs = n_docs;
    out->tokens = n_tok;
    out->targets = targets;
    out->dropped = dropped;
    out->prefix_kept = prefix;
    out->dropped_frac = targets ? (double)dropped / (double)targets : 0.0;
    out->expected_frac = g->strategy == AX_GOLDFISH_NONE ? 0.0 : 1.0 / g->k;
    out->dropped_frac_after_prefix =
        targets > prefix ? (double)dropped / (double)(targets - prefix) : 0.0;
    out->longest_run = runs.best;
    out->run_located = g->strategy != AX_GOLDFISH_STATIC && runs.best > 0;
    if (out->run_located && n_docs) {
        uint64_t run_start = runs.best_end - runs.best;
        out->longest_run_doc = ax_axd_doc_of(d, run_start);
        out->longest_run_start = run_start - offs[out->longest_run_doc];
    }
    out->seconds = ax_now() - t0;
    return AX_OK;
}

ax_status ax_goldfish_show(const ax_goldfish *g, const ax_tokenizer_t *tok, const char *text,
                           size_t len, ax_goldfish_shown *o) {
    memset(o, 0, sizeof *o);
    AX_CHECK(ax_tokenizer_encode(tok, (const uint8_t *)(text ? text : ""), len, &o->ids, &o->n));
    size_t n = o->n;
    o->keep = malloc(n ? n : 1);
    uint32_t *pos = malloc((n ? n : 1) * sizeof *pos);
    if (!o->keep || !pos) {
        free(pos);
        return ax_errorf(AX_ERR_NOMEM, "out of memory for %zu tokens", n);
    }
    for (size_t i = 0; i < n; i++) pos[i] = (uint32_t)(i < UINT32_MAX ? i : UINT32_MAX);
    ax_goldfish_mask(g, o->ids, pos, (long)n, o->keep);
    o->longest = ax_goldfish_longest_run(o->keep, pos, (long)n);
    o->dropped = ax_goldfish_count_dropped(o->keep, (long)n);
    free(pos);
    return AX_OK;
}

void ax_goldfish_shown_free(ax_goldfish_shown *s) {
    free(s->ids);
    free(s->keep);
    memset(s, 0, sizeof *s);
}
