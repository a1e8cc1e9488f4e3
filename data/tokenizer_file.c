/* The tokenizer file (little-endian):
 *   0  char[8] magic "AXMEMTOK"
 *   8  u32     version (1)
 *  12  u32     vocab_size (= 257 + n_merges)
 *  16  u32     n_merges
 *  20  u32     reserved (0)
 *  24  u32[n_merges][2] merges (merge i joins the pair into id 257 + i)
 *  ..  u64     XXH3_64 of all preceding bytes: the tokenizer's identity */
#include "data/tok_internal.h"
#include "lib/fsutil.h"
#include "lib/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define TOK_MAGIC "AXMEMTOK"
#define TOK_VERSION 1u
#define TOK_HEADER 24

static void put32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
}
static uint32_t get32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* serialise everything but the trailing checksum */
static uint8_t *serialise(const ax_tokenizer_t *t, size_t *len) {
    size_t n = TOK_HEADER + 8 * (size_t)t->n_merges;
    uint8_t *b = malloc(n + 8);
    if (!b) return NULL;
    memcpy(b, TOK_MAGIC, 8);
    put32(b + 8, TOK_VERSION);
    put32(b + 12, (uint32_t)t->vocab_size);
    put32(b + 16, (uint32_t)t->n_merges);
    put32(b + 20, 0);
    for (int i = 0; i < 2 * t->n_merges; i++) put32(b + TOK_HEADER + 4 * (size_t)i, t->merges[i]);
    *len = n;
    return b;
}

uint64_t ax_tok_compute_checksum(const ax_tokenizer_t *t) {
    size_t n;
    uint8_t *b = serialise(t, &n);
    if (!b) return 0;
    uint64_t h = XXH3_64bits(b, n);
    free(b);
    return h;
}

ax_status ax_tokenizer_save(const ax_tokenizer_t *t, const char *path) {
    size_t n;
    uint8_t *b = serialise(t, &n);
    if (!b) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory writing the tokenizer", path);
    uint64_t h = XXH3_64bits(b, n);
    memcpy(b + n, &h, 8);
    size_t plen = strlen(path) + 16;
    char *partial = malloc(plen);
    if (!partial) {
        free(b);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    snprintf(partial, plen, "%s.partial", path);
    ax_status st = ax_write_file(partial, b, n + 8);
    if (st == AX_OK) st = ax_rename_durable(partial, path);
    if (st != AX_OK) unlink(partial);
    free(partial);
    free(b);
    return st;
}

#define RETRAIN "re-run `axmem data tokenizer-train` to rebuild it"

ax_status ax_tokenizer_load(const char *path, ax_tokenizer_t **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return ax_errorf(AX_ERR_IO,
                         "%s: cannot open tokenizer: %s; pass the file written by "
                         "`axmem data tokenizer-train --out`",
                         path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return ax_errorf(AX_ERR_IO, "%s: not a regular file; pass a tokenizer file", path);
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *b = malloc(size ? size : 1);
    if (!b) {
        fclose(f);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory reading the tokenizer", path);
    }
    size_t got = fread(b, 1, size, f);
    fclose(f);
    ax_status st = AX_OK;
    if (got != size) {
        st = ax_errorf(AX_ERR_IO, "%s: read %zu of %zu bytes; check the file", path, got, size);
        goto done;
    }
    if (size == 0 || memcmp(b, TOK_MAGIC, size < 8 ? size : 8) != 0) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: not an axmem tokenizer file (bad magic); pass the file written by "
                       "`axmem data tokenizer-train --out`",
                       path);
        goto done;
    }
    if (size < TOK_HEADER + 8) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s: truncated tokenizer file (%zu bytes); " RETRAIN, path,
                       size);
        goto done;
    }
    uint32_t version = get32(b + 8), vocab = get32(b + 12), n_merges = get32(b + 16);
    if (version != TOK_VERSION) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: tokenizer file version %u, this build reads version %u; " RETRAIN, path,
                       version, TOK_VERSION);
        goto done;
    }
    if (n_merges > AX_TOK_MAX_VOCAB || vocab != AX_TOK_FIRST_MERGE + n_merges ||
        get32(b + 20) != 0) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: corrupt tokenizer header (vocab %u, %u merges); " RETRAIN, path, vocab,
                       n_merges);
        goto done;
    }
    size_t want = TOK_HEADER + 8 * (size_t)n_merges + 8;
    if (size != want) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: %s tokenizer file: %zu bytes, the header implies %zu; " RETRAIN, path,
                       size < want ? "truncated" : "oversized", size, want);
        goto done;
    }
    uint64_t stored, h = XXH3_64bits(b, want - 8);
    memcpy(&stored, b + want - 8, 8);
    if (stored != h) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "%s: tokenizer checksum mismatch (stored %016llx, computed %016llx): the "
                       "file is corrupt; " RETRAIN,
                       path, (unsigned long long)stored, (unsigned long long)h);
        goto done;
    }
    uint32_t *merges = malloc(8 * (size_t)(n_merges ? n_merges : 1));
    if (!merges) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    for (size_t i = 0; i < 2 * (size_t)n_merges; i++) merges[i] = get32(b + TOK_HEADER + 4 * i);
    st = ax_tok_from_merges(merges, (int)n_merges, path, out);
    free(merges);
    if (st == AX_OK) (*out)->checksum = h;
done:
    free(b);
    return st;
}
