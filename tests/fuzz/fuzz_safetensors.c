/* libFuzzer target: the safetensors reader (interop/safetensors.c). Input: a whole file image.
 * Whatever the parser accepts must describe non-overlapping tensors inside the data buffer
 * whose byte spans match dtype x shape, findable by name, and readable as fp32; every
 * rejection must say why. */
#include "interop/safetensors.h"
#include "fuzz_util.h"

static void seed(const char *name, const char *header, const uint8_t *data, size_t nd) {
    uint8_t buf[1024];
    size_t hl = strlen(header);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)(hl >> (8 * i));
    memcpy(buf + 8, header, hl);
    memcpy(buf + 8 + hl, data, nd);
    fz_write_seed(name, buf, 8 + hl + nd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (fz_seed_dir()) {
        uint8_t d[32];
        for (int i = 0; i < 32; i++) d[i] = (uint8_t)(i * 37 + 11);
        seed("f32.st",
             "{\"__metadata__\":{\"format\":\"pt\"},\"a.weight\":{\"dtype\":\"F32\",\"shape\":[2,"
             "2],\"data_offsets\":[0,16]},\"b\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":"
             "[16,32]}}",
             d, 32);
        seed("half.st",
             "{\"h\":{\"dtype\":\"F16\",\"shape\":[3,2],\"data_offsets\":[0,12]},\"b\":{\"dtype\":"
             "\"BF16\",\"shape\":[2],\"data_offsets\":[12,16]},\"e\":{\"dtype\":\"F32\",\"shape\":"
             "[0],\"data_offsets\":[16,16]}}",
             d, 16);
        seed("empty.st", "{}", d, 0);
        /* a GPT-NeoX causal-mask buffer (BOOL) beside a weight */
        seed("bool.st",
             "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[1,1,2,2],\"data_offsets\":[0,4]},\"w\":{"
             "\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
             d, 12);
        exit(0);
    }
    fz_init("safetensors");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ax_error_clear();
    /* a private copy of exactly size bytes, so reading past the image is an ASan error */
    uint8_t *copy = malloc(size ? size : 1);
    if (size) memcpy(copy, data, size);
    ax_st_file *f = NULL;
    ax_status st = ax_st_parse(copy, size, "fuzz.safetensors", &f);
    fz_note("parse", st);
    if (st != AX_OK) {
        if (!ax_error_msg()[0] || f) abort(); /* every rejection says why, and returns nothing */
        free(copy);
        ax_error_clear();
        return 0;
    }
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | copy[i];
    uint64_t data_len = size - 8 - hl;
    for (int i = 0; i < ax_st_n_tensors(f); i++) {
        const ax_st_tensor *t = ax_st_tensor_at(f, i);
        if (t->end > data_len || t->begin > t->end ||
            t->end - t->begin != (uint64_t)t->numel * ax_st_dtype_size(t->dtype))
            abort();
        if (ax_st_find(f, t->name) != t) abort();
        for (int j = 0; j < i; j++) {
            const ax_st_tensor *u = ax_st_tensor_at(f, j);
            if (t->begin < u->end && u->begin < t->end) abort(); /* overlap accepted */
        }
        float *out = malloc((size_t)t->numel * sizeof *out + 1);
        ax_st_read_f32(f, t, out);
        free(out);
    }
    ax_st_close(f);
    free(copy);
    return 0;
}
