/* safetensors: writer -> reader round trip, fp16/bf16 conversion, and damaged headers refused
 * with a message naming the file and the fault. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "interop/safetensors.h"
#include "lib/core/fsutil.h"

/* u64 header length + header + data bytes */
static uint8_t *image(const char *header, const uint8_t *data, size_t nd, size_t *n) {
    size_t hl = strlen(header);
    uint8_t *b = malloc(8 + hl + nd + 1);
    for (int i = 0; i < 8; i++) b[i] = (uint8_t)(hl >> (8 * i));
    memcpy(b + 8, header, hl);
    if (nd) memcpy(b + 8 + hl, data, nd);
    *n = 8 + hl + nd;
    return b;
}

static void refused(const char *header, size_t nd, const char *fault) {
    uint8_t data[64] = {0};
    size_t n;
    uint8_t *b = image(header, data, nd, &n);
    ax_error_clear();
    ax_st_file *f = (ax_st_file *)1;
    ax_status st = ax_st_parse(b, n, "damaged.safetensors", &f);
    cr_assert_neq(st, AX_OK, "accepted: %s", header);
    cr_assert_null(f);
    cr_assert(strstr(ax_error_msg(), "damaged.safetensors"), "no file name: %s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), fault), "want '%s' in: %s", fault, ax_error_msg());
    free(b);
}

Test(safetensors, roundtrip) {
    char dir[] = "/tmp/ax_st_XXXXXX", path[256];
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.safetensors", dir);
    float a[6] = {1, -2, 3.5f, 4, 5, 6e-9f}, v[3] = {7, 8, 9};
    ax_st_out o[2] = {{.name = "w.weight", .ndim = 2, .shape = {2, 3}, .data = a},
                      {.name = "norm", .ndim = 1, .shape = {3}, .data = v}};
    cr_assert_eq(ax_st_write(path, o, 2, "{\"format\":\"pt\"}"), AX_OK, "%s", ax_error_msg());
    ax_error_clear();
    ax_st_file *f;
    cr_assert_eq(ax_st_open(path, &f), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_st_n_tensors(f), 2);
    const ax_st_tensor *t = ax_st_find(f, "w.weight");
    cr_assert(t && t->ndim == 2 && t->shape[0] == 2 && t->shape[1] == 3 && t->dtype == AX_ST_F32);
    float got[6];
    ax_st_read_f32(f, t, got);
    cr_assert_eq(memcmp(got, a, sizeof a), 0);
    t = ax_st_find(f, "norm");
    cr_assert(t && t->numel == 3);
    ax_st_read_f32(f, t, got);
    cr_assert_eq(memcmp(got, v, sizeof v), 0);
    cr_assert_null(ax_st_find(f, "absent"));
    ax_st_close(f);
    /* the data buffer starts 8-byte aligned, as the reference writer pads it */
    char *text;
    size_t len;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | (uint8_t)text[i];
    cr_assert_eq(hl % 8, 0);
    cr_assert_eq(len, 8 + hl + sizeof a + sizeof v);
    free(text);
    ax_rm_rf(dir);
}

Test(safetensors, half_precision) {
    cr_assert_eq(ax_f16_to_f32(0x3c00), 1.0f);
    cr_assert_eq(ax_f16_to_f32(0xc000), -2.0f);
    cr_assert_eq(ax_f16_to_f32(0x0001), ldexpf(1, -24)); /* smallest subnormal */
    cr_assert_eq(ax_f16_to_f32(0x03ff), ldexpf(1023, -24));
    cr_assert_eq(ax_f16_to_f32(0x7bff), 65504.0f);
    cr_assert(isinf(ax_f16_to_f32(0x7c00)) && isnan(ax_f16_to_f32(0x7e00)));
    /* one F16 and one BF16 tensor, unaligned in the buffer */
    uint8_t d[] = {0x00, 0x3c, 0x00, 0xc0, 0x80, 0x3f, 0x40, 0xc0};
    size_t n;
    uint8_t *b = image("{\"h\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                       "\"b\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[4,8]},"
                       "\"__metadata__\":{\"x\":\"y\"}}",
                       d, sizeof d, &n);
    ax_st_file *f;
    cr_assert_eq(ax_st_parse(b, n, "mem", &f), AX_OK, "%s", ax_error_msg());
    float got[2];
    ax_st_read_f32(f, ax_st_find(f, "h"), got);
    cr_assert(got[0] == 1.0f && got[1] == -2.0f);
    ax_st_read_f32(f, ax_st_find(f, "b"), got);
    cr_assert(got[0] == 1.0f && got[1] == -3.0f, "%g %g", got[0], got[1]);
    ax_st_close(f);
    free(b);
}

Test(safetensors, damaged_headers) {
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8, "run past");
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
            "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
            16, "overlap");
    refused("{\"a\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[0,8]}}", 8, "I64");
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need");
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "data_offsets");
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "shape");
    refused("{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets");
    refused("[1,2]", 0, "not a JSON object");
    refused("{\"a\": ", 0, "damaged.safetensors");
    /* header length beyond the file, and a file shorter than the length field */
    uint8_t b[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}'};
    ax_st_file *f;
    ax_error_clear();
    cr_assert_neq(ax_st_parse(b, 10, "short.safetensors", &f), AX_OK);
    cr_assert(strstr(ax_error_msg(), "short.safetensors") &&
              strstr(ax_error_msg(), "header length"));
    ax_error_clear();
    cr_assert_neq(ax_st_parse(b, 5, "tiny.safetensors", &f), AX_OK);
    cr_assert(strstr(ax_error_msg(), "tiny.safetensors"));
    /* a missing file names its path */
    ax_error_clear();
    cr_assert_neq(ax_st_open("/nonexistent/x.safetensors", &f), AX_OK);
    cr_assert(strstr(ax_error_msg(), "/nonexistent/x.safetensors"));
}
