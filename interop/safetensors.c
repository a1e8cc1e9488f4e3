/* safetensors reader (mapped, validated up front) and fp32 writer. */
#include "interop/safetensors.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/dist/comm.h" /* ax_bf16_to_f32 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct ax_st_file {
    char *path;
    const uint8_t *map; /* whole file when mapped by ax_st_open, else borrowed */
    size_t map_len;
    int mapped;
    const uint8_t *data; /* the data buffer: map + 8 + header length */
    uint64_t data_len;
    ax_st_tensor *t;
    int n;
};

static const char *const dtype_names[] = {"F32", "F16", "BF16", "BOOL"};

size_t ax_st_dtype_size(ax_st_dtype d) {
    return d == AX_ST_F32 ? 4 : d == AX_ST_BOOL ? 1 : 2;
}

float ax_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31, m = h & 1023, u;
    if (e == 31) /* inf / NaN keep their payload */
        u = sign | 0x7f800000u | (m << 13);
    else if (e != 0) /* normal: rebias 15 -> 127 */
        u = sign | ((e + 112) << 23) | (m << 13);
    else if (m == 0)
        u = sign;
    else { /* subnormal: normalise the mantissa */
        e = 113;
        while (!(m & 1024)) m <<= 1, e--;
        u = sign | (e << 23) | ((m & 1023) << 13);
    }
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static int cmp_begin(const void *a, const void *b) {
    const ax_st_tensor *x = a, *y = b;
    return x->begin < y->begin   ? -1
           : x->begin > y->begin ? 1
                                 : (x->end > y->end) - (x->end < y->end);
}
static int cmp_name(const void *a, const void *b) {
    return strcmp(((const ax_st_tensor *)a)->name, ((const ax_st_tensor *)b)->name);
}

/* One header entry -> t; errors name the file and the tensor. */
static ax_status parse_entry(const char *what, const char *name, const ax_json *e,
                             uint64_t data_len, ax_st_tensor *t) {
    if (e->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: header entry \"%s\" is not an object", what, name);
    const ax_json *dt = ax_json_get(e, "dtype"), *sh = ax_json_get(e, "shape"),
                  *off = ax_json_get(e, "data_offsets");
    if (!dt || dt->type != AX_JSON_STR || !sh || sh->type != AX_JSON_ARR || !off ||
        off->type != AX_JSON_ARR || off->n != 2)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: tensor \"%s\" lacks a string \"dtype\", an array \"shape\" or a "
                         "pair \"data_offsets\"; the file is damaged",
                         what, name);
    int found = -1;
    for (int d = 0; d < 4; d++)
        if (!strcmp(dt->str, dtype_names[d])) found = d;
    if (found < 0)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: tensor \"%s\" has dtype \"%.16s\"; only F32, F16 and BF16 are "
                         "supported, and BOOL for buffers (convert the model to one of them)",
                         what, name, dt->str);
    t->dtype = (ax_st_dtype)found;
    if (sh->n > AX_ST_MAX_DIMS)
        return ax_errorf(AX_ERR_CORRUPT, "%s: tensor \"%s\" has %zu dimensions (at most %d)", what,
                         name, sh->n, AX_ST_MAX_DIMS);
    t->ndim = (int)sh->n;
    int64_t numel = 1;
    for (size_t d = 0; d < sh->n; d++) {
        int64_t x;
        if (!ax_json_int_in(sh->items[d], 0, (int64_t)1 << 40, &x))
            return ax_errorf(AX_ERR_CORRUPT, "%s: tensor \"%s\" has a bad shape entry", what, name);
        t->shape[d] = x;
        if (x && numel > ((int64_t)1 << 50) / x)
            return ax_errorf(AX_ERR_CORRUPT, "%s: tensor \"%s\" is too large", what, name);
        numel *= x;
    }
    t->numel = numel;
    int64_t b, en;
    if (!ax_json_int_in(off->items[0], 0, (int64_t)1 << 53, &b) ||
        !ax_json_int_in(off->items[1], 0, (int64_t)1 << 53, &en) || b > en)
        return ax_errorf(AX_ERR_CORRUPT, "%s: tensor \"%s\" has bad data_offsets", what, name);
    if ((uint64_t)en > data_len)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: tensor \"%s\" data_offsets [%lld, %lld] run past the data buffer "
                         "(%llu bytes); the file is truncated or damaged",
                         what, name, (long long)b, (long long)en, (unsigned long long)data_len);
    if ((uint64_t)(en - b) != (uint64_t)numel * ax_st_dtype_size(t->dtype))
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: tensor \"%s\" spans %lld bytes but its shape and dtype %s need "
                         "%lld",
                         what, name, (long long)(en - b), dt->str,
                         (long long)(numel * (int64_t)ax_st_dtype_size(t->dtype)));
    t->begin = (uint64_t)b, t->end = (uint64_t)en;
    t->name = strdup(name);
    if (!t->name) return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", what);
    return AX_OK;
}

static ax_status parse_header(ax_st_file *f, const char *what, const uint8_t *buf, size_t n) {
    if (n < 8)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %zu bytes is too short for a safetensors file (8-byte header "
                         "length first)",
                         what, n);
    uint64_t hl = 0;
    for (int i = 7; i >= 0; i--) hl = hl << 8 | buf[i];
    if (hl > n - 8 || hl > AX_ST_MAX_HEADER)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: header length %llu runs past the end of the file (%zu bytes) or "
                         "the 100 MB limit; not a safetensors file, or truncated",
                         what, (unsigned long long)hl, n);
    f->data = buf + 8 + hl;
    f->data_len = n - 8 - hl;
    ax_json *h = NULL;
    ax_status st = ax_json_parse((const char *)buf + 8, (size_t)hl, what, &h);
    if (st != AX_OK) return st;
    if (h->type != AX_JSON_OBJ) {
        ax_json_free(h);
        return ax_errorf(AX_ERR_CORRUPT, "%s: the header is not a JSON object", what);
    }
    f->t = calloc(h->n ? h->n : 1, sizeof *f->t);
    if (!f->t) {
        ax_json_free(h);
        return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", what);
    }
    for (size_t i = 0; st == AX_OK && i < h->n; i++) {
        if (!strcmp(h->keys[i], "__metadata__")) continue;
        st = parse_entry(what, h->keys[i], h->items[i], f->data_len, &f->t[f->n]);
        if (st == AX_OK) f->n++;
    }
    ax_json_free(h);
    if (st != AX_OK) return st;
    /* no two tensors may share bytes (a crafted file could alias them) */
    qsort(f->t, (size_t)f->n, sizeof *f->t, cmp_begin);
    for (int i = 1; i < f->n; i++)
        if (f->t[i].begin < f->t[i - 1].end)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: tensors \"%s\" and \"%s\" overlap in the data buffer; the "
                             "file is damaged",
                             what, f->t[i - 1].name, f->t[i].name);
    qsort(f->t, (size_t)f->n, sizeof *f->t, cmp_name);
    for (int i = 1; i < f->n; i++)
        if (!strcmp(f->t[i].name, f->t[i - 1].name))
            return ax_errorf(AX_ERR_CORRUPT, "%s: tensor \"%s\" appears twice", what, f->t[i].name);
    return AX_OK;
}

ax_status ax_st_parse(const uint8_t *buf, size_t n, const char *what, ax_st_file **out) {
    *out = NULL;
    ax_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(what))) {
        free(f);
        return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", what);
    }
    f->map = buf, f->map_len = n;
    ax_status st = parse_header(f, what, buf, n);
    if (st != AX_OK) {
        ax_st_close(f);
        return st;
    }
    *out = f;
    return AX_OK;
}

ax_status ax_st_open(const char *path, ax_st_file **out) {
    *out = NULL;
    int fd;
    AX_CHECK(ax_open_regular(path, "check the model directory", &fd));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return ax_errorf(AX_ERR_IO, "cannot stat %s: %s", path, strerror(errno));
    }
    size_t n = (size_t)sb.st_size;
    void *p = n ? mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0) : NULL;
    close(fd);
    if (n && p == MAP_FAILED)
        return ax_errorf(AX_ERR_IO, "cannot map %s: %s", path, strerror(errno));
    ax_status st = ax_st_parse(p, n, path, out);
    if (st != AX_OK) {
        if (n) munmap(p, n);
        return st;
    }
    (*out)->mapped = n != 0;
    return AX_OK;
}

void ax_st_close(ax_st_file *f) {
    if (!f) return;
    for (int i = 0; i < f->n; i++) free(f->t[i].name);
    free(f->t);
    if (f->mapped) munmap((void *)f->map, f->map_len);
    free(f->path);
    free(f);
}

const char *ax_st_path(const ax_st_file *f) {
    return f->path;
}
int ax_st_n_tensors(const ax_st_file *f) {
    return f->n;
}
const ax_st_tensor *ax_st_tensor_at(const ax_st_file *f, int i) {
    return &f->t[i];
}
const ax_st_tensor *ax_st_find(const ax_st_file *f, const char *name) {
    ax_st_tensor key = {.name = (char *)name};
    return bsearch(&key, f->t, (size_t)f->n, sizeof *f->t, cmp_name);
}

void ax_st_read_f32(const ax_st_file *f, const ax_st_tensor *t, float *dst) {
    const uint8_t *p = f->data + t->begin; /* little-endian, maybe unaligned: memcpy */
    for (int64_t i = 0; i < t->numel; i++) {
        if (t->dtype == AX_ST_F32) {
            memcpy(&dst[i], p + 4 * i, 4);
            continue;
        }
        if (t->dtype == AX_ST_BOOL) {
            dst[i] = p[i] != 0;
            continue;
        }
        uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
        dst[i] = t->dtype == AX_ST_BF16 ? ax_bf16_to_f32(h) : ax_f16_to_f32(h);
    }
}

ax_status ax_st_write(const char *path, const ax_st_out *ts, int n, const char *metadata_json) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    if (metadata_json) ax_jw_key(&w, "__metadata__"), ax_jw_raw(&w, metadata_json);
    uint64_t off = 0;
    for (int i = 0; i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < ts[i].ndim; d++) numel *= ts[i].shape[d];
        ax_jw_key(&w, ts[i].name);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "dtype"), ax_jw_str(&w, "F32");
        ax_jw_key(&w, "shape"), ax_jw_arr_begin(&w);
        for (int d = 0; d < ts[i].ndim; d++) ax_jw_int(&w, ts[i].shape[d]);
        ax_jw_arr_end(&w);
        ax_jw_key(&w, "data_offsets"), ax_jw_arr_begin(&w);
        ax_jw_uint(&w, off), ax_jw_uint(&w, off + 4 * (uint64_t)numel);
        ax_jw_arr_end(&w);
        ax_jw_obj_end(&w);
        off += 4 * (uint64_t)numel;
    }
    ax_jw_obj_end(&w);
    const char *h = ax_jw_text(&w);
    if (!h) {
        ax_jw_free(&w);
        return ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", path);
    }
    size_t hl = strlen(h), pad = (8 - hl % 8) % 8; /* the data buffer starts 8-aligned */
    uint8_t len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (uint8_t)((hl + pad) >> (8 * i));
    char tmp[4096];
    int fd;
    ax_status st = ax_create_temp(path, 0, tmp, sizeof tmp, &fd);
    if (st != AX_OK) {
        ax_jw_free(&w);
        return st;
    }
    st = ax_write_all(fd, len8, 8, path);
    if (st == AX_OK) st = ax_write_all(fd, h, hl, path);
    if (st == AX_OK) st = ax_write_all(fd, "        ", pad, path);
    for (int i = 0; st == AX_OK && i < n; i++) {
        int64_t numel = 1;
        for (int d = 0; d < ts[i].ndim; d++) numel *= ts[i].shape[d];
        st = ax_write_all(fd, ts[i].data, (size_t)numel * 4, path); /* hosts are little-endian */
    }
    if (st == AX_OK && fsync(fd) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot sync %s: %s", path, strerror(errno));
    close(fd);
    ax_jw_free(&w);
    if (st == AX_OK) st = ax_rename_durable(tmp, path);
    if (st != AX_OK) unlink(tmp);
    return st;
}
