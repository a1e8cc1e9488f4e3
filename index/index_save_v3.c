/* Writing a version-3 index (layout in index/index.h): the entries put in partition order
 * (counted, scattered, each partition sorted by key), then the sections written in one
 * sequential pass that also hashes every 64 KiB page; the page checksums go at the end and
 * their own checksum into the header's extension, rewritten last. */
#include "index/index_format.h"
#include "index/index_impl.h"
#include "index/index_map.h"

#include "lib/core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

ax_status ax_ms_collect_init(ax_ms_collect *c, uint64_t distinct) {
    memset(c, 0, sizeof *c);
    ax_ms_v3_layout l;
    ax_ms_v3_layout_plan(&l, 0, distinct, 0, 0);
    c->part_bits = l.part_bits;
    c->n = distinct;
    uint64_t P = 1ULL << c->part_bits;
    c->dir = calloc((size_t)P + 1, sizeof *c->dir);
    c->cur = calloc((size_t)P, sizeof *c->cur);
    if (!c->dir || !c->cur) {
        ax_ms_collect_free(c);
        return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory for the index directory");
    }
    return AX_OK;
}

void ax_ms_collect_free(ax_ms_collect *c) {
    free(c->dir);
    free(c->cur);
    free(c->ent);
    memset(c, 0, sizeof *c);
}

ax_status ax_ms_collect_count(void *ctx, const ax_ms_key *keys, const uint64_t *vals, size_t k) {
    ax_ms_collect *c = ctx;
    (void)vals;
    for (size_t i = 0; i < k; i++) c->dir[ax_ms_v3_part(keys[i].tag, c->part_bits) + 1]++;
    return AX_OK;
}

ax_status ax_ms_collect_place(ax_ms_collect *c) {
    uint64_t P = 1ULL << c->part_bits;
    for (uint64_t p = 0; p < P; p++) c->dir[p + 1] += c->dir[p];
    if (c->dir[P] != c->n)
        return ax_errorf(AX_ERR_INTERNAL, "memscan: %llu entries counted, %llu expected",
                         (unsigned long long)c->dir[P], (unsigned long long)c->n);
    memcpy(c->cur, c->dir, sizeof *c->cur * (size_t)P);
    c->ent = malloc(sizeof *c->ent * (size_t)(c->n ? c->n : 1));
    if (!c->ent)
        return ax_errorf(AX_ERR_NOMEM, "memscan: out of memory ordering %llu index entries",
                         (unsigned long long)c->n);
    return AX_OK;
}

ax_status ax_ms_collect_fill(void *ctx, const ax_ms_key *keys, const uint64_t *vals, size_t k) {
    ax_ms_collect *c = ctx;
    for (size_t i = 0; i < k; i++) {
        uint64_t p = ax_ms_v3_part(keys[i].tag, c->part_bits);
        if (c->cur[p] >= c->dir[p + 1])
            return ax_errorf(AX_ERR_INTERNAL, "memscan: partition %llu overflows",
                             (unsigned long long)p);
        c->ent[c->cur[p]++] = (ax_ms_ent){(uint64_t)keys[i].tag << 6 | keys[i].ext, vals[i]};
    }
    return AX_OK;
}

/* by key, then value: entries sharing a key (colliding hashes) come out in one order
 * whatever built them, so two builds of the same data write the same bytes */
int ax_ms_ent_cmp(const void *x, const void *y) {
    const ax_ms_ent *p = x, *q = y;
    if (p->key != q->key) return p->key < q->key ? -1 : 1;
    return (p->val > q->val) - (p->val < q->val);
}

static inline int ent_less(const ax_ms_ent *a, const ax_ms_ent *b) {
    return a->key < b->key || (a->key == b->key && a->val < b->val);
}

static void ent_insertion_sort(ax_ms_ent *e, size_t n) {
    for (size_t i = 1; i < n; i++) {
        ax_ms_ent x = e[i];
        size_t j = i;
        for (; j > 0 && ent_less(&x, &e[j - 1]); j--) e[j] = e[j - 1];
        e[j] = x;
    }
}

#define SORT_BIN_BITS 11

/* Sorts e[0..n) by (key, value) as ax_ms_ent_cmp orders them. A partition's keys are spread
 * uniformly over the range they span, so one counting pass on the top bin_bits bits of that
 * range puts about one entry in each bin when 2^bin_bits ~ n, and sorting inside the bins (by
 * insertion when small, else qsort: colliding hashes can pile up in one bin) finishes it;
 * qsort and its comparator calls over every partition took most of a save (~5 s at 100M
 * windows). tmp: n entries; cnt: 2^bin_bits + 1 counters. */
void ax_ms_ent_sort(ax_ms_ent *e, size_t n, ax_ms_ent *tmp, uint32_t *cnt, int bin_bits) {
    if (n <= 32) {
        ent_insertion_sort(e, n);
        return;
    }
    uint64_t lo = e[0].key, hi = e[0].key;
    for (size_t i = 1; i < n; i++) {
        lo = e[i].key < lo ? e[i].key : lo;
        hi = e[i].key > hi ? e[i].key : hi;
    }
    int bits = 64 - __builtin_clzll((hi - lo) | 1); /* the span's significant bits */
    int sh = bits > bin_bits ? bits - bin_bits : 0;
    size_t nb = (size_t)((hi - lo) >> sh) + 1;
    memset(cnt, 0, sizeof *cnt * (nb + 1));
    for (size_t i = 0; i < n; i++) cnt[((e[i].key - lo) >> sh) + 1]++;
    for (size_t b = 0; b < nb; b++) cnt[b + 1] += cnt[b];
    for (size_t i = 0; i < n; i++) tmp[cnt[(e[i].key - lo) >> sh]++] = e[i];
    /* cnt[b] is now the end of bin b (the start of b + 1) */
    size_t start = 0;
    for (size_t b = 0; b < nb; b++) {
        size_t end = cnt[b], m = end - start;
        if (m > 1 && m <= 32)
            ent_insertion_sort(tmp + start, m);
        else if (m > 32)
            qsort(tmp + start, m, sizeof *tmp, ax_ms_ent_cmp);
        start = end;
    }
    memcpy(e, tmp, sizeof *e * n);
}

void ax_ms_collect_sort(ax_ms_collect *c) {
    uint64_t P = 1ULL << c->part_bits, big = 0;
    for (uint64_t p = 0; p < P; p++)
        if (c->dir[p + 1] - c->dir[p] > big) big = c->dir[p + 1] - c->dir[p];
    ax_ms_ent *tmp = malloc(sizeof *tmp * (size_t)(big ? big : 1));
    uint32_t *cnt = malloc(sizeof *cnt * ((1u << SORT_BIN_BITS) + 2));
    for (uint64_t p = 0; p < P; p++) {
        size_t m = (size_t)(c->dir[p + 1] - c->dir[p]);
        if (m < 2) continue;
        if (tmp && cnt)
            ax_ms_ent_sort(c->ent + c->dir[p], m, tmp, cnt, SORT_BIN_BITS);
        else /* no room for the scratch: the same order, slower */
            qsort(c->ent + c->dir[p], m, sizeof *c->ent, ax_ms_ent_cmp);
    }
    free(tmp);
    free(cnt);
}

/* A sequential writer that hashes the bytes of [l->off_dir, l->off_sums) page by page. */
struct ax_ms_vwriter {
    int fd;
    const char *partial;
    ax_status st;
    volatile int *stop;
    const ax_ms_v3_layout *l;
    uint8_t *buf, *page;
    size_t nbuf, pfill;
    uint64_t off, *sums, np;
};
typedef ax_ms_vwriter vwriter;

#define WBUF (1u << 20)

static void vw_flush(vwriter *w) {
    if (w->st == AX_OK && w->nbuf) w->st = ax_write_all(w->fd, w->buf, w->nbuf, w->partial);
    w->nbuf = 0;
}

void ax_ms_vw_put(vwriter *w, const void *data, size_t n) {
    if (w->st != AX_OK) return;
    if (w->stop && *w->stop) {
        w->st = ax_errorf(AX_ERR_INTERRUPTED,
                          "memscan index: interrupted while saving; nothing was written");
        return;
    }
    const uint8_t *p = data;
    uint64_t ps = 1ULL << w->l->page_bits;
    while (n) {
        size_t take = n;
        if (w->off >= w->l->off_dir && w->off < w->l->off_sums) {
            uint64_t room = ps - w->pfill, left = w->l->off_sums - w->off;
            if (take > room) take = (size_t)room;
            if (take > left) take = (size_t)left;
            memcpy(w->page + w->pfill, p, take);
            w->pfill += take;
            if (w->pfill == ps || w->off + take == w->l->off_sums) {
                w->sums[w->np++] = XXH3_64bits(w->page, w->pfill);
                w->pfill = 0;
            }
        } else if (w->off < w->l->off_dir && w->off + take > w->l->off_dir) {
            take = (size_t)(w->l->off_dir - w->off);
        }
        size_t done = 0;
        while (done < take) {
            size_t c = take - done < WBUF - w->nbuf ? take - done : WBUF - w->nbuf;
            memcpy(w->buf + w->nbuf, p + done, c);
            w->nbuf += c;
            done += c;
            if (w->nbuf == WBUF) vw_flush(w);
        }
        w->off += take;
        p += take;
        n -= take;
    }
}

static void vw_pad(vwriter *w, uint64_t to) {
    static const uint8_t zero[AX_MS_V3_ALIGN];
    while (w->st == AX_OK && w->off < to)
        ax_ms_vw_put(w, zero, to - w->off < sizeof zero ? (size_t)(to - w->off) : sizeof zero);
}

static ax_status write_sidecar(const ax_memscan_info *in, const char *path) {
    char *text = ax_memscan_info_json(in);
    if (!text) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    ax_status st = ax_write_file(path, text, strlen(text));
    free(text);
    return st;
}

ax_status ax_ms_vw_status(const vwriter *w) {
    return w->st;
}

/* the in-memory source: collected entries and CSR lists */
typedef struct {
    const ax_ms_collect *c;
    const ax_ms_occ *o;
} mem_src;

static void write_sections(vwriter *w, const ax_ms_collect *c, const ax_ms_occ *o) {
    const ax_ms_v3_layout *l = w->l;
    uint64_t D = c->n, P = 1ULL << c->part_bits;
    vw_pad(w, l->off_dir);
    ax_ms_vw_put(w, c->dir, 8 * (size_t)(P + 1));
    enum { CH = 8192 };
    uint8_t stage[8 * CH];
    for (int col = 0; col < 3; col++) {
        vw_pad(w, col == 0 ? l->off_tags : col == 1 ? l->off_exts : l->off_vals);
        for (uint64_t i = 0; i < D && w->st == AX_OK; i += CH) {
            size_t k = D - i < CH ? (size_t)(D - i) : CH;
            for (size_t j = 0; j < k; j++) {
                const ax_ms_ent *e = &c->ent[i + j];
                if (col == 0)
                    ax_ms_put32(stage + 4 * j, (uint32_t)(e->key >> 6));
                else if (col == 1)
                    stage[j] = (uint8_t)(e->key & 63);
                else
                    ax_ms_put64(stage + 8 * j, e->val);
            }
            ax_ms_vw_put(w, stage, k * (col == 0 ? 4 : col == 1 ? 1 : 8));
        }
    }
    vw_pad(w, l->off_firsts);
    for (uint64_t g = 0; g < o->n_groups && w->st == AX_OK; g += CH) {
        size_t k = o->n_groups - g < CH ? (size_t)(o->n_groups - g) : CH;
        for (size_t j = 0; j < k; j++) ax_ms_put64(stage + 8 * j, o->pos[o->off[g + j]]);
        ax_ms_vw_put(w, stage, 8 * k);
    }
    vw_pad(w, l->off_lstart);
    if (o->off) {
        ax_ms_vw_put(w, o->off, 8 * (size_t)(o->n_groups + 1));
    } else {
        uint64_t zero = 0;
        ax_ms_vw_put(w, &zero, 8);
    }
    vw_pad(w, l->off_pos);
    if (o->n_pos) ax_ms_vw_put(w, o->pos, 8 * (size_t)o->n_pos);
    vw_pad(w, l->off_sums);
}

static ax_status mem_sections(void *ctx, ax_ms_vwriter *w) {
    mem_src *m = ctx;
    write_sections(w, m->c, m->o);
    return w->st;
}

ax_status ax_ms_v3_write(const ax_memscan_info *in, const ax_ms_collect *c, const ax_ms_occ *o,
                         const char *path, volatile int *stop) {
    if (c->n != in->n_distinct || o->n_groups != in->n_dup || o->n_pos != in->n_dup_pos)
        return ax_errorf(AX_ERR_INTERNAL,
                         "memscan index: %llu entries and %llu lists of %llu positions do not "
                         "match the header's %llu, %llu, %llu",
                         (unsigned long long)c->n, (unsigned long long)o->n_groups,
                         (unsigned long long)o->n_pos, (unsigned long long)in->n_distinct,
                         (unsigned long long)in->n_dup, (unsigned long long)in->n_dup_pos);
    if (c->part_bits != ax_ms_v3_part_bits(in->n_distinct))
        return ax_errorf(AX_ERR_INTERNAL, "memscan index: partitions planned differently");
    mem_src m = {c, o};
    return ax_ms_v3_write_with(in, mem_sections, &m, path, stop);
}

void ax_ms_vw_pad(ax_ms_vwriter *w, uint64_t to) {
    vw_pad(w, to);
}

const ax_ms_v3_layout *ax_ms_vw_layout(const ax_ms_vwriter *w) {
    return w->l;
}

ax_status ax_ms_v3_write_with(const ax_memscan_info *in, ax_ms_sections_fn sections, void *ctx,
                              const char *path, volatile int *stop) {
    size_t pl = strlen(path) + 24;
    char *partial = malloc(pl), *jpath = malloc(pl), *jpartial = malloc(pl);
    uint8_t *hbuf = NULL;
    size_t hlen = 0;
    ax_ms_v3_layout l;
    vwriter w;
    memset(&w, 0, sizeof w);
    w.fd = -1;
    w.stop = stop;
    w.l = &l;
    w.partial = partial;
    if (!partial || !jpath || !jpartial || ax_ms_header_encode(in, AX_MS_VERSION, &hbuf, &hlen)) {
        w.st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    snprintf(partial, pl, "%s.partial", path);
    snprintf(jpath, pl, "%s.json", path);
    snprintf(jpartial, pl, "%s.json.partial", path);
    ax_ms_v3_layout_plan(&l, hlen, in->n_distinct, in->n_dup, in->n_dup_pos);
    uint64_t npages = (l.off_sums - l.off_dir + (1ULL << l.page_bits) - 1) >> l.page_bits;
    w.buf = malloc(WBUF);
    w.page = malloc((size_t)1 << l.page_bits);
    w.sums = malloc(8 * (size_t)(npages ? npages : 1));
    if (!w.buf || !w.page || !w.sums) {
        w.st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        goto out;
    }
    w.fd = open(partial, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (w.fd < 0) {
        w.st = ax_errorf(AX_ERR_IO,
                         "%s: cannot create: %s; check the directory exists and is "
                         "writable",
                         partial, strerror(errno));
        goto out;
    }
    uint8_t ext[AX_MS_V3_EXT];
    ax_ms_v3_ext_encode(&l, ext); /* rewritten with the page checksums' checksum below */
    ax_ms_vw_put(&w, hbuf, hlen);
    ax_ms_vw_put(&w, ext, sizeof ext);
    if (w.st == AX_OK) {
        ax_status ss = sections(ctx, &w);
        if (w.st == AX_OK) w.st = ss;
    }
    if (w.st == AX_OK && w.np != npages)
        w.st = ax_errorf(AX_ERR_INTERNAL, "memscan index: %llu pages hashed, %llu planned",
                         (unsigned long long)w.np, (unsigned long long)npages);
    ax_ms_vw_put(&w, w.sums, 8 * (size_t)npages);
    vw_flush(&w);
    if (w.st == AX_OK && w.off != l.file_size)
        w.st = ax_errorf(AX_ERR_INTERNAL, "memscan index: wrote %llu bytes, planned %llu",
                         (unsigned long long)w.off, (unsigned long long)l.file_size);
    if (w.st == AX_OK) {
        l.sums_xxh = XXH3_64bits(w.sums, 8 * (size_t)npages);
        ax_ms_v3_ext_encode(&l, ext);
        if (pwrite(w.fd, ext, sizeof ext, (off_t)hlen) != (ssize_t)sizeof ext)
            w.st = ax_errorf(AX_ERR_IO, "%s: write failed: %s", partial, strerror(errno));
    }
    if (w.st == AX_OK && fsync(w.fd) != 0)
        w.st = ax_errorf(AX_ERR_IO, "%s: fsync failed: %s", partial, strerror(errno));
    close(w.fd);
    w.fd = -1;
    if (w.st == AX_OK) w.st = write_sidecar(in, jpartial);
    if (w.st == AX_OK && stop && *stop)
        w.st = ax_errorf(AX_ERR_INTERRUPTED,
                         "memscan index: interrupted while saving; nothing was written");
    if (w.st == AX_OK) w.st = ax_rename_durable(partial, path);
    if (w.st == AX_OK) w.st = ax_rename_durable(jpartial, jpath);
out:
    if (w.fd >= 0) close(w.fd);
    if (w.st != AX_OK && partial && jpartial) {
        unlink(partial);
        unlink(jpartial);
    }
    free(hbuf);
    free(w.buf);
    free(w.page);
    free(w.sums);
    free(partial);
    free(jpath);
    free(jpartial);
    return w.st;
}
