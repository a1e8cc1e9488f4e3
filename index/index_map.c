/* Version-3 index files read in place (index/index_map.h): open, page checksums verified
 * lazily or all at once, lookups and occurrence lists straight from the mapping. */
#include "index/index_map.h"
#include "index/index_format.h"
#include "index/hash.h"
#include "index/table.h"

#include "lib/core/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <xxhash.h>

/* what lookups change: page marks and the first damage met */
typedef struct {
    uint8_t *ok;  /* per page: 0 unchecked, 1 good, 2 bad */
    int bad;      /* 0, 1 (message being written), 2 (message ready) */
    int quiet;    /* while opening: the error is returned, not also logged */
    uint64_t met; /* lookups refused for damage so far (each time, not only the first) */
    char err[4600];
} map_state;

struct ax_ms_map {
    ax_memscan_info in;
    ax_ms_v3_layout l;
    char path[4200];
    const uint8_t *base;
    size_t size;
    uint64_t npages;
    const uint64_t *dir, *vals, *firsts, *lstart, *pos, *sums;
    const uint32_t *tags;
    const uint8_t *exts;
    map_state *st;
};

static uint64_t align(uint64_t a) {
    return (a + AX_MS_V3_ALIGN - 1) / AX_MS_V3_ALIGN * AX_MS_V3_ALIGN;
}

uint32_t ax_ms_v3_part_bits(uint64_t distinct) {
    uint32_t b = 0;
    while (b < AX_MS_V3_PART_BITS_MAX && (distinct >> b) > AX_MS_V3_PART_ENTRIES) b++;
    return b;
}

void ax_ms_v3_layout_plan(ax_ms_v3_layout *l, uint64_t hdr_len, uint64_t distinct,
                          uint64_t n_groups, uint64_t n_pos) {
    memset(l, 0, sizeof *l);
    l->part_bits = ax_ms_v3_part_bits(distinct);
    l->page_bits = AX_MS_V3_PAGE_BITS;
    l->n_groups = n_groups;
    l->n_pos = n_pos;
    uint64_t a = align(hdr_len + AX_MS_V3_EXT);
    l->off_dir = a;
    a = align(a + 8 * ((1ULL << l->part_bits) + 1));
    l->off_tags = a;
    a = align(a + 4 * distinct);
    l->off_exts = a;
    a = align(a + distinct);
    l->off_vals = a;
    a = align(a + 8 * distinct);
    l->off_firsts = a;
    a = align(a + 8 * n_groups);
    l->off_lstart = a;
    a = align(a + 8 * (n_groups + 1));
    l->off_pos = a;
    a = align(a + 8 * n_pos);
    l->off_sums = a;
    uint64_t ps = 1ULL << l->page_bits, npages = (a - l->off_dir + ps - 1) / ps;
    l->file_size = a + 8 * npages;
}

void ax_ms_v3_ext_encode(const ax_ms_v3_layout *l, uint8_t out[AX_MS_V3_EXT]) {
    memset(out, 0, AX_MS_V3_EXT);
    ax_ms_put32(out, l->part_bits);
    ax_ms_put32(out + 4, l->page_bits);
    const uint64_t f[] = {l->n_groups, l->n_pos,    l->off_dir,    l->off_tags,
                          l->off_exts, l->off_vals, l->off_firsts, l->off_lstart,
                          l->off_pos,  l->off_sums, l->file_size,  l->sums_xxh};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) ax_ms_put64(out + 8 + 8 * i, f[i]);
    ax_ms_put64(out + AX_MS_V3_EXT - 8, XXH3_64bits(out, AX_MS_V3_EXT - 8));
}

static void ext_decode(const uint8_t *p, ax_ms_v3_layout *l) {
    l->part_bits = ax_ms_get32(p);
    l->page_bits = ax_ms_get32(p + 4);
    uint64_t *f[] = {&l->n_groups, &l->n_pos,    &l->off_dir,    &l->off_tags,
                     &l->off_exts, &l->off_vals, &l->off_firsts, &l->off_lstart,
                     &l->off_pos,  &l->off_sums, &l->file_size,  &l->sums_xxh};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++) *f[i] = ax_ms_get64(p + 8 + 8 * i);
}

static const char *section_of(const ax_ms_map *m, uint64_t off) {
    const ax_ms_v3_layout *l = &m->l;
    return off < l->off_tags     ? "partition directory"
           : off < l->off_firsts ? "table"
                                 : "occurrence lists";
}

/* counts a lookup that met damage, so a caller can tell which of its answers are incomplete */
static void met_damage(const ax_ms_map *m) {
    __atomic_add_fetch(&m->st->met, 1, __ATOMIC_RELAXED);
}

/* records the first damage met (later ones are left out: one is enough to say rebuild) */
static void mark_bad(const ax_ms_map *m, const char *fmt_what, uint64_t a, uint64_t b) {
    map_state *s = m->st;
    int expect = 0;
    if (!__atomic_compare_exchange_n(&s->bad, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return;
    char what[256];
    snprintf(what, sizeof what, fmt_what, (unsigned long long)a, (unsigned long long)b);
    snprintf(s->err, sizeof s->err, "%s: %s: the index is corrupt; " AX_MS_REBUILD, m->path, what);
    __atomic_store_n(&s->bad, 2, __ATOMIC_RELEASE);
    if (!s->quiet) AX_WARN("memscan: %s (the lookups that need it fail)", s->err);
}

static int check_page(const ax_ms_map *m, uint64_t p) {
    uint8_t v = __atomic_load_n(&m->st->ok[p], __ATOMIC_ACQUIRE);
    if (v == 2) met_damage(m);
    if (v) return v == 1;
    uint64_t ps = 1ULL << m->l.page_bits, a = m->l.off_dir + p * ps;
    uint64_t b = a + ps < m->l.off_sums ? a + ps : m->l.off_sums;
    int good = XXH3_64bits(m->base + a, (size_t)(b - a)) == m->sums[p];
    if (!good) {
        char what[160];
        const char *s0 = section_of(m, a), *s1 = section_of(m, b - 1);
        if (s0 == s1)
            snprintf(what, sizeof what,
                     "page %%llu (bytes from %%llu, in the %s) fails its checksum", s0);
        else
            snprintf(what, sizeof what,
                     "page %%llu (bytes from %%llu, in the %s and the %s) fails its checksum", s0,
                     s1);
        mark_bad(m, what, p, a);
        met_damage(m);
    }
    __atomic_store_n(&m->st->ok[p], good ? 1 : 2, __ATOMIC_RELEASE);
    return good;
}

/* bytes [off, off + len) of the file are as written */
static int ensure(const ax_ms_map *m, uint64_t off, uint64_t len) {
    if (!len) return 1;
    uint64_t p0 = (off - m->l.off_dir) >> m->l.page_bits;
    uint64_t p1 = (off + len - 1 - m->l.off_dir) >> m->l.page_bits;
    for (uint64_t p = p0; p <= p1; p++)
        if (!check_page(m, p)) return 0;
    return 1;
}

#define AT(field, i, size) (m->l.field + (uint64_t)(i) * (size))

/* where `tag` should lie in [s, e): tags are uniform within a partition, so its offset in the
 * partition's tag range, scaled to the entry count (then a gallop corrects it) */
static uint64_t guess_at(const ax_ms_map *m, uint64_t p, uint32_t tag, uint64_t s, uint64_t e) {
    uint32_t shift = 32 - m->l.part_bits;
    uint64_t base = shift == 32 ? 0 : p << shift;
    double frac = (double)((uint64_t)tag - base) / (double)(1ULL << shift);
    uint64_t g = s + (uint64_t)(frac * (double)(e - s));
    return g < e ? g : e - 1;
}

/* the first entry of [s, e) whose tag is >= tag: gallop from the guess, then bisect */
static uint64_t lower_bound(const ax_ms_map *m, uint32_t tag, uint64_t s, uint64_t e, uint64_t g) {
    const uint32_t *t = m->tags;
    uint64_t lo, hi, step = 1;
    if (t[g] < tag) { /* the answer is in (g, e] */
        uint64_t a = g + 1;
        while (a + step < e && t[a + step - 1] < tag) a += step, step <<= 1;
        lo = a;
        hi = a + step < e ? a + step : e;
    } else { /* in [s, g] */
        uint64_t b = g;
        while (b >= s + step && t[b - step] >= tag) b -= step, step <<= 1;
        hi = b;
        lo = b >= s + step ? b - step + 1 : s;
    }
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (t[mid] < tag)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

int ax_ms_map_find(const ax_ms_map *m, const ax_axd_t *ds, uint32_t n, uint64_t h, const int32_t *w,
                   uint32_t *count, uint64_t *first) {
    ax_ms_key k = ax_ms_key_of(h);
    uint64_t p = ax_ms_v3_part(k.tag, m->l.part_bits), s = m->dir[p], e = m->dir[p + 1];
    if (s == e || !ensure(m, AT(off_tags, s, 4), 4 * (e - s))) return 0;
    uint64_t lo = lower_bound(m, k.tag, s, e, guess_at(m, p, k.tag, s, e));
    int checked = 0;
    for (uint64_t i = lo; i < e && m->tags[i] == k.tag; i++) {
        if (!checked) {
            if (!ensure(m, AT(off_exts, s, 1), e - s) ||
                !ensure(m, AT(off_vals, s, 8), 8 * (e - s)))
                return 0;
            checked = 1;
        }
        if (m->exts[i] != k.ext) continue;
        uint64_t v = m->vals[i], pos = ax_ms_val_pos(v);
        if (!ax_ms_val_count(v) || pos > m->in.ds_tokens || m->in.ds_tokens - pos < n) continue;
        if (ax_ms_window_eq_q(ds, pos, w, (int)n)) {
            *count = ax_ms_val_count(v);
            *first = pos;
            return 1;
        }
    }
    return 0;
}

void ax_ms_map_prefetch(const ax_ms_map *m, uint64_t h) {
    uint32_t tag = (uint32_t)(h >> 32);
    uint64_t p = ax_ms_v3_part(tag, m->l.part_bits), s = m->dir[p], e = m->dir[p + 1];
    if (s == e) return;
    uint64_t g = guess_at(m, p, tag, s, e);
    __builtin_prefetch(&m->tags[g]);
    __builtin_prefetch(&m->vals[g]);
}

/* list g: [a, b) of pos, ascending, starting at first, every window inside the dataset */
static int list_ok(const ax_ms_map *m, uint64_t g, uint32_t n, uint64_t first, uint64_t *a_out,
                   uint64_t *b_out) {
    if (!ensure(m, AT(off_lstart, g, 8), 16)) return 0;
    uint64_t a = m->lstart[g], b = m->lstart[g + 1];
    if (a > b || b > m->l.n_pos || b - a < 2 || !ensure(m, AT(off_pos, a, 8), 8 * (b - a)))
        return 0;
    int good = m->pos[a] == first;
    for (uint64_t i = a + 1; i < b && good; i++) good = m->pos[i] > m->pos[i - 1];
    good = good && m->pos[b - 1] <= m->in.ds_tokens && m->in.ds_tokens - m->pos[b - 1] >= n;
    if (!good) {
        mark_bad(m, "occurrence list %llu (of the window first at %llu) is impossible", g, first);
        met_damage(m);
        return 0;
    }
    *a_out = a;
    *b_out = b;
    return 1;
}

uint64_t ax_ms_map_occ(const ax_ms_map *m, const ax_axd_t *ds, uint32_t n, uint64_t first,
                       const uint64_t **list) {
    (void)ds;
    *list = NULL;
    uint64_t lo = 0, hi = m->l.n_groups;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (!ensure(m, AT(off_firsts, mid, 8), 8)) return 0;
        if (m->firsts[mid] < first)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == m->l.n_groups || !ensure(m, AT(off_firsts, lo, 8), 8) || m->firsts[lo] != first)
        return 0;
    uint64_t a, b;
    if (!list_ok(m, lo, n, first, &a, &b)) return 0;
    *list = m->pos + a;
    return b - a;
}

uint64_t ax_ms_map_groups(const ax_ms_map *m) {
    return m->l.n_groups;
}

uint64_t ax_ms_map_group(const ax_ms_map *m, uint32_t n, uint64_t g, const uint64_t **list) {
    *list = NULL;
    uint64_t a, b;
    if (g >= m->l.n_groups || !ensure(m, AT(off_firsts, g, 8), 8) ||
        !list_ok(m, g, n, m->firsts[g], &a, &b))
        return 0;
    *list = m->pos + a;
    return b - a;
}

uint64_t ax_ms_map_damage_met(const ax_ms_map *m) {
    return __atomic_load_n(&m->st->met, __ATOMIC_RELAXED);
}

ax_status ax_ms_map_status(const ax_ms_map *m) {
    if (__atomic_load_n(&m->st->bad, __ATOMIC_ACQUIRE) != 2) return AX_OK;
    return ax_errorf(AX_ERR_CORRUPT, "%s", m->st->err);
}

size_t ax_ms_map_table_bytes(const ax_ms_map *m) {
    return (size_t)(m->l.off_firsts - m->l.off_dir);
}
size_t ax_ms_map_occ_bytes(const ax_ms_map *m) {
    return (size_t)(m->l.off_sums - m->l.off_firsts);
}

void ax_ms_map_free(ax_ms_map *m) {
    if (!m) return;
    if (m->base) munmap((void *)m->base, m->size);
    if (m->st) free(m->st->ok);
    free(m->st);
    free(m);
}

static ax_status corrupt(const char *path, const char *what) {
    return ax_errorf(AX_ERR_CORRUPT, "%s: %s: the index is corrupt; " AX_MS_REBUILD, path, what);
}

/* everything a full verification adds to the page checksums: the structure the writer
 * guarantees, and the header's statistics */
static ax_status verify_structure(const ax_ms_map *m) {
    const ax_memscan_info *in = &m->in;
    const char *path = m->path;
    uint64_t P = 1ULL << m->l.part_bits, hist[AX_MEMSCAN_HIST] = {0}, sat = 0, windows = 0;
    for (uint64_t p = 0; p < P; p++)
        for (uint64_t i = m->dir[p]; i < m->dir[p + 1]; i++) {
            uint64_t v = m->vals[i], pos = ax_ms_val_pos(v);
            uint32_t c = ax_ms_val_count(v);
            if (ax_ms_v3_part(m->tags[i], m->l.part_bits) != p ||
                (i > m->dir[p] && m->tags[i] < m->tags[i - 1]) || m->exts[i] > 63 || c == 0 ||
                pos > in->ds_tokens || in->ds_tokens - pos < in->n)
                return corrupt(path, "the table holds an impossible or misplaced entry");
            hist[ax_memscan_hist_bucket(c)]++;
            sat += c == AX_MS_COUNT_MAX;
            windows += c;
        }
    if (memcmp(hist, in->hist, sizeof hist) != 0 || sat != in->n_saturated ||
        (sat == 0 && windows != in->n_windows))
        return corrupt(path, "entries disagree with the header's histogram");
    uint64_t G = m->l.n_groups;
    if (m->lstart[0] != 0 || m->lstart[G] != m->l.n_pos)
        return corrupt(path, "the occurrence lists disagree with the header");
    for (uint64_t g = 0; g < G; g++) {
        uint64_t a, b;
        if ((g && m->firsts[g] <= m->firsts[g - 1]) ||
            !list_ok(m, g, in->n, m->firsts[g], &a, &b) || a != m->lstart[g])
            return corrupt(path, "the occurrence lists are out of order or impossible");
    }
    return AX_OK;
}

ax_status ax_ms_map_open(FILE *f, const char *path, const ax_memscan_info *in, uint64_t hdr_len,
                         int verify_all, ax_ms_map **out) {
    *out = NULL;
    uint8_t ext[AX_MS_V3_EXT];
    if (fread(ext, 1, sizeof ext, f) != sizeof ext)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: truncated memscan index (ends inside the header); " AX_MS_REBUILD,
                         path);
    if (XXH3_64bits(ext, AX_MS_V3_EXT - 8) != ax_ms_get64(ext + AX_MS_V3_EXT - 8))
        return corrupt(path, "the section table fails its checksum");
    ax_ms_v3_layout l, want;
    ext_decode(ext, &l);
    ax_ms_v3_layout_plan(&want, hdr_len, in->n_distinct, in->n_dup, in->n_dup_pos);
    want.sums_xxh = l.sums_xxh;
    if (memcmp(&l, &want, sizeof l) != 0)
        return corrupt(path, "the section table disagrees with the header's counts");
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0)
        return ax_errorf(AX_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if ((uint64_t)sb.st_size != l.file_size) {
        char what[160];
        snprintf(what, sizeof what, "%s (%llu bytes, the header says %llu)",
                 (uint64_t)sb.st_size < l.file_size ? "truncated" : "data after the end",
                 (unsigned long long)sb.st_size, (unsigned long long)l.file_size);
        return corrupt(path, what);
    }
    ax_ms_map *m = calloc(1, sizeof *m);
    if (!m || !(m->st = calloc(1, sizeof *m->st))) {
        free(m);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    m->in = *in;
    m->l = l;
    m->st->quiet = 1;
    snprintf(m->path, sizeof m->path, "%s", path);
    m->npages = (l.off_sums - l.off_dir + (1ULL << l.page_bits) - 1) >> l.page_bits;
    m->size = (size_t)l.file_size;
    ax_status st = AX_OK;
    void *base = mmap(NULL, m->size, PROT_READ, MAP_SHARED, fileno(f), 0);
    if (base == MAP_FAILED) {
        st = ax_errorf(AX_ERR_IO, "%s: cannot map the index: %s", path, strerror(errno));
        goto fail;
    }
    m->base = base;
    /* lookups touch a few pages each; a full verification reads them all in order */
    madvise(base, m->size, verify_all ? MADV_SEQUENTIAL : MADV_RANDOM);
    m->st->ok = calloc((size_t)m->npages ? (size_t)m->npages : 1, 1);
    if (!m->st->ok) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    m->dir = (const uint64_t *)(m->base + l.off_dir);
    m->tags = (const uint32_t *)(m->base + l.off_tags);
    m->exts = m->base + l.off_exts;
    m->vals = (const uint64_t *)(m->base + l.off_vals);
    m->firsts = (const uint64_t *)(m->base + l.off_firsts);
    m->lstart = (const uint64_t *)(m->base + l.off_lstart);
    m->pos = (const uint64_t *)(m->base + l.off_pos);
    m->sums = (const uint64_t *)(m->base + l.off_sums);
    for (uint64_t i = hdr_len + AX_MS_V3_EXT; i < l.off_dir; i++) /* padding: no checksum */
        if (m->base[i]) {
            st = corrupt(path, "the padding after the header is not zero");
            goto fail;
        }
    if (XXH3_64bits(m->sums, 8 * (size_t)m->npages) != l.sums_xxh) {
        st = corrupt(path, "the page checksums fail their checksum");
        goto fail;
    }
    /* the directory bounds every partition, so it is checked now, whole */
    uint64_t P = 1ULL << l.part_bits;
    int dir_ok = 1;
    for (uint64_t p = l.off_dir >> 0, e = l.off_dir + 8 * (P + 1); p < e && dir_ok;) {
        uint64_t pg = (p - l.off_dir) >> l.page_bits;
        dir_ok = check_page(m, pg);
        p = l.off_dir + ((pg + 1) << l.page_bits);
    }
    if (!dir_ok) {
        st = ax_ms_map_status(m);
        goto fail;
    }
    for (uint64_t p = 0; p < P && dir_ok; p++) dir_ok = m->dir[p] <= m->dir[p + 1];
    if (!dir_ok || m->dir[0] != 0 || m->dir[P] != in->n_distinct) {
        st = corrupt(path, "the partition directory is impossible");
        goto fail;
    }
    if (verify_all) {
        for (uint64_t p = 0; p < m->npages; p++)
            if (!check_page(m, p)) {
                st = ax_ms_map_status(m);
                goto fail;
            }
        if ((st = verify_structure(m)) != AX_OK) goto fail;
        madvise(base, m->size, MADV_RANDOM);
    }
    m->st->quiet = 0;
    *out = m;
    return AX_OK;
fail:
    ax_ms_map_free(m);
    return st;
}
