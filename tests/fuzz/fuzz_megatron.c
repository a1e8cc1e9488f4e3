/* libFuzzer target: the Megatron / GPT-NeoX index parser and importer (data/megatron.c).
 * Input: u32 L (little-endian), then L bytes of PATH.idx, then the rest is PATH.bin. The index
 * is parsed against the .bin's size; whatever it accepts must describe sequences inside the
 * .bin and documents in order, and the import of an accepted pair must either fail cleanly or
 * give a .axd with the same documents and tokens. */
#include "data/axd.h"
#include "data/megatron.h"
#include "fuzz_util.h"

/* a well-formed pair: dtype code, docs of sequences given by their sizes, tokens i % mod */
static void seed(const char *name, uint8_t code, int elem, const int32_t *sizes, int n_seq,
                 const int64_t *doc_idx, int n_di) {
    uint8_t buf[4096];
    size_t idx_len = 34 + 12 * (size_t)n_seq + 8 * (size_t)n_di, o = 4;
    uint32_t l = (uint32_t)idx_len;
    memcpy(buf, &l, 4);
    memcpy(buf + o, "MMIDIDX\0\0", 9);
    uint64_t v = 1, ns = (uint64_t)n_seq, nd = (uint64_t)n_di;
    memcpy(buf + o + 9, &v, 8);
    buf[o + 17] = code;
    memcpy(buf + o + 18, &ns, 8);
    memcpy(buf + o + 26, &nd, 8);
    memcpy(buf + o + 34, sizes, 4 * (size_t)n_seq);
    int64_t ptr = 0;
    for (int i = 0; i < n_seq; i++) {
        memcpy(buf + o + 34 + 4 * (size_t)n_seq + 8 * (size_t)i, &ptr, 8);
        ptr += (int64_t)sizes[i] * elem;
    }
    memcpy(buf + o + 34 + 12 * (size_t)n_seq, doc_idx, 8 * (size_t)n_di);
    size_t b = 4 + idx_len;
    for (int64_t i = 0; i < ptr / elem; i++) {
        uint64_t t = (uint64_t)(i % 7 == 6 ? 0 : 1 + i % 300); /* 0 ends runs: an end-of-text */
        memcpy(buf + b, &t, (size_t)elem);
        b += (size_t)elem;
    }
    fz_write_seed(name, buf, b);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (fz_seed_dir()) {
        int32_t s1[] = {3, 4, 7, 0, 5};
        int64_t d1[] = {0, 2, 3, 3, 5};
        seed("u16.bin", 8, 2, s1, 5, d1, 5);
        seed("i32.bin", 4, 4, s1, 5, d1, 5);
        int32_t s2[] = {6, 6};
        int64_t d2[] = {0, 1, 2};
        seed("u8.bin", 1, 1, s2, 2, d2, 3);
        seed("i64.bin", 5, 8, s2, 2, d2, 3);
        exit(0);
    }
    fz_init("megatron");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 4) return 0;
    uint32_t l;
    memcpy(&l, data, 4);
    if (l > size - 4) return 0;
    const uint8_t *idx = data + 4, *bin = idx + l;
    size_t bin_len = size - 4 - l;
    ax_error_clear();
    ax_megatron_idx x;
    /* a private copy of exactly l bytes, so reading past the index is an ASan error */
    uint8_t *copy = malloc(l ? l : 1);
    if (l) memcpy(copy, idx, l);
    ax_status st = ax_megatron_idx_parse(copy, l, bin_len, "fuzz.idx", &x);
    fz_note("parse", st);
    if (st != AX_OK) {
        if (!ax_error_msg()[0]) abort(); /* every rejection says why */
        free(copy);
        ax_error_clear();
        return 0;
    }
    uint64_t total = 0;
    for (uint64_t s = 0; s < x.n_seq; s++) {
        uint64_t p = ax_megatron_idx_ptr(&x, s), n = ax_megatron_idx_size(&x, s) * (uint64_t)x.elem;
        if (p > bin_len || n > bin_len - p) abort();
        total += n;
    }
    if (total != bin_len) abort();
    for (uint64_t d = 0; d < x.n_docs; d++)
        if (ax_megatron_idx_doc(&x, d) > ax_megatron_idx_doc(&x, d + 1)) abort();
    uint64_t n_docs = x.n_docs;
    free(copy);
    /* the whole import, from files */
    char prefix[512], path[600], out[600];
    fz_path(prefix, sizeof prefix, "m");
    snprintf(path, sizeof path, "%s.idx", prefix);
    fz_write(path, idx, l);
    snprintf(path, sizeof path, "%s.bin", prefix);
    fz_write(path, bin, bin_len);
    snprintf(out, sizeof out, "%s.axd", prefix);
    ax_megatron_options o = {0, size & 1 ? -1 : 0}; /* inferred or given end-of-text */
    ax_megatron_result r;
    st = ax_megatron_import(prefix, out, &o, &r);
    fz_note("import", st);
    if (st == AX_OK) {
        ax_axd_t *a;
        if (ax_axd_open(out, AX_AXD_VERIFY, &a) != AX_OK) abort();
        if (ax_axd_n_docs(a) != n_docs || ax_axd_eot(a) != r.eot) abort();
        ax_axd_free(a);
        unlink(out);
    } else if (!ax_error_msg()[0] || ax_path_exists(out)) {
        abort();
    }
    ax_error_clear();
    return 0;
}
