/* The tokenizer file (little-endian):
 *   0  char[8] magic "AXMEMTOK"
 *   8  u32     version (1)
 *  12  u32     vocab_size (= 257 + n_merges)
 *  16  u32     n_merges
 *  20  u32     reserved (0)
 *  24  u32[n_merges][2] merges (merge i joins the pair into id 257 + i)
 *  ..  u64     XXH3_64 of all preceding bytes: the tokenizer's identity */
#include "data/hf/hf_tok.h"
#include "data/tok_internal.h"
#include "lib/core/bytes.h"
#include "lib/core/fsutil.h"
#include "lib/core/status.h"

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

/* serialise everything but the trailing checksum */
static uint8_t *serialise(const ax_tokenizer_t *t, size_t *len) {
    size_t n = TOK_HEADER + 8 * (size_t)t->n_merges;
    uint8_t *b = malloc(n + 8);
    if (!b) return NULL;
    memcpy(b, TOK_MAGIC, 8);
    ax_put32(b + 8, TOK_VERSION);
    ax_put32(b + 12, (uint32_t)t->vocab_size);
    ax_put32(b + 16, (uint32_t)t->n_merges);
    ax_put32(b + 20, 0);
    for (int i = 0; i < 2 * t->n_merges; i++)
        ax_put32(b + TOK_HEADER + 4 * (size_t)i, t->merges[i]);
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
    if (t->hf)
        return ax_errorf(AX_ERR_ARG,
                         "%s: a Hugging Face tokenizer cannot be saved as an axmem tokenizer; "
                         "pass its tokenizer.json wherever a tokenizer is asked for",
                         path);
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

/* the largest file read: a tokenizer.json (Llama-3's is 9 MB); an axmem file is checked
 * against its header before anything is built from it */
#define TOK_MAX_FILE ((size_t)512 << 20)

ax_status ax_tokenizer_load(const char *path, ax_tokenizer_t **out) {
    *out = NULL;
    int fd;
    AX_CHECK(ax_open_regular(path,
                             "pass the file written by `axmem data tokenizer-train --out` or a "
                             "Hugging Face tokenizer.json",
                             &fd));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return ax_errorf(AX_ERR_IO, "%s: cannot stat the tokenizer: %s", path, strerror(errno));
    }
    if ((uint64_t)sb.st_size > TOK_MAX_FILE) {
        close(fd);
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %lld bytes is bigger than any tokenizer file (at most %zu): not a "
                         "tokenizer; pass the file written by `axmem data tokenizer-train` or a "
                         "Hugging Face tokenizer.json",
                         path, (long long)sb.st_size, TOK_MAX_FILE);
    }
    size_t size = (size_t)sb.st_size, got = 0;
    uint8_t *b = malloc(size ? size : 1);
    if (!b) {
        close(fd);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory reading the tokenizer", path);
    }
    while (got < size) {
        ssize_t r = read(fd, b + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        got += (size_t)r;
    }
    close(fd);
    ax_status st = AX_OK;
    if (got != size)
        st = ax_errorf(AX_ERR_IO, "%s: read %zu of %zu bytes; check the file", path, got, size);
    else
        st = ax_tok_load_bytes(b, size, path, out);
    free(b);
    return st;
}

ax_status ax_tok_load_bytes(const uint8_t *b, size_t size, const char *path, ax_tokenizer_t **out) {
    *out = NULL;
    ax_status st = AX_OK;
    /* a JSON object (after optional whitespace) is a Hugging Face tokenizer.json */
    size_t ws = 0;
    while (ws < size && (b[ws] == ' ' || b[ws] == '\t' || b[ws] == '\n' || b[ws] == '\r')) ws++;
    if (ws < size && b[ws] == '{') return ax_hf_load_bytes(b, size, path, out);
    if (size == 0 || memcmp(b, TOK_MAGIC, size < 8 ? size : 8) != 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: not an axmem tokenizer file (bad magic) nor a tokenizer.json; "
                         "pass the file written by `axmem data tokenizer-train --out` or a "
                         "Hugging Face tokenizer.json",
                         path);
    if (size < TOK_HEADER + 8)
        return ax_errorf(AX_ERR_CORRUPT, "%s: truncated tokenizer file (%zu bytes); " RETRAIN, path,
                         size);
    uint32_t version = ax_get32(b + 8), vocab = ax_get32(b + 12), n_merges = ax_get32(b + 16);
    if (version != TOK_VERSION)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: tokenizer file version %u, this build reads version %u; " RETRAIN,
                         path, version, TOK_VERSION);
    /* vocab = 257 + n_merges, and the merges fill the file exactly */
    if (n_merges > AX_TOK_MAX_VOCAB - AX_TOK_FIRST_MERGE ||
        vocab != AX_TOK_FIRST_MERGE + n_merges || ax_get32(b + 20) != 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: corrupt tokenizer header (vocab %u, %u merges); " RETRAIN, path,
                         vocab, n_merges);
    size_t want = TOK_HEADER + 8 * (size_t)n_merges + 8;
    if (size != want)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s tokenizer file: %zu bytes, the header implies %zu; " RETRAIN, path,
                         size < want ? "truncated" : "oversized", size, want);
    uint64_t stored, h = XXH3_64bits(b, want - 8);
    memcpy(&stored, b + want - 8, 8);
    if (stored != h)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: tokenizer checksum mismatch (stored %016llx, computed %016llx): the "
                         "file is corrupt; " RETRAIN,
                         path, (unsigned long long)stored, (unsigned long long)h);
    uint32_t *merges = malloc(8 * (size_t)(n_merges ? n_merges : 1));
    if (!merges) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    for (size_t i = 0; i < 2 * (size_t)n_merges; i++) merges[i] = ax_get32(b + TOK_HEADER + 4 * i);
    /* checks each merge joins earlier ids and bounds the bytes the tokens spell */
    st = ax_tok_from_merges(merges, (int)n_merges, path, out);
    free(merges);
    if (st == AX_OK) (*out)->checksum = h;
    return st;
}
