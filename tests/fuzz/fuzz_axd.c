/* libFuzzer target: the .axd dataset reader (data/axd.c), every verification mode, and the
 * accessors a successful open hands out. */
#include "data/axd.h"
#include "fuzz_util.h"

#include <xxhash.h>

static char path[512];

static void seed(const char *name, uint32_t vocab, int n_docs) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", fz_seed_dir(), name);
    ax_axd_writer_t *w;
    if (ax_axd_writer_create(p, vocab, &w) != AX_OK) abort();
    ax_axd_writer_set_tokenizer(w, 0x1234567890abcdefull);
    int32_t t[16];
    for (int d = 0; d < n_docs; d++) {
        for (int i = 0; i < d % 7; i++) t[i] = (int32_t)((d * 31 + i * 7) % 250);
        if (ax_axd_writer_add_doc(w, t, (size_t)(d % 7)) != AX_OK) abort();
    }
    if (ax_axd_writer_close(w) != AX_OK) abort();
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (fz_seed_dir()) {
        seed("small.axd", 300, 12);
        seed("wide.axd", 70000, 5); /* 4-byte tokens */
        seed("empty_docs.axd", 257, 1);
        exit(0);
    }
    fz_init("axd");
    fz_path(path, sizeof path, "fuzz.axd");
    return 0;
}

/* Checksums stop almost every mutation at the door. So each input is tried twice: as is, and
 * with its header and payload checksums recomputed, which takes it on to the size, offset and
 * token checks behind them. */
static void fix_checksums(uint8_t *m, size_t size) {
    uint32_t version;
    memcpy(&version, m + 8, 4);
    size_t header = version == 1 ? 56 : 64;
    if (size < header) return;
    uint64_t h = XXH3_64bits(m + header, size - header);
    memcpy(m + 40, &h, 8);
    h = XXH3_64bits(m, header - 8);
    memcpy(m + header - 8, &h, 8);
}

static void one(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size);
    if (size >= 56) {
        uint8_t *c = malloc(size);
        memcpy(c, data, size);
        fix_checksums(c, size);
        one(c, size);
        free(c);
    }
    return 0;
}

static void one(const uint8_t *data, size_t size) {
    fz_write(path, data, size);
    ax_axd_t *d = NULL;
    ax_error_clear();
    ax_status st = ax_axd_open(path, AX_AXD_VERIFY, &d);
    fz_note("axd", st);
    if (st != AX_OK) {
        if (d || !ax_error_msg()[0]) abort(); /* failures leave nothing and say why */
        /* header-only opens accept more (not the payload): their accessors must be safe too */
        ax_error_clear();
        if (ax_axd_open(path, AX_AXD_HEADER_ONLY, &d) != AX_OK) return;
    }
    uint64_t nt = ax_axd_n_tokens(d), nd = ax_axd_n_docs(d);
    const uint64_t *off = ax_axd_doc_offsets(d);
    if (off[0] != 0 || off[nd] != nt) abort();
    int32_t buf[64];
    for (uint64_t k = 0; k < nd && k < 64; k++) {
        uint64_t n = off[k + 1] - off[k];
        if (n > 64) n = 64;
        ax_axd_tokens(d, off[k], n, buf);
        if (n && ax_axd_doc_of(d, off[k]) > k && off[ax_axd_doc_of(d, off[k])] != off[k]) abort();
    }
    if (nt) {
        (void)ax_axd_token(d, nt - 1);
        uint64_t doc = ax_axd_doc_of(d, nt - 1);
        if (doc >= nd || off[doc] > nt - 1 || off[doc + 1] <= nt - 1) abort();
    }
    ax_axd_free(d);
    ax_error_clear();
}
