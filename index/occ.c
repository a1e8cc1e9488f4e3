#include "index/occ.h"

#include <stdlib.h>
#include <string.h>

#define DIGIT 11
#define RADIX (1u << DIGIT)

static int by_ab(const void *x, const void *y) {
    const ax_ms_edge *p = x, *q = y;
    if (p->a != q->a) return p->a < q->a ? -1 : 1;
    return (p->b > q->b) - (p->b < q->b);
}

/* Sorts e by (a, b): LSD radix over the 40-bit positions (b's digits, then a's), skipping
 * digits every key shares; qsort for small inputs. Returns -1 when out of memory. */
static int sort_edges(ax_ms_edge *e, uint64_t n) {
    if (n < 4096) {
        qsort(e, (size_t)n, sizeof *e, by_ab);
        return 0;
    }
    ax_ms_edge *tmp = malloc(sizeof *tmp * (size_t)n), *src = e, *dst = tmp;
    uint64_t *cnt = malloc(sizeof *cnt * RADIX);
    if (!tmp || !cnt) {
        free(tmp), free(cnt);
        return -1;
    }
    for (int key = 0; key < 2; key++)
        for (int sh = 0; sh < 44; sh += DIGIT) {
            memset(cnt, 0, sizeof *cnt * RADIX);
            for (uint64_t i = 0; i < n; i++)
                cnt[((key ? src[i].a : src[i].b) >> sh) & (RADIX - 1)]++;
            if (cnt[((key ? src[0].a : src[0].b) >> sh) & (RADIX - 1)] == n) continue;
            uint64_t acc = 0;
            for (unsigned d = 0; d < RADIX; d++) {
                uint64_t c = cnt[d];
                cnt[d] = acc;
                acc += c;
            }
            for (uint64_t i = 0; i < n; i++)
                dst[cnt[((key ? src[i].a : src[i].b) >> sh) & (RADIX - 1)]++] = src[i];
            ax_ms_edge *t = src;
            src = dst;
            dst = t;
        }
    if (src != e) memcpy(e, src, sizeof *e * (size_t)n);
    free(tmp), free(cnt);
    return 0;
}

/* the window's final first occurrence: follow the edges that lowered it (chg sorted by a) */
static uint64_t resolve(const ax_ms_edge *chg, uint64_t m, uint64_t x) {
    for (;;) {
        uint64_t lo = 0, hi = m;
        while (lo < hi) {
            uint64_t mid = lo + (hi - lo) / 2;
            if (chg[mid].a < x)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == m || chg[lo].a != x) return x;
        x = chg[lo].b;
    }
}

ax_status ax_ms_occ_from_edges(ax_ms_edge *e, uint64_t n, ax_ms_occ *out) {
    memset(out, 0, sizeof *out);
    ax_status st = AX_OK;
    ax_ms_edge *all = NULL, *chg = NULL;
    /* the edges that lowered a first occurrence: at most one per (window, old first) */
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i++) m += e[i].b < e[i].a;
    chg = malloc(sizeof *chg * (size_t)(m ? m : 1));
    all = realloc(e, sizeof *e * (size_t)(n + m ? n + m : 1));
    if (!chg || !all) {
        free(chg);
        free(all ? all : e);
        return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory for occurrence lists");
    }
    e = all;
    m = 0;
    for (uint64_t i = 0; i < n; i++)
        if (e[i].b < e[i].a) chg[m++] = e[i];
    if (sort_edges(chg, m) != 0) goto oom;
    /* every position as (final first, position): each edge's b, and each lowered first */
    for (uint64_t i = 0; i < m; i++) e[n + i] = (ax_ms_edge){resolve(chg, m, chg[i].a), chg[i].a};
    for (uint64_t i = 0; i < n; i++) e[i].a = resolve(chg, m, e[i].a);
    n += m;
    free(chg);
    chg = NULL;
    if (sort_edges(e, n) != 0) goto oom;
    /* groups: a's runs, duplicates dropped, the first prepended where no edge names it (a
     * window whose first occurrence was never lowered) */
    uint64_t groups = 0, npos = 0;
    for (uint64_t i = 0; i < n; i++) {
        int start = i == 0 || e[i].a != e[i - 1].a;
        if (start) groups++, npos += e[i].b != e[i].a;
        if (start || e[i].b != e[i - 1].b) npos++;
    }
    out->off = malloc(sizeof *out->off * (size_t)(groups + 1));
    out->pos = malloc(sizeof *out->pos * (size_t)(npos ? npos : 1));
    if (!out->off || !out->pos) goto oom;
    uint64_t g = 0, k = 0;
    for (uint64_t i = 0; i < n; i++) {
        int start = i == 0 || e[i].a != e[i - 1].a;
        if (start) {
            out->off[g++] = k;
            if (e[i].b != e[i].a) out->pos[k++] = e[i].a;
        }
        if (start || e[i].b != e[i - 1].b) out->pos[k++] = e[i].b;
    }
    out->off[g] = k;
    out->n_groups = groups;
    out->n_pos = npos;
    free(e);
    return AX_OK;
oom:
    st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory for occurrence lists");
    free(chg);
    free(e);
    ax_ms_occ_free(out);
    return st;
}

typedef struct {
    uint64_t first, g;
} group_key;

static int by_first(const void *x, const void *y) {
    const group_key *p = x, *q = y;
    return (p->first > q->first) - (p->first < q->first);
}

ax_status ax_ms_occ_sort_groups(ax_ms_occ *o) {
    int sorted = 1;
    for (uint64_t g = 1; g < o->n_groups && sorted; g++)
        sorted = o->pos[o->off[g - 1]] < o->pos[o->off[g]];
    if (sorted) return AX_OK;
    group_key *k = malloc(sizeof *k * (size_t)o->n_groups);
    uint64_t *off = malloc(sizeof *off * (size_t)(o->n_groups + 1));
    uint64_t *pos = malloc(sizeof *pos * (size_t)(o->n_pos ? o->n_pos : 1));
    if (!k || !off || !pos) {
        free(k), free(off), free(pos);
        return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory sorting occurrence lists");
    }
    for (uint64_t g = 0; g < o->n_groups; g++) k[g] = (group_key){o->pos[o->off[g]], g};
    qsort(k, (size_t)o->n_groups, sizeof *k, by_first);
    uint64_t at = 0;
    for (uint64_t i = 0; i < o->n_groups; i++) {
        uint64_t g = k[i].g, c = o->off[g + 1] - o->off[g];
        off[i] = at;
        memcpy(pos + at, o->pos + o->off[g], sizeof *pos * (size_t)c);
        at += c;
    }
    off[o->n_groups] = at;
    free(k);
    free(o->off);
    free(o->pos);
    o->off = off;
    o->pos = pos;
    return AX_OK;
}

void ax_ms_occ_free(ax_ms_occ *o) {
    free(o->off);
    free(o->pos);
    memset(o, 0, sizeof *o);
}

size_t ax_ms_occ_bytes(const ax_ms_occ *o) {
    return o->off ? (size_t)(o->n_groups + 1 + o->n_pos) * sizeof(uint64_t) : 0;
}

uint64_t ax_ms_occ_find(const ax_ms_occ *o, uint64_t first, const uint64_t **list) {
    uint64_t lo = 0, hi = o->n_groups;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (o->pos[o->off[mid]] < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == o->n_groups || o->pos[o->off[lo]] != first) {
        *list = NULL;
        return 0;
    }
    *list = o->pos + o->off[lo];
    return o->off[lo + 1] - o->off[lo];
}
