/* Building an index in bounded memory, on one rank (`memscan index
 * --mem-limit`). Pass 1 hashes every window once and spills (hash, position) pairs to one
 * file, bucketed by the top bits of the hash into K partitions (a buffer per partition; each
 * full buffer is appended as a chunk and its offset remembered). Pass 2 counts one partition at
 * a time in a table sized for it alone (pairs arrive in position order, so the first one seen
 * is the first occurrence and every later match is a list edge), sorts its entries by (tag,
 * ext, val) and appends them to three column files, and its occurrence lists (ascending by first
 * occurrence) to a run file. Partitions are ranges of the tag, so the columns come out in the
 * version-3 order; the lists of the K runs are merged by first occurrence while the file is
 * written. Time: one hash per window, each pair written and read once, a sort per partition,
 * and a K-way merge: linear in tokens up to log factors. Peak memory: the spill buffers
 * (a quarter of the limit) or one partition's working set (about PEAK_PER_PAIR bytes per pair,
 * K chosen so the average partition fits half the limit), plus the dataset pages the kernel
 * keeps mapped. A window repeated so often that its partition alone exceeds the limit still
 * builds, over the limit: it is reported. */
#include "index/hash.h"
#include "index/index_format.h"
#include "index/index_impl.h"

#include "lib/core/fsutil.h"
#include "lib/dist/comm.h"
#include "lib/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PEAK_PER_PAIR 64 /* pairs 16 + table ~15 + edges 16 + entries 16 */
#define PARTS_MAX 4096
#define PIECE 65536 /* window starts hashed per read of the dataset */

typedef struct {
    uint64_t off, n; /* byte offset in the spill file, pairs */
} chunk;

typedef struct {
    chunk *c;
    size_t n, cap;
    uint64_t pairs;
} part;

typedef struct {
    const ax_axd_t *ds;
    const ax_memscan_build_opts *o;
    uint64_t limit, K, B; /* partitions, buffer pairs per partition */
    uint32_t kb;
    part *parts;
    ax_ms_pair *buf;
    uint64_t *fill;
    int fd; /* spill */
    uint64_t spill_off;
    FILE *col[3]; /* tags, exts, vals */
    int fd_list;
    uint64_t list_off, *run_off, *run_groups;
    char *paths[5]; /* spill, tags, exts, vals, lists */
    ax_memscan_info info;
    uint64_t n_dup, n_dup_pos, max_pairs;
    int entries;               /* converting: the spill holds (key, val) entries, not pairs */
    uint64_t n_runs, runs_cap; /* list runs, each ascending by first occurrence */
    uint64_t last_first;
    uint8_t *lbuf; /* converting: list-file write buffer */
    size_t lfill;
    /* distributed (ax_ms_spill_dist): pairs arrive out of position order; each partition's
     * entries go unsorted to the spill file (ent_off, ent_n) for rank 0 to gather */
    int dist;
    uint64_t *ent_off, *ent_n, *run_bytes;
} spill;

static ax_status flush_part_fwd(spill *s, uint64_t k);
static ax_status build_bounded_dist(const ax_axd_t *ds, const ax_memscan_build_opts *o,
                                    uint64_t mem_limit, const char *path, ax_grid_t *g,
                                    ax_memscan_info *info_out);

/* a pair's partition: the hash's top kb bits (= the tag's); an entry's: its tag's */
static uint64_t part_of(const spill *s, uint64_t x) {
    if (!s->kb) return 0;
    return s->entries ? x >> (38 - s->kb) : x >> (64 - s->kb);
}

static ax_status spill_put(spill *s, uint64_t a, uint64_t b) {
    uint64_t k = part_of(s, a);
    s->buf[k * s->B + s->fill[k]++] = (ax_ms_pair){a, b};
    return s->fill[k] == s->B ? flush_part_fwd(s, k) : AX_OK;
}

static ax_status flush_part_fwd(spill *s, uint64_t k) {
    if (!s->fill[k]) return AX_OK;
    part *p = &s->parts[k];
    if (p->n == p->cap) {
        size_t cap = p->cap ? 2 * p->cap : 8;
        chunk *nc = realloc(p->c, sizeof *nc * cap);
        if (!nc) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory for spill chunks");
        p->c = nc;
        p->cap = cap;
    }
    size_t bytes = sizeof(ax_ms_pair) * (size_t)s->fill[k];
    AX_CHECK(ax_write_all(s->fd, s->buf + k * s->B, bytes, s->paths[0]));
    p->c[p->n++] = (chunk){s->spill_off, s->fill[k]};
    p->pairs += s->fill[k];
    s->spill_off += bytes;
    s->fill[k] = 0;
    return AX_OK;
}

/* pass 1: every window of every document, hashed once, to its partition */
static ax_status spill_pass(spill *s) {
    const ax_axd_t *ds = s->ds;
    int n = s->o->n;
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int32_t *tok = malloc(sizeof *tok * (PIECE + (size_t)n));
    if (!tok) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    ax_status st = AX_OK;
    uint64_t windows = 0;
    for (uint64_t d = 0; d < ax_axd_n_docs(ds) && st == AX_OK; d++) {
        uint64_t start = off[d], end = ax_ms_doc_text_end(ds, d);
        if (end - start < (uint64_t)n) continue;
        uint64_t last = end - (uint64_t)n + 1;
        for (uint64_t a = start; a < last && st == AX_OK; a += PIECE) {
            if (s->o->stop && *s->o->stop) {
                st = ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted");
                break;
            }
            uint64_t b = a + PIECE < last ? a + PIECE : last;
            ax_axd_tokens(ds, a, b - a + (uint64_t)n - 1, tok);
            for (uint64_t i = 0; i < b - a && st == AX_OK; i++) {
                uint64_t h = ax_ms_hash(tok + i, n, s->o->seed, s->o->hash_bits);
                st = spill_put(s, h, a + i);
            }
            windows += b - a;
        }
    }
    for (uint64_t k = 0; k < s->K && st == AX_OK; k++) st = flush_part_fwd(s, k);
    free(tok);
    s->info.n_windows = windows;
    return st;
}

static ax_status put_col(spill *s, int c, const void *p, size_t n) {
    if (fwrite(p, 1, n, s->col[c]) != n)
        return ax_errorf(AX_ERR_IO, "%s: write failed: %s", s->paths[1 + c], strerror(errno));
    return AX_OK;
}

/* sorts ent[0..d) and appends it to the column files */
static ax_status write_cols(spill *s, ax_ms_ent *ent, uint64_t d) {
    /* binned on about log2(d) bits (at most 2^20 bins: 4 MB of counters); the scratch takes
     * the place of the partition's table, freed before this */
    int bb = 1;
    while (bb < 20 && ((uint64_t)1 << bb) < d) bb++;
    ax_ms_ent *tmp = d > 1 ? malloc(sizeof *tmp * (size_t)d) : NULL;
    uint32_t *cnt = tmp ? malloc(sizeof *cnt * (((size_t)1 << bb) + 1)) : NULL;
    if (tmp && cnt)
        ax_ms_ent_sort(ent, (size_t)d, tmp, cnt, bb);
    else /* no room for the scratch: the same order, slower */
        qsort(ent, (size_t)d, sizeof *ent, ax_ms_ent_cmp);
    free(tmp);
    free(cnt);
    uint8_t stage[8 * 1024];
    ax_status st = AX_OK;
    for (int c = 0; c < 3 && st == AX_OK; c++)
        for (uint64_t i = 0; i < d && st == AX_OK; i += 1024) {
            size_t kk = d - i < 1024 ? (size_t)(d - i) : 1024;
            for (size_t j = 0; j < kk; j++) {
                const ax_ms_ent *e = &ent[i + j];
                if (c == 0)
                    ax_ms_put32(stage + 4 * j, (uint32_t)(e->key >> 6));
                else if (c == 1)
                    stage[j] = (uint8_t)(e->key & 63);
                else
                    ax_ms_put64(stage + 8 * j, e->val);
            }
            st = put_col(s, c, stage, kk * (c == 0 ? 4 : c == 1 ? 1 : 8));
        }
    return st;
}

/* reads partition k's spilled records (16 bytes each) into a malloc'd array */
static ax_status read_part(spill *s, uint64_t k, void **out) {
    part *p = &s->parts[k];
    uint8_t *r = malloc(16 * (size_t)(p->pairs ? p->pairs : 1));
    *out = r;
    if (!r) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    for (size_t i = 0, at = 0; i < p->n; i++) {
        size_t bytes = 16 * (size_t)p->c[i].n;
        if (pread(s->fd, r + at, bytes, (off_t)p->c[i].off) != (ssize_t)bytes)
            return ax_errorf(AX_ERR_IO, "%s: read failed: %s", s->paths[0], strerror(errno));
        at += bytes;
    }
    return AX_OK;
}

static int pair_pos_cmp(const void *x, const void *y) {
    uint64_t a = ((const ax_ms_pair *)x)->pos, b = ((const ax_ms_pair *)y)->pos;
    return (a > b) - (a < b);
}

/* pass 2 for partition k: count, sort, append columns and the list run */
#define PART_PREFETCH 16

static ax_status count_part(spill *s, uint64_t k) {
    part *p = &s->parts[k];
    uint64_t m = p->pairs;
    if (m > s->max_pairs) s->max_pairs = m;
    s->run_off[k] = s->list_off;
    if (!m) return AX_OK;
    int n = s->o->n;
    ax_ms_pair *pr = NULL;
    ax_ms_edge *edge = NULL;
    ax_ms_ent *ent = NULL;
    uint64_t n_edge = 0, cap_edge = 0;
    ax_ms_table t;
    memset(&t, 0, sizeof t);
    ax_ms_occ occ;
    memset(&occ, 0, sizeof occ);
    ax_status st = read_part(s, k, (void **)&pr);
    /* routed pairs come in no order: by position, so the first seen is the first occurrence */
    if (st == AX_OK && s->dist) qsort(pr, (size_t)m, sizeof *pr, pair_pos_cmp);
    if (st == AX_OK) st = ax_ms_table_init(&t, m);
    for (uint64_t i = 0; i < m && st == AX_OK; i++) {
        /* a partition's table is far larger than the caches: its home bucket is fetched
         * PART_PREFETCH pairs ahead, so the inserts do not wait on memory one by one */
        if (i + PART_PREFETCH < m) {
            uint32_t tg = ax_ms_key_of(pr[i + PART_PREFETCH].h).tag << s->kb;
            const ax_ms_bucket *pb = &t.b[ax_ms_home(&t, tg)];
            __builtin_prefetch(pb, 1, 1);
            __builtin_prefetch(pb + 1, 1, 1); /* the table has a spare bucket at the end */
        }
        /* every tag here shares its top kb bits (the partition): shifted out, so the homes
         * spread over the whole table (they are put back below) */
        ax_ms_key key = ax_ms_key_of(pr[i].h);
        key.tag <<= s->kb;
        uint64_t b = ax_ms_home(&t, key.tag), pos = pr[i].pos;
        for (int done = 0; !done;) {
            ax_ms_bucket *bk = &t.b[b];
            unsigned em, mm = ax_ms_bucket_match(bk, key, &em);
            for (; mm && !done; mm &= mm - 1) {
                int j = __builtin_ctz(mm);
                uint64_t p0 = ax_ms_val_pos(bk->val[j]), c = ax_ms_val_count(bk->val[j]);
                if (!ax_ms_window_eq_ds(s->ds, p0, pos, n)) continue;
                bk->val[j] = ax_ms_val(p0, c < AX_MS_COUNT_MAX ? c + 1 : c);
                if (n_edge == cap_edge) {
                    uint64_t cap = cap_edge ? 2 * cap_edge : 1024;
                    ax_ms_edge *ne = realloc(edge, sizeof *ne * (size_t)cap);
                    if (!ne) {
                        st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory for lists");
                        break;
                    }
                    edge = ne;
                    cap_edge = cap;
                }
                edge[n_edge++] = (ax_ms_edge){p0, pos};
                done = 1;
            }
            if (done || st != AX_OK) break;
            if (em) {
                ax_ms_slot_set(bk, __builtin_ctz(em), key, ax_ms_val(pos, 1));
                t.n++;
                done = 1;
            }
            if (++b == t.nb) b = 0;
        }
    }
    free(pr);
    pr = NULL;
    if (st == AX_OK && !(ent = malloc(sizeof *ent * (size_t)(t.n ? t.n : 1))))
        st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    uint64_t d = 0;
    for (uint64_t b = 0; b < t.nb && st == AX_OK; b++)
        for (int j = 0; j < AX_MS_BUCKET; j++) {
            uint64_t v = t.b[b].val[j];
            if (!v) continue;
            uint64_t tag = s->kb ? (k << (32 - s->kb)) | (t.b[b].tag[j] >> s->kb) : t.b[b].tag[j];
            ent[d++] = (ax_ms_ent){tag << 6 | ax_ms_slot_ext(&t.b[b], j), v};
            uint32_t c = ax_ms_val_count(v);
            s->info.hist[ax_memscan_hist_bucket(c)]++;
            s->info.n_saturated += c == AX_MS_COUNT_MAX;
        }
    ax_ms_table_free(&t);
    if (st == AX_OK) {
        s->info.n_distinct += d;
        if (s->dist) { /* appended after the pairs (pread leaves the file position there) */
            s->ent_off[k] = s->spill_off;
            s->ent_n[k] = d;
            st = ax_write_all(s->fd, ent, sizeof *ent * (size_t)d, s->paths[0]);
            s->spill_off += sizeof *ent * d;
        } else {
            st = write_cols(s, ent, d);
        }
    }
    free(ent);
    if (st == AX_OK && n_edge) {
        st = ax_ms_occ_from_edges(edge, n_edge, &occ); /* consumes edge */
        edge = NULL;
    }
    free(edge);
    if (st == AX_OK && occ.n_groups) { /* the run: each list as its length, then positions */
        size_t bytes = 8 * (size_t)(2 * occ.n_groups + occ.n_pos), at = 0;
        uint64_t *run = malloc(bytes);
        if (!run) st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
        for (uint64_t g = 0; g < occ.n_groups && run; g++) {
            uint64_t len = occ.off[g + 1] - occ.off[g];
            run[at++] = len;
            memcpy(run + at, occ.pos + occ.off[g], 8 * (size_t)len);
            at += (size_t)len;
        }
        if (run) st = ax_write_all(s->fd_list, run, 8 * at, s->paths[4]);
        free(run);
        s->list_off += 8 * at;
        s->run_groups[k] = occ.n_groups;
        s->n_dup += occ.n_groups;
        s->n_dup_pos += occ.n_pos;
    }
    ax_ms_occ_free(&occ);
    return st;
}

/* a run of lists, read back through a small buffer */
typedef struct {
    int fd;
    uint64_t off, left; /* next byte, lists left */
    uint64_t *buf;
    size_t have, at, cap;
    uint64_t m, first; /* the current list's length and first position */
} cursor;

static int cur_u64(cursor *c, uint64_t *v) {
    if (c->at == c->have) {
        ssize_t got = pread(c->fd, c->buf, 8 * c->cap, (off_t)c->off);
        if (got < 8) return 0;
        c->have = (size_t)got / 8;
        c->at = 0;
        c->off += 8 * c->have;
    }
    *v = c->buf[c->at++];
    return 1;
}

/* the next list's head; its positions follow (the first of them already read into first) */
static int cur_head(cursor *c) {
    if (!c->left) return 0;
    c->left--;
    return cur_u64(c, &c->m) && cur_u64(c, &c->first);
}

typedef struct {
    spill *s;
    uint64_t *dir;
} sec_ctx;

static void heap_down(cursor **h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && h[l]->first < h[m]->first) m = l;
        if (r < n && h[r]->first < h[m]->first) m = r;
        if (m == i) return;
        cursor *t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

/* one pass of the K-way merge by first occurrence: which 0 writes firsts, 1 list starts,
 * 2 positions */
static ax_status merge_lists(spill *s, ax_ms_vwriter *w, int which) {
    uint64_t R = s->n_runs;
    cursor *cs = calloc((size_t)(R ? R : 1), sizeof *cs);
    cursor **heap = calloc((size_t)(R ? R : 1), sizeof *heap);
    size_t cap = (size_t)(s->limit / 8 / (8 * (R ? R : 1)));
    if (cap < 64) cap = 64;
    if (cap > 8192) cap = 8192;
    ax_status st = cs && heap ? AX_OK : ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    size_t nh = 0;
    for (uint64_t k = 0; k < R && st == AX_OK; k++) {
        if (!s->run_groups[k]) continue;
        cursor *c = &cs[k];
        *c =
            (cursor){s->fd_list, s->run_off[k], s->run_groups[k], malloc(8 * cap), 0, 0, cap, 0, 0};
        if (!c->buf)
            st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
        else if (!cur_head(c))
            st = ax_errorf(AX_ERR_IO, "%s: short read", s->paths[4]);
        else
            heap[nh++] = c;
    }
    for (size_t i = nh; i-- > 0;) heap_down(heap, nh, i);
    uint64_t acc = 0;
    while (nh && st == AX_OK) {
        cursor *c = heap[0];
        if (which == 0) ax_ms_vw_put(w, &c->first, 8);
        if (which == 1) ax_ms_vw_put(w, &acc, 8);
        if (which == 2) ax_ms_vw_put(w, &c->first, 8);
        acc += c->m;
        for (uint64_t j = 1; j < c->m && st == AX_OK; j++) {
            uint64_t v;
            if (!cur_u64(c, &v)) st = ax_errorf(AX_ERR_IO, "%s: short read", s->paths[4]);
            if (which == 2) ax_ms_vw_put(w, &v, 8);
        }
        if (!cur_head(c)) {
            if (c->left) st = ax_errorf(AX_ERR_IO, "%s: short read", s->paths[4]);
            heap[0] = heap[--nh];
        }
        heap_down(heap, nh, 0);
    }
    if (which == 1) ax_ms_vw_put(w, &acc, 8);
    for (uint64_t k = 0; cs && k < R; k++) free(cs[k].buf);
    free(cs);
    free(heap);
    return st != AX_OK ? st : ax_ms_vw_status(w);
}

static ax_status copy_file(spill *s, int c, ax_ms_vwriter *w) {
    FILE *f = s->col[c];
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        return ax_errorf(AX_ERR_IO, "%s: %s", s->paths[1 + c], strerror(errno));
    uint8_t b[65536];
    size_t got;
    while ((got = fread(b, 1, sizeof b, f)) > 0) ax_ms_vw_put(w, b, got);
    if (ferror(f)) return ax_errorf(AX_ERR_IO, "%s: read failed", s->paths[1 + c]);
    return ax_ms_vw_status(w);
}

static ax_status sections(void *ctx, ax_ms_vwriter *w) {
    spill *s = ((sec_ctx *)ctx)->s;
    const ax_ms_v3_layout *l = ax_ms_vw_layout(w);
    uint64_t P = 1ULL << l->part_bits;
    /* the directory: the tags, counted per version-3 partition */
    uint64_t *dir = calloc((size_t)P + 1, sizeof *dir);
    if (!dir) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    FILE *f = s->col[0];
    ax_status st = AX_OK;
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)
        st = ax_errorf(AX_ERR_IO, "%s: %s", s->paths[1], strerror(errno));
    uint32_t tags[4096];
    size_t got;
    while (st == AX_OK && (got = fread(tags, 4, 4096, f)) > 0)
        for (size_t i = 0; i < got; i++) dir[ax_ms_v3_part(tags[i], l->part_bits) + 1]++;
    for (uint64_t p = 0; p < P; p++) dir[p + 1] += dir[p];
    ax_ms_vw_pad(w, l->off_dir);
    ax_ms_vw_put(w, dir, 8 * (size_t)(P + 1));
    free(dir);
    const uint64_t at[3] = {l->off_tags, l->off_exts, l->off_vals};
    for (int c = 0; c < 3 && st == AX_OK; c++) {
        ax_ms_vw_pad(w, at[c]);
        st = copy_file(s, c, w);
    }
    const uint64_t lat[3] = {l->off_firsts, l->off_lstart, l->off_pos};
    for (int which = 0; which < 3 && st == AX_OK; which++) {
        ax_ms_vw_pad(w, lat[which]);
        st = merge_lists(s, w, which);
    }
    ax_ms_vw_pad(w, l->off_sums);
    return st != AX_OK ? st : ax_ms_vw_status(w);
}

/* the lists written must be the ones the histogram implies */
static ax_status check_lists(spill *s) {
    ax_ms_occ_info(&s->info);
    if (s->info.n_dup == s->n_dup && s->info.n_dup_pos == s->n_dup_pos) return AX_OK;
    return ax_errorf(AX_ERR_INTERNAL,
                     "memscan index: %llu lists of %llu positions, the histogram implies "
                     "%llu of %llu",
                     (unsigned long long)s->n_dup, (unsigned long long)s->n_dup_pos,
                     (unsigned long long)s->info.n_dup, (unsigned long long)s->info.n_dup_pos);
}

uint64_t ax_memscan_windows_of(const ax_axd_t *ds, int n) {
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t w = 0;
    for (uint64_t d = 0; d < ax_axd_n_docs(ds); d++) {
        uint64_t len = ax_ms_doc_text_end(ds, d) - off[d];
        if (len >= (uint64_t)n) w += len - (uint64_t)n + 1;
    }
    return w;
}

/* K partitions so that `units` records of bytes_per_unit each fit half the limit in one
 * partition on average; the spill buffers, files and run tables */
static ax_status spill_setup(spill *s, const char *path, uint64_t units, uint64_t bytes_per_unit,
                             uint64_t runs_cap) {
    uint64_t need = units * bytes_per_unit, half = s->limit / 2;
    s->fd = s->fd_list = -1;
    while ((1ULL << s->kb) < PARTS_MAX && need / (1ULL << s->kb) > half) s->kb++;
    s->K = 1ULL << s->kb;
    if (need / s->K > half || s->limit < (1u << 20))
        return ax_errorf(AX_ERR_ARG,
                         "memscan index: --mem-limit %.1f MB is too small for %llu windows (at "
                         "least %.1f MB); raise it",
                         (double)s->limit / 1e6, (unsigned long long)units,
                         (double)(2 * need / PARTS_MAX) / 1e6 + 1.0);
    s->B = s->limit / 4 / (sizeof(ax_ms_pair) * s->K); /* spill buffers: a quarter */
    if (s->B < 64) s->B = 64;
    if (!runs_cap) runs_cap = s->K;
    s->runs_cap = runs_cap;
    s->parts = calloc((size_t)s->K, sizeof *s->parts);
    s->fill = calloc((size_t)s->K, sizeof *s->fill);
    s->run_off = calloc((size_t)runs_cap, sizeof *s->run_off);
    s->run_groups = calloc((size_t)runs_cap, sizeof *s->run_groups);
    s->buf = malloc(sizeof *s->buf * (size_t)(s->K * s->B));
    const char *suffix[5] = {".spill", ".tags", ".exts", ".vals", ".lists"};
    int ok = s->parts && s->fill && s->run_off && s->run_groups && s->buf;
    for (int i = 0; i < 5; i++) {
        s->paths[i] = malloc(strlen(path) + 16);
        if (s->paths[i])
            sprintf(s->paths[i], "%s%s", path, suffix[i]);
        else
            ok = 0;
    }
    if (!ok) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    s->fd = open(s->paths[0], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    s->fd_list = open(s->paths[4], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    for (int c = 0; c < 3; c++) {
        int fd = open(s->paths[1 + c], O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        s->col[c] = fd >= 0 ? fdopen(fd, "w+") : NULL;
        if (fd >= 0 && !s->col[c]) close(fd);
    }
    if (s->fd < 0 || s->fd_list < 0 || !s->col[0] || !s->col[1] || !s->col[2])
        return ax_errorf(AX_ERR_IO,
                         "%s.*: cannot create the spill files: %s; check the directory is "
                         "writable and has room (about 16 bytes per window)",
                         path, strerror(errno));
    return AX_OK;
}

static void spill_cleanup(spill *s) {
    free(s->buf);
    free(s->fill);
    free(s->lbuf);
    if (s->fd >= 0) close(s->fd);
    if (s->fd_list >= 0) close(s->fd_list);
    for (int c = 0; c < 3; c++)
        if (s->col[c]) fclose(s->col[c]);
    for (int i = 0; i < 5; i++) {
        if (s->paths[i]) unlink(s->paths[i]);
        free(s->paths[i]);
    }
    for (uint64_t k = 0; s->parts && k < s->K; k++) free(s->parts[k].c);
    free(s->parts);
    free(s->run_off);
    free(s->run_groups);
    free(s->ent_off);
    free(s->ent_n);
    free(s->run_bytes);
}

ax_status ax_memscan_index_build_bounded(const ax_axd_t *ds, const ax_memscan_build_opts *o,
                                         uint64_t mem_limit, const char *path,
                                         ax_memscan_info *info_out) {
    ax_grid_t *g = NULL;
    AX_CHECK(ax_grid_create_world(&g));
    if (ax_grid_dim(g, AX_AXIS_WORLD) > 1) {
        ax_status st = build_bounded_dist(ds, o, mem_limit, path, g, info_out);
        ax_grid_free(g);
        return st;
    }
    ax_grid_free(g);
    spill s;
    memset(&s, 0, sizeof s);
    s.ds = ds;
    s.o = o;
    s.limit = mem_limit;
    ax_ms_fill_info(&s.info, ds, o, 1);
    uint64_t W = ax_memscan_windows_of(ds, o->n);
    ax_status st = spill_setup(&s, path, W, PEAK_PER_PAIR, 0);
    s.n_runs = s.K; /* one run per partition */
    if (st == AX_OK)
        AX_INFO("memscan index: %llu windows in %llu partitions within %.0f MB",
                (unsigned long long)W, (unsigned long long)s.K, (double)mem_limit / 1e6);
    if (st == AX_OK) st = spill_pass(&s);
    free(s.buf);
    s.buf = NULL;
    for (uint64_t k = 0; k < s.K && st == AX_OK; k++) {
        if (o->stop && *o->stop) st = ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted");
        if (st == AX_OK) st = count_part(&s, k);
    }
    uint64_t half = mem_limit / 2;
    if (st == AX_OK && s.max_pairs * PEAK_PER_PAIR > half)
        AX_WARN("memscan index: one partition held %llu windows (repeats of one window share a "
                "partition): about %.0f MB, over half of --mem-limit",
                (unsigned long long)s.max_pairs, (double)(s.max_pairs * PEAK_PER_PAIR) / 1e6);
    if (st == AX_OK) st = check_lists(&s);
    sec_ctx sc = {&s, NULL};
    if (st == AX_OK) st = ax_ms_v3_write_with(&s.info, sections, &sc, path, o->stop);
    if (st == AX_OK && info_out) *info_out = s.info;
    spill_cleanup(&s);
    return st;
}

/* ---- on several ranks: routed pairs spilled by each owner, gathered by rank 0 ---- */

#define TAG_PART_HDR 21 /* ax_coll_send tags */
#define TAG_PART_ENT 22
#define TAG_PART_RUN 23

static ax_status route_sink(void *ctx, uint64_t h, uint64_t pos) {
    return spill_put(ctx, h, pos);
}

/* merges the list runs src[0..P) (each: lists as length then positions, ascending by first
 * occurrence; bytes[r] long) into one run appended to the list file */
static ax_status merge_runs(spill *s, uint64_t **src, const uint64_t *len, int P) {
    uint64_t at[64] = {0}, total = 0;
    for (int r = 0; r < P; r++) total += len[r];
    uint64_t *out = malloc(8 * (size_t)(total ? total : 1)), o = 0;
    if (!out) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    for (;;) {
        int best = -1;
        for (int r = 0; r < P; r++)
            if (at[r] < len[r] && (best < 0 || src[r][at[r] + 1] < src[best][at[best] + 1]))
                best = r;
        if (best < 0) break;
        uint64_t m = src[best][at[best]];
        memcpy(out + o, src[best] + at[best], 8 * (size_t)(m + 1));
        o += m + 1;
        at[best] += m + 1;
    }
    ax_status st = ax_write_all(s->fd_list, out, 8 * (size_t)o, s->paths[4]);
    s->list_off += 8 * o;
    free(out);
    return st;
}

static ax_status pread_all(int fd, void *p, size_t n, uint64_t off, const char *path) {
    if (n && pread(fd, p, n, (off_t)off) != (ssize_t)n)
        return ax_errorf(AX_ERR_IO, "%s: read failed: %s", path, strerror(errno));
    return AX_OK;
}

/* Rank 0 takes partition k from every rank (entries and list run), sorts the entries into the
 * columns and merges the runs into one; the other ranks send theirs. Every rank keeps the
 * exchange going after a failure (sending empty parts) so nobody waits forever. */
static ax_status gather_part(spill *s, ax_grid_t *g, int P, int rank, uint64_t k, ax_status st) {
    uint64_t hdr[4] = {s->ent_n[k], s->run_groups[k], s->run_bytes[k], st != AX_OK};
    if (rank != 0) {
        ax_ms_ent *ent = NULL;
        uint64_t *run = NULL;
        if (!hdr[3]) {
            ent = malloc(sizeof *ent * (size_t)(hdr[0] ? hdr[0] : 1));
            run = malloc((size_t)(hdr[2] ? hdr[2] : 8));
            if (!ent || !run) st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
            if (st == AX_OK)
                st =
                    pread_all(s->fd, ent, sizeof *ent * (size_t)hdr[0], s->ent_off[k], s->paths[0]);
            if (st == AX_OK)
                st = pread_all(s->fd_list, run, (size_t)hdr[2], s->run_off[k], s->paths[4]);
        }
        if (st != AX_OK) hdr[0] = hdr[1] = hdr[2] = 0, hdr[3] = 1;
        ax_status cs = ax_coll_send(g, AX_AXIS_WORLD, hdr, 4, AX_DT_U64, 0, TAG_PART_HDR);
        if (cs == AX_OK && hdr[0])
            cs =
                ax_coll_send(g, AX_AXIS_WORLD, ent, (long)(2 * hdr[0]), AX_DT_U64, 0, TAG_PART_ENT);
        if (cs == AX_OK && hdr[2])
            cs =
                ax_coll_send(g, AX_AXIS_WORLD, run, (long)(hdr[2] / 8), AX_DT_U64, 0, TAG_PART_RUN);
        free(ent);
        free(run);
        return cs != AX_OK ? cs : st;
    }
    uint64_t h[64][4], D = 0, groups = 0;
    memcpy(h[0], hdr, sizeof hdr);
    for (int r = 1; r < P; r++) {
        AX_CHECK(ax_coll_recv(g, AX_AXIS_WORLD, h[r], 4, AX_DT_U64, r, TAG_PART_HDR));
        if (h[r][3] && st == AX_OK)
            st = ax_errorf(AX_ERR_IO, "memscan index: rank %d failed (see its message)", r);
    }
    uint64_t lens[64], *runs[64] = {0};
    for (int r = 0; r < P; r++) D += h[r][0], groups += h[r][1], lens[r] = h[r][2] / 8;
    ax_ms_ent *ent = malloc(sizeof *ent * (size_t)(D ? D : 1));
    int ok = ent != NULL;
    for (int r = 0; r < P; r++) ok = ok && (runs[r] = malloc(8 * (size_t)(lens[r] + 1)));
    if (!ok && st == AX_OK) st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    /* receive even after a failure (into scratch when out of memory) so senders finish */
    uint64_t at = 0;
    for (int r = 0; r < P; r++) {
        uint64_t d = h[r][0];
        if (r == 0) {
            if (st == AX_OK)
                st = pread_all(s->fd, ent, sizeof *ent * (size_t)d, s->ent_off[k], s->paths[0]);
            if (st == AX_OK)
                st = pread_all(s->fd_list, runs[0], (size_t)h[0][2], s->run_off[k], s->paths[4]);
        } else {
            void *scratch = NULL;
            if (d) {
                void *dst = ok ? (void *)(ent + at) : (scratch = malloc(16 * (size_t)d));
                if (!dst) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
                AX_CHECK(
                    ax_coll_recv(g, AX_AXIS_WORLD, dst, (long)(2 * d), AX_DT_U64, r, TAG_PART_ENT));
                free(scratch);
                scratch = NULL;
            }
            if (lens[r]) {
                void *dst = ok ? (void *)runs[r] : (scratch = malloc(8 * (size_t)lens[r]));
                if (!dst) return ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
                AX_CHECK(
                    ax_coll_recv(g, AX_AXIS_WORLD, dst, (long)lens[r], AX_DT_U64, r, TAG_PART_RUN));
                free(scratch);
            }
        }
        at += d;
    }
    s->run_off[k] = s->list_off;
    s->run_groups[k] = groups;
    if (st == AX_OK) st = write_cols(s, ent, D);
    if (st == AX_OK && groups) st = merge_runs(s, runs, lens, P);
    free(ent);
    for (int r = 0; r < P; r++) free(runs[r]);
    return st;
}

/* the spilled build on P > 1 ranks (see ax_memscan_index_build_bounded) */
static ax_status build_bounded_dist(const ax_axd_t *ds, const ax_memscan_build_opts *o,
                                    uint64_t mem_limit, const char *path, ax_grid_t *g,
                                    ax_memscan_info *info_out) {
    int P = ax_grid_dim(g, AX_AXIS_WORLD), rank = ax_grid_coord(g, AX_AXIS_WORLD);
    spill s;
    memset(&s, 0, sizeof s);
    s.ds = ds;
    s.o = o;
    s.limit = mem_limit;
    s.dist = 1;
    s.fd = s.fd_list = -1;
    ax_ms_fill_info(&s.info, ds, o, P);
    ax_status st = AX_OK;
    if (P > 64)
        st = ax_errorf(AX_ERR_UNSUPPORTED,
                       "memscan index: --mem-limit builds on at most 64 ranks (%d here)", P);
    /* partitions sized by all windows, so rank 0's gathered partition (every rank's share of
     * it) fits as a serial build's does; each rank's temporary files carry its rank */
    uint64_t W = ax_memscan_windows_of(ds, o->n);
    char *base = malloc(strlen(path) + 16);
    if (!base) st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    if (st == AX_OK) {
        sprintf(base, "%s.r%d", path, rank);
        st = spill_setup(&s, base, W, PEAK_PER_PAIR, 0);
    }
    s.n_runs = s.K;
    if (st == AX_OK) {
        s.ent_off = calloc((size_t)s.K, sizeof *s.ent_off);
        s.ent_n = calloc((size_t)s.K, sizeof *s.ent_n);
        s.run_bytes = calloc((size_t)s.K, sizeof *s.run_bytes);
        if (!s.ent_off || !s.ent_n || !s.run_bytes)
            st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    }
    free(base);
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan index");
    if (st == AX_OK && rank == 0)
        AX_INFO("memscan index: %llu windows in %llu partitions on %d ranks within %.0f MB each",
                (unsigned long long)W, (unsigned long long)s.K, P, (double)mem_limit / 1e6);
    /* round buffers (pairs, their send copy, up to twice that received) within an eighth */
    uint64_t B = mem_limit / 8 / (4 * sizeof(ax_ms_pair));
    if (B > o->round_windows) B = o->round_windows;
    if (B < 1024) B = 1024;
    if (st == AX_OK) st = ax_ms_route_pairs(ds, o, g, B, route_sink, &s);
    for (uint64_t k = 0; k < s.K && st == AX_OK; k++) st = flush_part_fwd(&s, k);
    free(s.buf);
    s.buf = NULL;
    for (uint64_t k = 0; k < s.K && st == AX_OK; k++) {
        if (o->stop && *o->stop) st = ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted");
        if (st == AX_OK) st = count_part(&s, k);
        s.info.n_windows += s.parts[k].pairs;
        s.run_bytes[k] = s.list_off - s.run_off[k];
    }
    st = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan index");
    /* the global statistics */
    uint64_t v[6 + AX_MEMSCAN_HIST] = {s.info.n_windows, s.info.n_distinct, s.info.n_saturated,
                                       s.n_dup,          s.n_dup_pos,       s.max_pairs};
    memcpy(v + 6, s.info.hist, sizeof s.info.hist);
    if (st == AX_OK)
        st = ax_coll_allreduce(g, AX_AXIS_WORLD, v, 6 + AX_MEMSCAN_HIST, AX_DT_U64, AX_OP_SUM);
    if (st == AX_OK) {
        s.info.n_windows = v[0];
        s.info.n_distinct = v[1];
        s.info.n_saturated = v[2];
        s.n_dup = v[3];
        s.n_dup_pos = v[4];
        memcpy(s.info.hist, v + 6, sizeof s.info.hist);
        st = check_lists(&s);
    }
    if (st == AX_OK && s.max_pairs * PEAK_PER_PAIR > mem_limit / 2)
        AX_WARN("memscan index: one partition held %llu windows on one rank (repeats of one "
                "window share a partition): over half of --mem-limit",
                (unsigned long long)s.max_pairs);
    if (st == AX_OK) {
        /* rank 0 rebuilds its list file as the merged runs after its own (appended) */
        ax_status gs = AX_OK;
        for (uint64_t k = 0; k < s.K; k++) {
            gs = gather_part(&s, g, P, rank, k, gs);
            if (gs == AX_ERR_MPI) break;
        }
        sec_ctx sc = {&s, NULL};
        if (rank == 0 && gs == AX_OK)
            gs = ax_ms_v3_write_with(&s.info, sections, &sc, path, o->stop);
        /* everyone returns rank 0's verdict (it did the writing) */
        int32_t verdict = (int32_t)gs;
        if (gs != AX_ERR_MPI) {
            st = ax_coll_bcast(g, AX_AXIS_WORLD, &verdict, 1, AX_DT_I32, 0);
            if (st == AX_OK && verdict != AX_OK && gs == AX_OK)
                st = ax_errorf((ax_status)verdict,
                               "memscan index: rank 0 could not write %s (see its message)", path);
            else if (st == AX_OK)
                st = (ax_status)verdict;
        } else {
            st = gs;
        }
    }
    if (st == AX_OK && info_out) *info_out = s.info;
    spill_cleanup(&s);
    return st;
}

/* ---- a version-2 stream (rank 0's after a distributed save) -> version 3, bounded ---- */

#define LBUF (1u << 16)
#define PEAK_PER_ENTRY 32 /* the entries and qsort's buffer */

static ax_status lflush(spill *s) {
    ax_status st = s->lfill ? ax_write_all(s->fd_list, s->lbuf, s->lfill, s->paths[4]) : AX_OK;
    s->lfill = 0;
    return st;
}

static ax_status conv_entries(void *ctx, const ax_ms_key *keys, const uint64_t *vals, size_t k) {
    spill *s = ctx;
    for (size_t i = 0; i < k; i++)
        AX_CHECK(spill_put(s, (uint64_t)keys[i].tag << 6 | keys[i].ext, vals[i]));
    return AX_OK;
}

/* lists come as each rank's in turn, each rank's ascending: a run starts at every descent */
static ax_status conv_list(void *ctx, const uint64_t *pos, uint64_t m) {
    spill *s = ctx;
    if (!s->n_runs || pos[0] < s->last_first) {
        if (s->n_runs == s->runs_cap)
            return ax_errorf(AX_ERR_CORRUPT, "%s: more list runs than building ranks", s->paths[4]);
        s->run_off[s->n_runs] = s->list_off;
        s->run_groups[s->n_runs++] = 0;
    }
    s->last_first = pos[0];
    s->run_groups[s->n_runs - 1]++;
    for (uint64_t i = 0; i <= m; i++) {
        uint64_t v = i == 0 ? m : pos[i - 1];
        if (s->lfill + 8 > LBUF) AX_CHECK(lflush(s));
        memcpy(s->lbuf + s->lfill, &v, 8);
        s->lfill += 8;
    }
    s->list_off += 8 * (m + 1);
    s->n_dup++;
    s->n_dup_pos += m;
    return AX_OK;
}

ax_status ax_memscan_index_upgrade(const char *tmp, const char *path, uint64_t mem_limit,
                                   volatile int *stop) {
    FILE *f = fopen(tmp, "rb");
    if (!f) return ax_errorf(AX_ERR_IO, "%s: cannot reopen: %s", tmp, strerror(errno));
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    spill s;
    memset(&s, 0, sizeof s);
    s.entries = 1;
    s.limit = mem_limit;
    s.fd = s.fd_list = -1;
    uint32_t ver;
    ax_status st = ax_ms_header_read(f, tmp, &s.info, &ver);
    if (st == AX_OK)
        st = spill_setup(&s, path, s.info.n_distinct, PEAK_PER_ENTRY,
                         (uint64_t)s.info.build_ranks + 1);
    if (st == AX_OK && !(s.lbuf = malloc(LBUF)))
        st = ax_errorf(AX_ERR_NOMEM, "memscan index: out of memory");
    if (st == AX_OK)
        st = ax_ms_blocks_read_ex(f, tmp, &s.info, conv_entries, &s, NULL, conv_list, &s);
    fclose(f);
    for (uint64_t k = 0; k < s.K && st == AX_OK; k++) st = flush_part_fwd(&s, k);
    if (st == AX_OK) st = lflush(&s);
    free(s.buf);
    s.buf = NULL;
    for (uint64_t k = 0; k < s.K && st == AX_OK; k++) {
        if (stop && *stop) st = ax_errorf(AX_ERR_INTERRUPTED, "memscan index: interrupted");
        ax_ms_ent *ent = NULL;
        if (st == AX_OK && s.parts[k].pairs) st = read_part(&s, k, (void **)&ent);
        if (st == AX_OK && s.parts[k].pairs) st = write_cols(&s, ent, s.parts[k].pairs);
        free(ent);
    }
    sec_ctx sc = {&s, NULL};
    if (st == AX_OK) st = ax_ms_v3_write_with(&s.info, sections, &sc, path, stop);
    spill_cleanup(&s);
    return st;
}
