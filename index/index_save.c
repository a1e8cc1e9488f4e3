/* Saving the index as one file whatever the number of ranks: rank 0 writes the header, its own
 * blocks, then each other rank's blocks as that rank streams them over (one block in flight,
 * so rank 0 never holds more than a block of another shard), then the trailer. Output goes to
 * INDEX.partial and INDEX.json.partial, renamed only when complete. */
#include "index/index_format.h"
#include "index/index_impl.h"
#include "lib/dist/comm.h"

#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "lib/core/timer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#define TAG_HDR 1 /* ax_coll_send tags */
#define TAG_DATA 2

/* Walks this process's table in bucket order, a block at a time. */
typedef struct {
    const ax_ms_table *t;
    uint64_t b; /* next bucket */
    ax_ms_key *keys;
    uint64_t *vals;
    ax_ms_block_buf buf;
    int lists; /* 0: table blocks, 1: occurrence-list blocks */
    ax_ms_list_iter li;
    uint64_t *lv; /* AX_MS_BLOCK_ENTRIES values */
} block_src;

/* next block (hdr + comp); *k = 0 at the end */
static ax_status next_block(block_src *s, uint8_t hdr[AX_MS_BLOCK_HEADER], size_t *clen,
                            size_t *k) {
    size_t m = 0;
    if (s->lists) {
        m = ax_ms_list_next(&s->li, s->lv, AX_MS_BLOCK_ENTRIES);
        *k = m;
        *clen = 0;
        memset(hdr, 0, AX_MS_BLOCK_HEADER);
        return m ? ax_ms_block_encode_u64(&s->buf, s->lv, m, hdr, clen) : AX_OK;
    }
    while (s->b < s->t->nb && m + AX_MS_BUCKET <= AX_MS_BLOCK_ENTRIES) {
        const ax_ms_bucket *bk = &s->t->b[s->b++];
        for (int j = 0; j < AX_MS_BUCKET; j++)
            if (bk->val[j]) {
                s->keys[m].tag = bk->tag[j];
                s->keys[m].ext = ax_ms_slot_ext(bk, j);
                s->vals[m] = bk->val[j];
                m++;
            }
    }
    *k = m;
    *clen = 0;
    memset(hdr, 0, AX_MS_BLOCK_HEADER);
    if (!m) return AX_OK;
    return ax_ms_block_encode(&s->buf, s->keys, s->vals, m, hdr, clen);
}

static ax_status write_json(const ax_memscan_info *in, const char *path) {
    char *text = ax_memscan_info_json(in);
    if (!text) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    ax_status st = ax_write_file(path, text, strlen(text));
    free(text);
    return st;
}

/* Rank 0's side: everything that touches the file. `fd` < 0 once writing has failed: blocks
 * are still drained from the other ranks so none is left waiting, then the error is returned. */
typedef struct {
    int fd;
    const char *partial;
    ax_status st;
    volatile int *stop;
    uint64_t blocks;
} writer;

static void w_put(writer *w, const void *p, size_t n) {
    if (w->st != AX_OK) return;
    if (w->stop && *w->stop) {
        w->st = ax_errorf(AX_ERR_INTERRUPTED,
                          "memscan index: interrupted while saving; nothing was written");
        return;
    }
    w->st = ax_write_all(w->fd, p, n, w->partial);
}

static ax_status save_impl(const ax_memscan_index_t *idx, const char *path, volatile int *stop,
                           ax_grid_t *g, int sidecar) {
    int P = idx->shard_size, rank = g ? ax_grid_coord(g, AX_AXIS_WORLD) : 0;
    block_src src;
    memset(&src, 0, sizeof src);
    src.t = &idx->t;
    src.keys = malloc(sizeof *src.keys * AX_MS_BLOCK_ENTRIES);
    src.vals = malloc(sizeof *src.vals * AX_MS_BLOCK_ENTRIES);
    src.lv = malloc(sizeof *src.lv * AX_MS_BLOCK_ENTRIES);
    src.li.o = &idx->occ;
    ax_status st = (src.keys && src.vals && src.lv)
                       ? AX_OK
                       : ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    uint8_t hdr[AX_MS_BLOCK_HEADER];
    size_t clen, k;
    if (rank != 0) {
        /* stream my blocks to rank 0, table then lists; an empty header ends each kind (also
         * after a local error) */
        for (src.lists = 0; src.lists < 2 && st != AX_ERR_MPI; src.lists++) do {
                if (st == AX_OK) st = next_block(&src, hdr, &clen, &k);
                if (st != AX_OK) k = 0, memset(hdr, 0, sizeof hdr);
                ax_status ss =
                    ax_coll_send(g, AX_AXIS_WORLD, hdr, AX_MS_BLOCK_HEADER, AX_DT_U8, 0, TAG_HDR);
                if (ss == AX_OK && k)
                    ss = ax_coll_send(g, AX_AXIS_WORLD, src.buf.comp, (long)clen, AX_DT_U8, 0,
                                      TAG_DATA);
                if (ss != AX_OK) {
                    st = ss;
                    break;
                }
            } while (k);
        goto done;
    }

    char *partial = malloc(strlen(path) + 16), *jpath = malloc(strlen(path) + 16),
         *jpartial = malloc(strlen(path) + 24);
    writer w = {-1, partial, st, stop, 0};
    uint8_t *recv = NULL;
    size_t recv_cap = 0;
    if (!partial || !jpath || !jpartial) {
        w.st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    } else {
        sprintf(partial, "%s.partial", path);
        sprintf(jpath, "%s.json", path);
        sprintf(jpartial, "%s.json.partial", path);
    }
    if (w.st == AX_OK) {
        w.fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (w.fd < 0)
            w.st = ax_errorf(AX_ERR_IO,
                             "%s: cannot create: %s; check the directory exists and "
                             "is writable",
                             partial, strerror(errno));
    }
    uint8_t *hbuf = NULL;
    size_t hlen = 0;
    if (w.st == AX_OK && ax_ms_header_encode(&idx->info, AX_MS_VERSION_V2, &hbuf, &hlen) != 0)
        w.st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    w_put(&w, hbuf, hlen);
    free(hbuf);
    for (src.lists = 0; src.lists < 2; src.lists++) {
        /* my blocks */
        for (;;) {
            if (w.st != AX_OK) break;
            ax_status bs = next_block(&src, hdr, &clen, &k);
            if (bs != AX_OK && w.st == AX_OK) w.st = bs;
            if (!k || bs != AX_OK) break;
            w_put(&w, hdr, sizeof hdr);
            w_put(&w, src.buf.comp, clen);
            w.blocks++;
        }
        /* the other ranks' blocks, in rank order */
        for (int r = 1; r < P; r++) {
            for (;;) {
                st = ax_coll_recv(g, AX_AXIS_WORLD, hdr, AX_MS_BLOCK_HEADER, AX_DT_U8, r, TAG_HDR);
                if (st != AX_OK) goto close;
                uint64_t kk = ax_ms_get64(hdr), c = ax_ms_get64(hdr + 8);
                if (!kk) break;
                if (c > recv_cap) {
                    uint8_t *nr = realloc(recv, c);
                    if (!nr) {
                        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
                        goto close; /* MPI will not recover either way */
                    }
                    recv = nr;
                    recv_cap = c;
                }
                st = ax_coll_recv(g, AX_AXIS_WORLD, recv, (long)c, AX_DT_U8, r, TAG_DATA);
                if (st != AX_OK) goto close;
                w_put(&w, hdr, sizeof hdr);
                w_put(&w, recv, c);
                w.blocks++;
            }
        }
    }
    {
        uint8_t tr[AX_MS_TRAILER_BYTES];
        memcpy(tr, AX_MS_TRAILER, 8);
        ax_ms_put64(tr + 8, w.blocks);
        ax_ms_put64(tr + 16, idx->info.n_distinct);
        ax_ms_put64(tr + 24, XXH3_64bits(tr, 24));
        w_put(&w, tr, sizeof tr);
    }
    if (w.st == AX_OK && fsync(w.fd) != 0)
        w.st = ax_errorf(AX_ERR_IO, "%s: fsync failed: %s", partial, strerror(errno));
    st = w.st;
close:
    if (w.fd >= 0) close(w.fd);
    if (st == AX_OK && sidecar) st = write_json(&idx->info, jpartial);
    if (st == AX_OK && stop && *stop)
        st = ax_errorf(AX_ERR_INTERRUPTED,
                       "memscan index: interrupted while saving; nothing was written");
    if (st == AX_OK) st = ax_rename_durable(partial, path);
    if (st == AX_OK && sidecar) st = ax_rename_durable(jpartial, jpath);
    if (st != AX_OK) {
        if (partial) unlink(partial);
        if (jpartial) unlink(jpartial);
    }
    free(recv);
    free(partial);
    free(jpath);
    free(jpartial);
done:
    ax_ms_block_buf_free(&src.buf, 1);
    free(src.keys);
    free(src.vals);
    free(src.lv);
    return st;
}

/* this process's table entries, a batch at a time */
static ax_status table_feed(const ax_ms_table *t, ax_ms_entry_fn fn, void *ctx) {
    enum { B = 2048 };
    ax_ms_key keys[B];
    uint64_t vals[B];
    size_t k = 0;
    for (uint64_t b = 0; b < t->nb; b++)
        for (int j = 0; j < AX_MS_BUCKET; j++)
            if (t->b[b].val[j]) {
                keys[k] = (ax_ms_key){t->b[b].tag[j], ax_ms_slot_ext(&t->b[b], j)};
                vals[k] = t->b[b].val[j];
                if (++k == B) {
                    AX_CHECK(fn(ctx, keys, vals, k));
                    k = 0;
                }
            }
    return k ? fn(ctx, keys, vals, k) : AX_OK;
}

/* a whole index in this process -> version 3 */
static ax_status save_local(const ax_memscan_index_t *idx, const char *path, volatile int *stop) {
    ax_ms_collect c;
    AX_CHECK(ax_ms_collect_init(&c, idx->t.n));
    ax_ms_occ sorted;
    memset(&sorted, 0, sizeof sorted);
    const ax_ms_occ *o = &idx->occ;
    ax_status st = table_feed(&idx->t, ax_ms_collect_count, &c);
    if (st == AX_OK) st = ax_ms_collect_place(&c);
    if (st == AX_OK) st = table_feed(&idx->t, ax_ms_collect_fill, &c);
    if (st == AX_OK) ax_ms_collect_sort(&c);
    int in_order = 1; /* lists from the build ascend by first occurrence; a copy otherwise */
    for (uint64_t g = 1; g < o->n_groups && in_order; g++)
        in_order = o->pos[o->off[g - 1]] < o->pos[o->off[g]];
    if (st == AX_OK && !in_order) {
        sorted.n_groups = o->n_groups;
        sorted.n_pos = o->n_pos;
        sorted.off = malloc(sizeof *sorted.off * (size_t)(o->n_groups + 1));
        sorted.pos = malloc(sizeof *sorted.pos * (size_t)(o->n_pos ? o->n_pos : 1));
        if (!sorted.off || !sorted.pos) {
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        } else {
            memcpy(sorted.off, o->off, sizeof *sorted.off * (size_t)(o->n_groups + 1));
            memcpy(sorted.pos, o->pos, sizeof *sorted.pos * (size_t)o->n_pos);
            st = ax_ms_occ_sort_groups(&sorted);
        }
        o = &sorted;
    }
    ax_ms_occ none;
    memset(&none, 0, sizeof none);
    if (st == AX_OK) st = ax_ms_v3_write(&idx->info, &c, o->off ? o : &none, path, stop);
    ax_ms_occ_free(&sorted);
    ax_ms_collect_free(&c);
    return st;
}

/* ---- several ranks -> version 3, gathered on rank 0 in memory ----
 * Partitions of version 3 are by hash while shards are by owner, so every partition holds
 * entries of every rank: rank 0 needs all of them before it writes any. When they fit the
 * build's memory limit (16 bytes per distinct window and 8 per list value, what a one-rank
 * save uses), the other ranks send their raw entries and lists straight into rank 0's
 * partition order (counts summed first, so each entry lands once), instead of through a
 * version-2 temporary file that rank 0 then reorders on disk (~34 s at 100M tokens on 2 ranks,
 * mostly spilling under the reorder's old 1 GiB cap). */

#define TAG_ENT 3
#define TAG_OCC 4
#define CHUNK ((size_t)1 << 20) /* u64 values per message (even: whole entries) */
#define SORT_BITS 11            /* ax_ms_ent_sort's bins, as index_save_v3.c */

/* the memory this process may use: the build's --mem-limit, or half the machine */
static uint64_t save_limit(const ax_memscan_index_t *idx) {
    if (idx->mem_limit) return idx->mem_limit;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 2 : (1ULL << 30);
}

/* what this process holds already: its shard's table and lists */
static uint64_t held_bytes(const ax_memscan_index_t *idx) {
    return (uint64_t)ax_ms_table_bytes(&idx->t) + (uint64_t)ax_ms_occ_bytes(&idx->occ);
}

/* rank 0's extra memory for the gather: entries, their sort scratch (a partition's worth,
 * counted generously), lists and a sorted copy of them */
static uint64_t gather_bytes(const ax_memscan_info *in) {
    uint64_t D = in->n_distinct, L = in->n_dup + 1 + in->n_dup_pos;
    return 16 * D + D / 4 + 16 * L;
}

/* n u64 values in CHUNK-sized messages; into dst, or dropped into scratch when dst is NULL */
static ax_status send_u64s(ax_grid_t *g, const uint64_t *v, uint64_t n) {
    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        AX_CHECK(ax_coll_send(g, AX_AXIS_WORLD, v + i, (long)m, AX_DT_U64, 0, TAG_OCC));
    }
    return AX_OK;
}
static ax_status recv_u64s(ax_grid_t *g, int r, uint64_t *dst, uint64_t n, uint64_t *scratch) {
    for (uint64_t i = 0; i < n; i += CHUNK) {
        size_t m = n - i < CHUNK ? (size_t)(n - i) : CHUNK;
        AX_CHECK(ax_coll_recv(g, AX_AXIS_WORLD, dst ? dst + i : scratch, (long)m, AX_DT_U64, r,
                              TAG_OCC));
    }
    return AX_OK;
}

/* Merges the sorted runs e[0..a) and e[a..n) through tmp (n entries). */
static void merge_runs(ax_ms_ent *e, size_t a, size_t n, ax_ms_ent *tmp) {
    if (a == 0 || a == n || ax_ms_ent_cmp(&e[a - 1], &e[a]) <= 0) return; /* in order already */
    size_t i = 0, j = a, k = 0;
    while (i < a && j < n) tmp[k++] = ax_ms_ent_cmp(&e[j], &e[i]) < 0 ? e[j++] : e[i++];
    while (i < a) tmp[k++] = e[i++];
    while (j < n) tmp[k++] = e[j++];
    memcpy(e, tmp, sizeof *e * n);
}

/* Sorts each partition's entries of c in [dir[p], end[p]) (end NULL: the whole partition). */
static void sort_parts(const ax_ms_collect *c, const uint64_t *end, ax_ms_ent *tmp, uint32_t *cnt) {
    uint64_t Pp = 1ULL << c->part_bits;
    for (uint64_t p = 0; p < Pp; p++) {
        size_t m = (size_t)((end ? end[p] : c->dir[p + 1]) - c->dir[p]);
        if (m > 1) ax_ms_ent_sort(c->ent + c->dir[p], m, tmp, cnt, SORT_BITS);
    }
}

/* Collective: every rank's shard -> rank 0 -> version 3 at path. Each rank puts its own
 * entries in partition order and sorts them (all ranks at once); rank 0 places each other
 * rank's sorted runs after its own in every partition (a near-sequential copy, as they come in
 * partition order) and merges them. Returns rank 0's own status there (MPI failures
 * everywhere); the caller broadcasts rank 0's verdict. */
static ax_status save_gathered(const ax_memscan_index_t *idx, const char *path, volatile int *stop,
                               ax_grid_t *g) {
    int P = idx->shard_size, rank = ax_grid_coord(g, AX_AXIS_WORLD);
    const ax_memscan_info *in = &idx->info;
    ax_ms_collect c;
    ax_ms_occ o;
    memset(&o, 0, sizeof o);
    uint64_t *aux = NULL; /* rank 0: its own counts, then each run's end; others: starts */
    ax_ms_ent *tmp = NULL;
    uint32_t *cnt = NULL;
    ax_status st = ax_ms_collect_init(&c, in->n_distinct); /* the global plan's partitions */
    uint64_t Pp = 1ULL << c.part_bits;
    uint64_t *buf = st == AX_OK ? malloc(sizeof *buf * CHUNK) : NULL;
    if (st == AX_OK) {
        aux = malloc(sizeof *aux * (size_t)(Pp + 1));
        cnt = malloc(sizeof *cnt * ((1u << SORT_BITS) + 2));
        if (!buf || !aux || !cnt) st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    if (st == AX_OK) st = table_feed(&idx->t, ax_ms_collect_count, &c);
    if (st == AX_OK) memcpy(aux, c.dir, sizeof *aux * (size_t)(Pp + 1)); /* summed below */
    if (st == AX_OK && rank != 0) { /* my entries in partition order, sorted */
        c.n = idx->t.n;
        st = ax_ms_collect_place(&c);
        if (st == AX_OK) st = table_feed(&idx->t, ax_ms_collect_fill, &c);
    }
    uint64_t big = 0; /* the largest partition (of mine; rank 0: of all, below) */
    for (uint64_t p = 0; p < Pp && st == AX_OK; p++) {
        uint64_t m = rank ? c.dir[p + 1] - c.dir[p] : c.dir[p + 1];
        big = m > big ? m : big;
    }
    if (st == AX_OK && rank != 0) {
        tmp = malloc(sizeof *tmp * (size_t)(big ? big : 1));
        if (!tmp)
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        else
            sort_parts(&c, NULL, tmp, cnt);
    }
    /* nobody streams alone */
    ax_status ag = ax_coll_agree(g, AX_AXIS_WORLD, st, "memscan index save");
    if (ag != AX_OK) {
        st = st != AX_OK ? st : ag;
        goto out;
    }
    /* every partition's entries over all ranks: rank 0 places them */
    st = ax_coll_allreduce(g, AX_AXIS_WORLD, aux, (long)(Pp + 1), AX_DT_U64, AX_OP_SUM);
    if (st != AX_OK) goto out;
    if (rank != 0) {
        /* my partitions' starts, then my entries, then my lists, once rank 0 has sorted its
         * own (waiting asleep) */
        st = ax_ms_calm_sync(g);
        if (st == AX_OK) st = send_u64s(g, c.dir, Pp + 1);
        if (st == AX_OK) st = send_u64s(g, (const uint64_t *)c.ent, 2 * c.n);
        uint64_t hdr[2] = {idx->occ.n_groups, idx->occ.n_pos};
        if (st == AX_OK) st = ax_coll_send(g, AX_AXIS_WORLD, hdr, 2, AX_DT_U64, 0, TAG_HDR);
        if (st == AX_OK && hdr[0]) st = send_u64s(g, idx->occ.off, hdr[0] + 1);
        if (st == AX_OK && hdr[1]) st = send_u64s(g, idx->occ.pos, hdr[1]);
        goto out;
    }
    /* rank 0: the counts of all ranks give each partition's place; mine go first in it. A
     * local failure (w) still drains every message, so no rank is left waiting; st is the
     * transport's (fatal everywhere). */
    double t0 = ax_now(), t1 = 0, t2 = 0, t3 = 0;
    uint64_t *own = c.dir; /* my counts; the sums become the directory */
    c.dir = aux;
    aux = own;
    ax_status w = ax_ms_collect_place(&c);
    if (w == AX_OK) w = table_feed(&idx->t, ax_ms_collect_fill, &c);
    big = 0;
    for (uint64_t p = 0; p < Pp; p++)
        big = c.dir[p + 1] - c.dir[p] > big ? c.dir[p + 1] - c.dir[p] : big;
    if (w == AX_OK && !(tmp = malloc(sizeof *tmp * (size_t)(big ? big : 1))))
        w = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    if (w == AX_OK) {
        sort_parts(&c, c.cur, tmp, cnt);
        memcpy(aux, c.cur, sizeof *aux * (size_t)Pp); /* the end of the merged runs */
    }
    st = ax_ms_calm_sync(g);
    for (int r = 1; r < P && st == AX_OK; r++) {
        /* r's starts (into buf: at most CHUNK values a message, so a message at a time) */
        uint64_t q = 0, qend = 0, got = 0, n_r = 0;
        uint64_t *starts = malloc(sizeof *starts * (size_t)(Pp + 1));
        if (!starts && w == AX_OK) w = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        st = recv_u64s(g, r, starts, Pp + 1, buf);
        if (st == AX_OK && starts) n_r = starts[Pp];
        if (st == AX_OK && !starts) {
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory (rank 0)", path);
            break; /* the other ranks cannot be drained without knowing what comes */
        }
        for (uint64_t i = 0; i < 2 * n_r && st == AX_OK; i += CHUNK) {
            size_t m = 2 * n_r - i < CHUNK ? (size_t)(2 * n_r - i) : CHUNK;
            st = ax_coll_recv(g, AX_AXIS_WORLD, buf, (long)m, AX_DT_U64, r, TAG_OCC);
            const ax_ms_ent *e = (const ax_ms_ent *)buf;
            for (size_t k = 0; k < m / 2 && st == AX_OK && w == AX_OK; k++, got++) {
                while (got >= qend) qend = starts[++q]; /* r's entry `got` is in partition q-1 */
                uint64_t p = q - 1;
                if (c.cur[p] >= c.dir[p + 1]) {
                    w = ax_errorf(AX_ERR_INTERNAL, "memscan: partition %llu overflows",
                                  (unsigned long long)p);
                    break;
                }
                c.ent[c.cur[p]++] = e[k];
            }
        }
        free(starts);
        for (uint64_t p = 0; p < Pp && st == AX_OK && w == AX_OK; p++) {
            ax_ms_ent *base = c.ent + c.dir[p];
            merge_runs(base, (size_t)(aux[p] - c.dir[p]), (size_t)(c.cur[p] - c.dir[p]), tmp);
            aux[p] = c.cur[p];
        }
    }
    for (uint64_t p = 0; p < Pp && st == AX_OK && w == AX_OK; p++)
        if (c.cur[p] != c.dir[p + 1])
            w = ax_errorf(AX_ERR_INTERNAL,
                          "memscan index: partition %llu got %llu of its %llu entries (a rank "
                          "failed; see its message)",
                          (unsigned long long)p, (unsigned long long)(c.cur[p] - c.dir[p]),
                          (unsigned long long)(c.dir[p + 1] - c.dir[p]));
    t1 = ax_now();
    /* lists: each rank's in turn, offsets shifted by the positions before them */
    if (st == AX_OK && w == AX_OK) {
        o.n_groups = in->n_dup;
        o.n_pos = in->n_dup_pos;
        o.off = malloc(sizeof *o.off * (size_t)(o.n_groups + 1));
        o.pos = malloc(sizeof *o.pos * (size_t)(o.n_pos ? o.n_pos : 1));
        if (!o.off || !o.pos) w = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    uint64_t G = 0, N = 0; /* groups and positions so far */
    if (w == AX_OK) {
        if (idx->occ.n_groups > o.n_groups || idx->occ.n_pos > o.n_pos)
            w = ax_errorf(AX_ERR_INTERNAL, "memscan index: rank 0's lists exceed the header's");
        else if (idx->occ.n_groups) {
            memcpy(o.off, idx->occ.off, sizeof *o.off * (size_t)(idx->occ.n_groups + 1));
            memcpy(o.pos, idx->occ.pos, sizeof *o.pos * (size_t)idx->occ.n_pos);
            G = idx->occ.n_groups;
            N = idx->occ.n_pos;
        } else if (o.off) {
            o.off[0] = 0;
        }
    }
    for (int r = 1; r < P && st == AX_OK; r++) {
        uint64_t hdr[2];
        st = ax_coll_recv(g, AX_AXIS_WORLD, hdr, 2, AX_DT_U64, r, TAG_HDR);
        if (st != AX_OK) break;
        int keep = w == AX_OK && G + hdr[0] <= o.n_groups && N + hdr[1] <= o.n_pos;
        if (w == AX_OK && !keep)
            w = ax_errorf(AX_ERR_INTERNAL, "memscan index: rank %d's lists exceed the header's", r);
        if (hdr[0]) st = recv_u64s(g, r, keep ? o.off + G : NULL, hdr[0] + 1, buf);
        if (st == AX_OK && hdr[1]) st = recv_u64s(g, r, keep ? o.pos + N : NULL, hdr[1], buf);
        if (keep && hdr[0]) {
            for (uint64_t q = 0; q <= hdr[0]; q++) o.off[G + q] += N;
            G += hdr[0];
            N += hdr[1];
        }
    }
    if (st == AX_OK && w == AX_OK && (G != o.n_groups || N != o.n_pos))
        w = ax_errorf(AX_ERR_INTERNAL,
                      "memscan index: %llu lists of %llu positions gathered, the header says "
                      "%llu, %llu",
                      (unsigned long long)G, (unsigned long long)N, (unsigned long long)o.n_groups,
                      (unsigned long long)o.n_pos);
    free(tmp);
    tmp = NULL;
    if (st == AX_OK && w == AX_OK) {
        int in_order = 1; /* each rank's lists ascend by first occurrence; the runs interleave */
        for (uint64_t q = 1; q < o.n_groups && in_order; q++)
            in_order = o.pos[o.off[q - 1]] < o.pos[o.off[q]];
        if (!in_order) w = ax_ms_occ_sort_groups(&o);
        t2 = ax_now();
        ax_ms_occ none;
        memset(&none, 0, sizeof none);
        if (w == AX_OK) w = ax_ms_v3_write(in, &c, o.off ? &o : &none, path, stop);
        t3 = ax_now();
        AX_DEBUG("memscan index: saved in %.2f s: gathering and merging %.2f s, lists %.2f s, "
                 "writing %.2f s",
                 t3 - t0, t1 - t0, t2 - t1, t3 - t2);
    }
    if (st == AX_OK) st = w;
out:
    free(buf);
    free(aux);
    free(tmp);
    free(cnt);
    ax_ms_occ_free(&o);
    ax_ms_collect_free(&c);
    return st;
}

/* memory for rank 0's reordering of a version-2 stream when the gather does not fit: the
 * limit less what rank 0 holds, at least 64 MiB */
static uint64_t convert_limit(const ax_memscan_index_t *idx) {
    uint64_t lim = save_limit(idx), held = held_bytes(idx);
    lim = lim > held ? lim - held : 0;
    return lim < (64u << 20) ? (64u << 20) : lim;
}

ax_status ax_memscan_index_save(const ax_memscan_index_t *idx, const char *path,
                                volatile int *stop) {
    if (idx->map)
        return ax_errorf(AX_ERR_ARG,
                         "memscan index: %s: an index read from a file is saved already", path);
    if (idx->shard_size <= 1) /* a whole index: this process writes it alone */
        return save_local(idx, path, stop);
    ax_grid_t *g = idx->grid;
    if (!g || ax_grid_dim(g, AX_AXIS_WORLD) != idx->shard_size)
        return ax_errorf(AX_ERR_ARG,
                         "memscan index: saving a shard needs the %d ranks that built "
                         "it",
                         idx->shard_size);
    /* in memory when rank 0 has room (decided there: its table is what it holds) */
    int32_t gather = save_limit(idx) >= held_bytes(idx) + gather_bytes(&idx->info);
    AX_CHECK(ax_coll_bcast(g, AX_AXIS_WORLD, &gather, 1, AX_DT_I32, 0));
    if (ax_grid_coord(g, AX_AXIS_WORLD) == 0)
        AX_DEBUG("memscan index: saving %s %s", path,
                 gather ? "gathered in memory on rank 0"
                        : "through a version-2 stream reordered on disk (--mem-limit)");
    ax_status st;
    if (gather) {
        st = save_gathered(idx, path, stop, g);
    } else {
        /* bounded: the shards stream to rank 0 (one block of another rank in flight) into a
         * version-2 file that rank 0 then reorders into version 3 on disk */
        char tmp[4200]; /* every rank sees the same path, so decides alike */
        if (snprintf(tmp, sizeof tmp, "%s.v2.partial", path) >= (int)sizeof tmp)
            return ax_errorf(AX_ERR_ARG, "memscan index: output path too long: %s", path);
        st = save_impl(idx, tmp, stop, g, 0);
        if (ax_grid_coord(g, AX_AXIS_WORLD) == 0) {
            if (st == AX_OK) st = ax_memscan_index_upgrade(tmp, path, convert_limit(idx), stop);
            unlink(tmp);
        }
    }
    /* everyone returns rank 0's verdict (it did the writing): a max where only rank 0's
     * counts, polled with sleeps by the others, which are done long before rank 0 has written
     * the file; a blocking collective would spin a core that rank 0 needs when ranks share
     * cores (MPI polls while it waits) */
    int32_t v = ax_grid_coord(g, AX_AXIS_WORLD) == 0 ? (int32_t)st : (int32_t)AX_OK;
    ax_req req;
    memset(&req, 0, sizeof req);
    AX_CHECK(ax_coll_iallreduce(g, AX_AXIS_WORLD, &v, 1, AX_DT_I32, AX_OP_MAX, &req));
    if (ax_grid_coord(g, AX_AXIS_WORLD) != 0)
        while (!ax_test(&req)) {
            struct timespec ts = {0, 2000000}; /* 2 ms */
            nanosleep(&ts, NULL);
        }
    AX_CHECK(ax_wait(&req));
    if (v != AX_OK && st == AX_OK)
        return ax_errorf((ax_status)v,
                         "memscan index: rank 0 could not write %s (see its "
                         "message)",
                         path);
    return (ax_status)v;
}

ax_status ax_memscan_index_save_v2(const ax_memscan_index_t *idx, const char *path,
                                   volatile int *stop) {
    if (idx->shard_size > 1 || idx->map)
        return ax_errorf(AX_ERR_UNSUPPORTED,
                         "memscan index: %s: version 2 is written only from a whole index built "
                         "in this process",
                         path);
    return save_impl(idx, path, stop, NULL, 1);
}
