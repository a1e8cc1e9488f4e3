/* Megatron / GPT-NeoX indexed dataset -> .axd (format in data/megatron.h). The index is checked
 * whole before any token is read, so a damaged pair fails in milliseconds with the fault named;
 * then documents stream from the mapped .bin to the .axd writer in order. */
#include "data/megatron.h"
#include "data/axd.h"
#include "lib/core/bytes.h"
#include "lib/core/progress.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "lib/core/status.h"
#include "lib/core/stop.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDX_MAGIC "MMIDIDX\0\0"
#define IDX_HEADER 34
#define REMAKE "re-create the pair with the tool that wrote it, or download it again"
#define MAX_ID ((int64_t)INT32_MAX - 1) /* ids must fit the int32 token arrays */

uint32_t ax_megatron_idx_size(const ax_megatron_idx *x, uint64_t seq) {
    return ax_get32(x->sizes + 4 * seq); /* an int32, checked >= 0 by the parser */
}
uint64_t ax_megatron_idx_ptr(const ax_megatron_idx *x, uint64_t seq) {
    return ax_get64(x->ptrs + 8 * seq);
}
uint64_t ax_megatron_idx_doc(const ax_megatron_idx *x, uint64_t d) {
    return ax_get64(x->docs + 8 * d);
}

/* bytes per element of a dtype code; 0 for unknown codes, -1 for the float ones */
static int dtype_bytes(uint8_t code) {
    static const int b[] = {0, 1, 1, 2, 4, 8, -1, -1, 2};
    return code < sizeof b / sizeof *b ? b[code] : 0;
}

ax_status ax_megatron_idx_parse(const uint8_t *p, size_t n, uint64_t bin_size, const char *path,
                                ax_megatron_idx *out) {
    memset(out, 0, sizeof *out);
    if (n < 9 || memcmp(p, IDX_MAGIC, 9) != 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: not a Megatron index (bad magic; expected \"MMIDIDX\"); pass the "
                         "prefix of a PATH.bin + PATH.idx pair",
                         path);
    if (n < IDX_HEADER)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: truncated index (%zu bytes, the header is %d); " REMAKE, path, n,
                         IDX_HEADER);
    uint64_t version = ax_get64(p + 9);
    if (version != 1)
        return ax_errorf(AX_ERR_MISMATCH, "%s: index version %" PRIu64 ", only version 1 is known",
                         path, version);
    uint8_t code = p[17];
    int eb = dtype_bytes(code);
    if (eb == 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: unknown dtype code %u (known: 1 u8, 2 i8, 3 i16, 4 i32, 5 i64, "
                         "6, 7 floats, 8 u16); " REMAKE,
                         path, code);
    if (eb < 0)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: dtype code %u is floating point: the dataset does not hold token "
                         "ids, so it cannot become a .axd",
                         path, code);
    uint64_t n_seq = ax_get64(p + 18), n_di = ax_get64(p + 26);
    uint64_t room = (uint64_t)(n - IDX_HEADER);
    /* expected length 34 + 12 n_seq + 8 n_di, computed without overflow */
    if (n_di == 0 || n_seq > room / 12 || n_di > (room - 12 * n_seq) / 8 ||
        room != 12 * n_seq + 8 * n_di)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %zu bytes, but the header (%" PRIu64 " sequences, %" PRIu64
                         " document-index entries) implies %s; the index is %s; " REMAKE,
                         path, n, n_seq, n_di,
                         n_di == 0 ? "at least one entry" : "a different length",
                         n_di == 0 ? "corrupt" : "truncated, extended or corrupt");
    out->dtype = code;
    out->elem = (uint32_t)eb;
    out->n_seq = n_seq;
    out->n_docs = n_di - 1;
    out->sizes = p + IDX_HEADER;
    out->ptrs = out->sizes + 4 * n_seq;
    out->docs = out->ptrs + 8 * n_seq;
    uint64_t covered = 0;
    for (uint64_t i = 0; i < n_seq; i++) {
        int32_t sz;
        memcpy(&sz, out->sizes + 4 * i, 4);
        uint64_t ptr = ax_megatron_idx_ptr(out, i);
        if (sz < 0)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: sequence %" PRIu64 " has negative size %d; " REMAKE, path, i,
                             (int)sz);
        uint64_t bytes = (uint64_t)sz * out->elem;
        if (ptr > bin_size || bytes > bin_size - ptr || ptr % out->elem)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: sequence %" PRIu64 " (%d tokens at byte %" PRIu64
                             ") is %s of the %" PRIu64 "-byte .bin: the .idx does not match its "
                             ".bin; " REMAKE,
                             path, i, (int)sz, ptr,
                             ptr % out->elem ? "not aligned to the dtype" : "outside", bin_size);
        covered += bytes;
        out->n_tokens += (uint64_t)sz;
    }
    if (covered != bin_size)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the sequences hold %" PRIu64
                         " bytes of tokens but the .bin has %" PRIu64
                         ": the .idx does not match its .bin (truncated or from another "
                         "dataset); " REMAKE,
                         path, covered, bin_size);
    uint64_t prev = 0;
    for (uint64_t d = 0; d <= out->n_docs; d++) {
        uint64_t v = ax_megatron_idx_doc(out, d);
        if ((d == 0 && v != 0) || v < prev || v > n_seq)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: document index entry %" PRIu64 " is %" PRIu64
                             " (entries must start at 0, never decrease and stay <= %" PRIu64
                             " sequences); " REMAKE,
                             path, d, v, n_seq);
        prev = v;
    }
    if (prev != n_seq)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: the document index ends at sequence %" PRIu64 " of %" PRIu64
                         ": sequences after it belong to no document; " REMAKE,
                         path, prev, n_seq);
    return AX_OK;
}

/* ---------------------------------------------------------------- import */

typedef struct {
    char idx_path[4096], bin_path[4096];
    uint8_t *idx_map, *bin_map;
    size_t idx_size, bin_size;
    ax_megatron_idx x;
    int32_t *buf; /* one document's tokens */
    size_t cap;
} importer;

static void importer_free(importer *m) {
    if (m->idx_map) munmap(m->idx_map, m->idx_size);
    if (m->bin_map) munmap(m->bin_map, m->bin_size);
    free(m->buf);
}

/* maps a whole file read-only (NULL for an empty one) */
static ax_status map_file(const char *path, const char *hint, uint8_t **map, size_t *size) {
    int fd;
    struct stat sb;
    AX_CHECK(ax_open_regular(path, hint, &fd));
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return ax_errorf(AX_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    }
    *size = (size_t)sb.st_size;
    *map = NULL;
    if (*size) {
        void *m = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m == MAP_FAILED) {
            close(fd);
            return ax_errorf(AX_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        }
        *map = m;
        (void)madvise(m, *size, MADV_SEQUENTIAL);
    }
    close(fd);
    return AX_OK;
}

static int64_t tok_at(const uint8_t *p, uint8_t code) {
    switch (code) {
    case 1:
        return *p;
    case 2:
        return (int8_t)*p;
    case 3:
        return (int16_t)ax_get16(p);
    case 4:
        return (int32_t)ax_get32(p);
    case 5:
        return (int64_t)ax_get64(p);
    default:
        return ax_get16(p);
    }
}

/* Document d's tokens into m->buf (*n of them), each checked to be an id in [0, limit]. */
static ax_status doc_tokens(importer *m, uint64_t d, int64_t limit, const char *limit_why,
                            size_t *n) {
    const ax_megatron_idx *x = &m->x;
    uint64_t s0 = ax_megatron_idx_doc(x, d), s1 = ax_megatron_idx_doc(x, d + 1);
    size_t total = 0;
    for (uint64_t s = s0; s < s1; s++) total += ax_megatron_idx_size(x, s);
    if (total > m->cap) {
        size_t nc = total + (total >> 2) + 1024;
        int32_t *nb = realloc(m->buf, nc * sizeof *nb);
        if (!nb)
            return ax_errorf(AX_ERR_NOMEM,
                             "%s: out of memory for document %" PRIu64 " (%zu tokens)", m->bin_path,
                             d, total);
        m->buf = nb;
        m->cap = nc;
    }
    size_t k = 0;
    for (uint64_t s = s0; s < s1; s++) {
        uint32_t sz = ax_megatron_idx_size(x, s);
        if (!sz) continue; /* (an empty .bin is not mapped at all) */
        const uint8_t *p = m->bin_map + ax_megatron_idx_ptr(x, s);
        for (uint32_t i = 0; i < sz; i++, p += x->elem) {
            int64_t v = tok_at(p, x->dtype);
            if (v < 0 || v > limit)
                return ax_errorf(AX_ERR_CORRUPT,
                                 "%s: token %" PRId64 " in document %" PRIu64 " (sequence %" PRIu64
                                 ") is not an id in [0, %" PRId64 "]%s",
                                 m->bin_path, v, d, s, limit, limit_why);
            m->buf[k++] = (int32_t)v;
        }
    }
    *n = k;
    return AX_OK;
}

/* Pass over every token when the vocabulary size or end-of-text must be inferred: the largest
 * id, and whether every non-empty document ends with the same id. */
static ax_status scan(importer *m, int64_t *max_id, int64_t *common_last, uint64_t *nonempty) {
    *max_id = -1;
    *common_last = -1;
    *nonempty = 0;
    int agree = 1;
    volatile int *stop = ax_stop_flag();
    for (uint64_t d = 0; d < m->x.n_docs; d++) {
        size_t n;
        AX_CHECK(doc_tokens(m, d, MAX_ID, " (ids must be non-negative 31-bit integers)", &n));
        for (size_t i = 0; i < n; i++)
            if (m->buf[i] > *max_id) *max_id = m->buf[i];
        if (!n) continue;
        if (!(*nonempty)++)
            *common_last = m->buf[n - 1];
        else if (m->buf[n - 1] != *common_last)
            agree = 0;
        if (*stop) return ax_errorf(AX_ERR_INTERRUPTED, "interrupted; nothing was written");
    }
    if (!agree) *common_last = -1;
    return AX_OK;
}

ax_status ax_megatron_import(const char *prefix, const char *out_path,
                             const ax_megatron_options *opt, ax_megatron_result *res) {
    importer m = {0};
    ax_axd_writer_t *w = NULL;
    ax_status st = AX_OK;
    memset(res, 0, sizeof *res);
    ax_stop_catch();
    volatile int *stop = ax_stop_flag();
    if ((size_t)snprintf(m.idx_path, sizeof m.idx_path, "%s.idx", prefix) >= sizeof m.idx_path ||
        (size_t)snprintf(m.bin_path, sizeof m.bin_path, "%s.bin", prefix) >= sizeof m.bin_path)
        return ax_errorf(AX_ERR_ARG, "--prefix %s: path too long", prefix);
    const char *hint = "pass --prefix PATH for PATH.bin + PATH.idx";
    AX_CHECK_GOTO(map_file(m.bin_path, hint, &m.bin_map, &m.bin_size), out);
    AX_CHECK_GOTO(map_file(m.idx_path, hint, &m.idx_map, &m.idx_size), out);
    AX_CHECK_GOTO(ax_megatron_idx_parse(m.idx_map ? m.idx_map : (const uint8_t *)"", m.idx_size,
                                        m.bin_size, m.idx_path, &m.x),
                  out);
    uint32_t vocab = opt->vocab_size;
    int64_t eot = opt->eot;
    if (!vocab || eot < 0) {
        int64_t max_id, last;
        uint64_t nonempty;
        AX_CHECK_GOTO(scan(&m, &max_id, &last, &nonempty), out);
        if (eot < 0) {
            /* One shared final id over two or more documents is what --append-eod leaves
             * (GPT-NeoX, Megatron): that id is the end-of-text. Anything less is a guess. */
            if (last < 0 || nonempty < 2) {
                st = ax_errorf(AX_ERR_ARG,
                               "%s: cannot tell the end-of-text id (%s); pass --eot ID (0 for "
                               "the GPT-NeoX/Pythia tokenizer, 50256 for GPT-2's)",
                               m.idx_path,
                               nonempty < 2 ? "fewer than two non-empty documents"
                                            : "the documents do not all end with the same id");
                goto out;
            }
            eot = last;
            res->eot_inferred = 1;
        }
        if (!vocab) {
            int64_t v = max_id > eot ? max_id + 1 : eot + 1;
            vocab = v < AX_TOK_FIRST_MERGE ? AX_TOK_FIRST_MERGE : (uint32_t)v;
        }
    }
    if (eot >= (int64_t)vocab) {
        st = ax_errorf(AX_ERR_ARG, "--eot %" PRId64 " is not below the vocabulary size %u", eot,
                       vocab);
        goto out;
    }
    AX_CHECK_GOTO(ax_axd_writer_create(out_path, vocab, &w), out);
    AX_CHECK_GOTO(ax_axd_writer_set_eot(w, (uint32_t)eot), fail);
    char why[96];
    snprintf(why, sizeof why, " (the vocabulary size is %u%s)", vocab,
             opt->vocab_size ? ", from --vocab-size" : "");
    ax_progress pr;
    ax_progress_bytes_begin(&pr, "import-megatron", m.bin_size);
    size_t dropped = 0; /* bytes of .bin before this were handed back to the kernel */
    long page = sysconf(_SC_PAGESIZE);
    for (uint64_t d = 0; d < m.x.n_docs; d++) {
        size_t n;
        AX_CHECK_GOTO(doc_tokens(&m, d, (int64_t)vocab - 1, why, &n), fail);
        int add = !n || m.buf[n - 1] != (int32_t)eot; /* the writer appends it then */
        AX_CHECK_GOTO(ax_axd_writer_add_doc(w, m.buf, n), fail);
        res->eot_added += (uint64_t)add;
        res->docs++;
        res->tokens += n + (uint64_t)add;
        if (*stop) {
            st = ax_errorf(AX_ERR_INTERRUPTED, "interrupted; %s was not written", out_path);
            goto fail;
        }
        if ((d & 1023) == 1023 || d + 1 == m.x.n_docs) {
            uint64_t s = ax_megatron_idx_doc(&m.x, d + 1);
            size_t at = s < m.x.n_seq ? (size_t)ax_megatron_idx_ptr(&m.x, s) : m.bin_size;
            /* read pages are clean file cache: dropping them keeps the mapping's resident
             * size bounded on a 600 GB .bin (a later touch would just read them again) */
            size_t upto = at - at % (size_t)page;
            if (upto > dropped + (64u << 20)) {
                (void)madvise(m.bin_map + dropped, upto - dropped, MADV_DONTNEED);
                dropped = upto;
            }
            char extra[96];
            snprintf(extra, sizeof extra, "%" PRIu64 " docs, %" PRIu64 " tokens", res->docs,
                     res->tokens);
            ax_progress_bytes(&pr, at, extra);
        }
    }
    AX_CHECK_GOTO(ax_axd_writer_close(w), out); /* frees w either way */
    w = NULL;
    {
        char extra[96];
        snprintf(extra, sizeof extra, "%" PRIu64 " docs, %" PRIu64 " tokens", res->docs,
                 res->tokens);
        ax_progress_bytes_done(&pr, m.bin_size, extra);
    }
    res->vocab = vocab;
    res->eot = (uint32_t)eot;
    goto out;
fail:
    ax_axd_writer_abort(w);
out:
    importer_free(&m);
    return st;
}
