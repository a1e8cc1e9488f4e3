/* .axd datasets: streaming writer (tokens spill to a side file while offsets stay in memory,
 * 8 bytes per document; the final file is assembled and hashed on close) and an mmap reader
 * that validates everything before handing out a pointer. Layout in data/axd.h. */
#include "data/axd.h"
#include "data/tokenizer.h"
#include "data/verify_cache.h"
#include "lib/core/bytes.h"
#include "lib/core/fsutil.h"
#include "lib/core/grow.h"
#include "lib/core/log.h"
#include "lib/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define AXD_MAGIC "AXMEMAXD"
#define AXD_VERSION 3u /* 3 only when the end-of-text id is not AX_TOK_EOT; else 2 */
#define AXD_HEADER_V1 56
#define AXD_HEADER 64
#define REBUILD "re-run `axmem data encode` to rebuild it"

/* ---------------------------------------------------------------- reader */

struct ax_axd {
    char *path;
    uint8_t *map;
    size_t size;
    uint32_t vocab, width;
    uint64_t n_docs, n_tokens, checksum, tok_checksum;
    uint32_t eot;
    size_t header; /* 56 (version 1) or 64 */
    const uint64_t *offsets;
    const uint8_t *tokens;
};

void ax_axd_free(ax_axd_t *d) {
    if (!d) return;
    if (d->map) munmap(d->map, d->size);
    free(d->path);
    free(d);
}

/* largest token id in n tokens of width w at p */
static uint32_t max_token(const uint8_t *p, size_t n, uint32_t w) {
    uint32_t max = 0;
    if (w == 2) {
        for (size_t i = 0; i < n; i++) {
            uint16_t v = ax_get16(p + 2 * i);
            max = v > max ? v : max;
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            uint32_t v = ax_get32(p + 4 * i);
            max = v > max ? v : max;
        }
    }
    return max;
}

/* The payload pass: XXH3 of everything after the header, and every token id < vocab (the
 * model's embedding and loss index by it; the checksum only proves the file is what its writer
 * wrote, not that the writer was right). One pass in 1 MiB chunks, so the range check reads
 * what the hash just brought into cache. */
static ax_status verify_payload_bytes(const ax_axd_t *d) {
    XXH3_state_t *hs = XXH3_createState();
    if (!hs) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", d->path);
    XXH3_64bits_reset(hs);
    const uint8_t *m = d->map;
    size_t tok_at = (size_t)(d->tokens - m), end = d->size;
    XXH3_64bits_update(hs, m + d->header, tok_at - d->header);
    const size_t chunk = (size_t)1 << 20; /* a multiple of both token widths */
    uint32_t max = 0;
    for (size_t at = tok_at; at < end; at += chunk) {
        size_t n = end - at < chunk ? end - at : chunk;
        XXH3_64bits_update(hs, m + at, n);
        uint32_t cm = max_token(m + at, n / d->width, d->width);
        max = cm > max ? cm : max;
    }
    uint64_t h = XXH3_64bits_digest(hs);
    XXH3_freeState(hs);
    if (h != d->checksum)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: payload checksum mismatch (stored %016llx, computed %016llx): "
                         "the file is corrupt; " REBUILD,
                         d->path, (unsigned long long)d->checksum, (unsigned long long)h);
    if (d->n_tokens && max >= d->vocab)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: token id %u is outside the dataset's vocabulary [0, %u); " REBUILD,
                         d->path, max, d->vocab);
    return AX_OK;
}

/* header, sizes and offsets: everything but the payload pass (ax_axd_open makes that) */
static ax_status validate(ax_axd_t *d) {
    const char *path = d->path;
    const uint8_t *m = d->map;
    size_t size = d->size;
    if (memcmp(m, AXD_MAGIC, size < 8 ? size : 8) != 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: not an axmem dataset (bad magic); pass a .axd file written by "
                         "`axmem data encode`",
                         path);
    if (size < AXD_HEADER_V1)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: truncated dataset (%zu bytes, the header alone "
                         "is %d); " REBUILD,
                         path, size, AXD_HEADER_V1);
    uint32_t version = ax_get32(m + 8);
    if (version < 1 || version > AXD_VERSION)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: dataset format version %u, this build reads versions 1-%u; " REBUILD,
                         path, version, AXD_VERSION);
    d->header = version == 1 ? AXD_HEADER_V1 : AXD_HEADER;
    if (size < d->header)
        return ax_errorf(AX_ERR_CORRUPT, "%s: truncated dataset header (%zu bytes); " REBUILD, path,
                         size);
    size_t hsum = d->header - 8; /* the header checksum covers every byte before it */
    if (ax_get64(m + hsum) != XXH3_64bits(m, hsum))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: header checksum mismatch: the header is corrupt; " REBUILD, path);
    d->tok_checksum = version == 1 ? 0 : ax_get64(m + 48);
    d->vocab = ax_get32(m + 12);
    d->width = ax_get32(m + 16);
    d->n_docs = ax_get64(m + 24);
    d->n_tokens = ax_get64(m + 32);
    d->checksum = ax_get64(m + 40);
    uint32_t want_width = d->vocab <= 65536 ? 2 : 4;
    d->eot = version == 3 ? ax_get32(m + 20) : AX_TOK_EOT;
    if (d->vocab < AX_TOK_FIRST_MERGE || d->width != want_width ||
        (version < 3 && ax_get32(m + 20) != 0) || d->eot >= d->vocab)
        return ax_errorf(
            AX_ERR_CORRUPT,
            "%s: inconsistent header (vocab %u, token width %u, end-of-text %u); " REBUILD, path,
            d->vocab, d->width, d->eot);
    /* expected size, with overflow checks: header + 8 (n_docs + 1) + width n_tokens */
    uint64_t lim = UINT64_MAX / 16;
    if (d->n_docs >= lim || d->n_tokens >= lim)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: header claims %llu docs, %llu tokens: corrupt; " REBUILD, path,
                         (unsigned long long)d->n_docs, (unsigned long long)d->n_tokens);
    uint64_t off_bytes = 8 * (d->n_docs + 1);
    uint64_t want = d->header + off_bytes + (uint64_t)d->width * d->n_tokens;
    if ((uint64_t)size != want)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s: %zu bytes, but the header (%llu docs, %llu tokens) implies "
                         "%llu; " REBUILD,
                         path, (uint64_t)size < want ? "truncated dataset" : "oversized dataset",
                         size, (unsigned long long)d->n_docs, (unsigned long long)d->n_tokens,
                         (unsigned long long)want);
    d->offsets = (const uint64_t *)(m + d->header);
    d->tokens = m + d->header + off_bytes;
    if (d->offsets[0] != 0 || d->offsets[d->n_docs] != d->n_tokens)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: document offsets do not span the tokens (first %llu, last %llu, "
                         "tokens %llu); " REBUILD,
                         path, (unsigned long long)d->offsets[0],
                         (unsigned long long)d->offsets[d->n_docs],
                         (unsigned long long)d->n_tokens);
    for (uint64_t i = 0; i < d->n_docs; i++)
        if (d->offsets[i + 1] < d->offsets[i])
            return ax_errorf(AX_ERR_CORRUPT, "%s: document offsets decrease at doc %llu; " REBUILD,
                             path, (unsigned long long)i);
    return AX_OK;
}

/* Payload check for a validated d, through the verified-file cache unless `rehash`. */
static ax_status verify_cached(ax_axd_t *d, int fd, const struct stat *before, int rehash) {
    /* the key covers the header too: it holds the checksum and vocab the pass checked against */
    uint64_t key = ax_verify_cache_key(before, XXH3_64bits(d->map, d->header));
    if (!rehash && key && ax_verify_cache_has(key)) {
        AX_DEBUG("%s: payload verified before (cached); not rehashed", d->path);
        return AX_OK;
    }
    AX_CHECK(verify_payload_bytes(d));
    /* record only if the file did not change while it was hashed */
    struct stat after;
    if (key && fstat(fd, &after) == 0 && ax_verify_cache_settled(&after) &&
        ax_verify_cache_key(&after, XXH3_64bits(d->map, d->header)) == key)
        ax_verify_cache_put(key, d->path);
    return AX_OK;
}

ax_status ax_axd_open(const char *path, int verify_payload, ax_axd_t **out) {
    *out = NULL;
    ax_axd_t *d = calloc(1, sizeof *d);
    if (!d || !(d->path = strdup(path))) {
        free(d);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    int fd;
    ax_status st = ax_open_regular(path, "create the dataset with `axmem data encode`", &fd);
    if (st != AX_OK) {
        ax_axd_free(d);
        return st;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        st = ax_errorf(AX_ERR_IO, "%s: cannot stat the dataset: %s", path, strerror(errno));
        goto fail;
    }
    d->size = (size_t)sb.st_size;
    if (d->size == 0) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s: empty file, not an axmem dataset; " REBUILD, path);
        goto fail;
    }
    d->map = mmap(NULL, d->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (d->map == MAP_FAILED) {
        d->map = NULL;
        st = ax_errorf(AX_ERR_IO, "%s: mmap failed: %s", path, strerror(errno));
        goto fail;
    }
    AX_CHECK_GOTO(validate(d), fail);
    if (verify_payload != AX_AXD_HEADER_ONLY)
        AX_CHECK_GOTO(verify_cached(d, fd, &sb, verify_payload == AX_AXD_VERIFY_REHASH), fail);
    close(fd);
    *out = d;
    return AX_OK;
fail:
    close(fd);
    ax_axd_free(d);
    return st;
}

uint32_t ax_axd_vocab_size(const ax_axd_t *d) {
    return d->vocab;
}
uint64_t ax_axd_n_docs(const ax_axd_t *d) {
    return d->n_docs;
}
uint64_t ax_axd_n_tokens(const ax_axd_t *d) {
    return d->n_tokens;
}
uint64_t ax_axd_checksum(const ax_axd_t *d) {
    return d->checksum;
}
uint64_t ax_axd_tokenizer_checksum(const ax_axd_t *d) {
    return d->tok_checksum;
}
uint32_t ax_axd_eot(const ax_axd_t *d) {
    return d->eot;
}
ax_status ax_axd_check_tokenizer(const ax_axd_t *d, const ax_tokenizer_t *tok,
                                 const char *tok_path) {
    uint64_t want = d->tok_checksum, have = ax_tokenizer_checksum(tok);
    if ((uint32_t)ax_tokenizer_vocab_size(tok) != d->vocab)
        return ax_errorf(AX_ERR_MISMATCH,
                         "tokenizer %s has %d tokens but dataset %s was encoded with %u; pass "
                         "the tokenizer the dataset was encoded with",
                         tok_path, ax_tokenizer_vocab_size(tok), d->path, d->vocab);
    if (want && want != have)
        return ax_errorf(AX_ERR_MISMATCH,
                         "tokenizer %s (identity %016llx) is not the one dataset %s was encoded "
                         "with (%016llx): same vocabulary size, different merges; pass the "
                         "tokenizer the dataset was encoded with",
                         tok_path, (unsigned long long)have, d->path, (unsigned long long)want);
    if ((uint32_t)ax_tokenizer_eot(tok) != d->eot)
        return ax_errorf(AX_ERR_MISMATCH,
                         "tokenizer %s ends documents with token %d but dataset %s with %u; pass "
                         "the tokenizer the dataset was encoded with",
                         tok_path, ax_tokenizer_eot(tok), d->path, d->eot);
    return AX_OK;
}
const char *ax_axd_path(const ax_axd_t *d) {
    return d->path;
}
const uint64_t *ax_axd_doc_offsets(const ax_axd_t *d) {
    return d->offsets;
}

uint32_t ax_axd_token(const ax_axd_t *d, uint64_t i) {
    if (d->width == 2) {
        return ax_get16(d->tokens + 2 * i);
    }
    return ax_get32(d->tokens + 4 * i);
}

void ax_axd_tokens(const ax_axd_t *d, uint64_t start, uint64_t n, int32_t *out) {
    if (d->width == 2) {
        const uint8_t *p = d->tokens + 2 * start;
        for (uint64_t i = 0; i < n; i++) out[i] = ax_get16(p + 2 * i);
    } else {
        memcpy(out, d->tokens + 4 * start, 4 * n);
    }
}

uint64_t ax_axd_doc_of(const ax_axd_t *d, uint64_t i) {
    /* last doc whose start is <= i (empty documents share a start; the last one owns i) */
    uint64_t lo = 0, hi = d->n_docs; /* answer in [lo, hi) */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (d->offsets[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* ---------------------------------------------------------------- writer */

struct ax_axd_writer {
    char *path, *partial, *side;
    FILE *tok; /* side file: the token stream */
    uint32_t vocab, width, eot;
    uint64_t tok_checksum;
    uint64_t *offsets;
    size_t n_docs, cap;
    uint64_t n_tokens;
    uint8_t *conv;
    size_t conv_cap;
};

static void writer_free(ax_axd_writer_t *w) {
    if (w->tok) fclose(w->tok);
    free(w->path);
    free(w->partial);
    free(w->side);
    free(w->offsets);
    free(w->conv);
    free(w);
}

ax_status ax_axd_writer_create(const char *path, uint32_t vocab_size, ax_axd_writer_t **out) {
    *out = NULL;
    if (vocab_size < AX_TOK_FIRST_MERGE)
        return ax_errorf(AX_ERR_ARG,
                         "%s: vocabulary size %u is too small (must include the "
                         "end-of-text token %d)",
                         path, vocab_size, AX_TOK_EOT);
    ax_axd_writer_t *w = calloc(1, sizeof *w);
    if (!w) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    size_t n = strlen(path) + 32;
    w->path = strdup(path);
    w->partial = malloc(n);
    w->side = malloc(n);
    w->cap = 1024;
    w->offsets = malloc(w->cap * sizeof *w->offsets);
    if (!w->path || !w->partial || !w->side || !w->offsets) {
        writer_free(w);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(w->partial, n, "%s.partial", path);
    snprintf(w->side, n, "%s.partial.tokens", path);
    w->vocab = vocab_size;
    w->width = vocab_size <= 65536 ? 2 : 4;
    w->eot = AX_TOK_EOT;
    w->offsets[0] = 0;
    /* the spill and the dataset hold training text: owner-only (0600) whatever the umask */
    int fd;
    ax_status st = ax_open_private_rw(w->side, &fd);
    if (st == AX_OK && !(w->tok = fdopen(fd, "w+b"))) {
        st = ax_errorf(AX_ERR_IO, "%s: cannot open: %s", w->side, strerror(errno));
        close(fd);
    }
    if (st != AX_OK) {
        unlink(w->side);
        writer_free(w);
        return st;
    }
    setvbuf(w->tok, NULL, _IOFBF, 1 << 20);
    *out = w;
    return AX_OK;
}

void ax_axd_writer_set_tokenizer(ax_axd_writer_t *w, uint64_t tokenizer_checksum) {
    w->tok_checksum = tokenizer_checksum;
}

ax_status ax_axd_writer_set_eot(ax_axd_writer_t *w, uint32_t eot) {
    if (eot >= w->vocab)
        return ax_errorf(AX_ERR_ARG, "%s: end-of-text id %u is outside the vocabulary [0, %u)",
                         w->path, eot, w->vocab);
    w->eot = eot;
    return AX_OK;
}

ax_status ax_axd_writer_add_doc(ax_axd_writer_t *w, const int32_t *tokens, size_t n) {
    int add_eot = n == 0 || tokens[n - 1] != (int32_t)w->eot;
    size_t total = n + (size_t)add_eot;
    if (!ax_grow(&w->offsets, &w->cap, w->n_docs + 2, sizeof *w->offsets, 0))
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory for document offsets", w->path);
    if (w->conv_cap < total * w->width) {
        size_t nc = total * w->width + 4096;
        uint8_t *nb = realloc(w->conv, nc);
        if (!nb) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", w->path);
        w->conv = nb;
        w->conv_cap = nc;
    }
    for (size_t i = 0; i < total; i++) {
        int32_t t = i < n ? tokens[i] : (int32_t)w->eot;
        if (t < 0 || (uint32_t)t >= w->vocab)
            return ax_errorf(AX_ERR_ARG,
                             "%s: token %d in document %zu is outside the "
                             "vocabulary [0, %u)",
                             w->path, t, w->n_docs, w->vocab);
        if (w->width == 2) {
            uint16_t v = (uint16_t)t;
            memcpy(w->conv + 2 * i, &v, 2);
        } else {
            ax_put32(w->conv + 4 * i, (uint32_t)t);
        }
    }
    if (fwrite(w->conv, w->width, total, w->tok) != total)
        return ax_errorf(AX_ERR_IO, "%s: write failed: %s; check free disk space", w->side,
                         strerror(errno));
    w->n_tokens += total;
    w->offsets[++w->n_docs] = w->n_tokens;
    return AX_OK;
}

void ax_axd_writer_abort(ax_axd_writer_t *w) {
    if (!w) return;
    if (w->tok) fclose(w->tok);
    w->tok = NULL;
    unlink(w->side);
    unlink(w->partial);
    writer_free(w);
}

ax_status ax_axd_writer_close(ax_axd_writer_t *w) {
    ax_status st = AX_OK;
    int fd = -1;
    uint8_t *buf = NULL;
    XXH3_state_t *hs = XXH3_createState();
    if (!hs) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", w->path);
        goto fail;
    }
    if (fflush(w->tok) != 0 || fseek(w->tok, 0, SEEK_SET) != 0) {
        st = ax_errorf(AX_ERR_IO, "%s: write failed: %s; check free disk space", w->side,
                       strerror(errno));
        goto fail;
    }
    AX_CHECK_GOTO(ax_open_private(w->partial, &fd), fail); /* mode 0600, kept by the rename */
    uint8_t hdr[AXD_HEADER] = {0};
    AX_CHECK_GOTO(ax_write_all(fd, hdr, AXD_HEADER, w->partial), fail); /* placeholder */
    XXH3_64bits_reset(hs);
    size_t ob = 8 * (w->n_docs + 1);
    XXH3_64bits_update(hs, w->offsets, ob); /* little-endian host: bytes as stored */
    AX_CHECK_GOTO(ax_write_all(fd, w->offsets, ob, w->partial), fail);
    size_t bsz = 4u << 20;
    buf = malloc(bsz);
    if (!buf) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", w->path);
        goto fail;
    }
    uint64_t left = w->n_tokens * w->width;
    while (left) {
        size_t want = left < bsz ? (size_t)left : bsz;
        size_t got = fread(buf, 1, want, w->tok);
        if (got != want) {
            st = ax_errorf(AX_ERR_IO, "%s: short read of the token spill file", w->side);
            goto fail;
        }
        XXH3_64bits_update(hs, buf, got);
        AX_CHECK_GOTO(ax_write_all(fd, buf, got, w->partial), fail);
        left -= got;
    }
    memcpy(hdr, AXD_MAGIC, 8);
    /* version 2 unless the end-of-text differs, so axmem-encoded files stay readable by
     * builds that predate version 3 */
    ax_put32(hdr + 8, w->eot == AX_TOK_EOT ? 2u : AXD_VERSION);
    ax_put32(hdr + 12, w->vocab);
    ax_put32(hdr + 16, w->width);
    ax_put32(hdr + 20, w->eot == AX_TOK_EOT ? 0u : w->eot);
    ax_put64(hdr + 24, w->n_docs);
    ax_put64(hdr + 32, w->n_tokens);
    ax_put64(hdr + 40, XXH3_64bits_digest(hs));
    ax_put64(hdr + 48, w->tok_checksum);
    ax_put64(hdr + 56, XXH3_64bits(hdr, 56));
    if (pwrite(fd, hdr, AXD_HEADER, 0) != AXD_HEADER || fsync(fd) != 0) {
        st = ax_errorf(AX_ERR_IO, "%s: write failed: %s; check free disk space", w->partial,
                       strerror(errno));
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        st = ax_errorf(AX_ERR_IO, "%s: close failed: %s", w->partial, strerror(errno));
        goto fail;
    }
    fd = -1;
    AX_CHECK_GOTO(ax_rename_durable(w->partial, w->path), fail);
    fclose(w->tok);
    w->tok = NULL;
    unlink(w->side);
    free(buf);
    XXH3_freeState(hs);
    writer_free(w);
    return AX_OK;
fail:
    if (fd >= 0) close(fd);
    free(buf);
    XXH3_freeState(hs);
    ax_axd_writer_abort(w);
    return st;
}
