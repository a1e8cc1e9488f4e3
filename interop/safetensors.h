/* safetensors (Hugging Face's weight format): u64 little-endian header length N, N bytes of
 * JSON {"NAME": {"dtype", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}},
 * then the data buffer; offsets are relative to the buffer's start. The reader maps the file
 * and checks every entry before any tensor is read (offsets inside the buffer and not
 * overlapping, sizes that match dtype x shape, a known dtype); errors name the file and the
 * fault. Tensors come out as fp32 (bf16 and fp16 converted). The writer emits fp32 only. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"

#define AX_ST_MAX_DIMS 8
/* the header limit of the reference implementation (100 MB) */
#define AX_ST_MAX_HEADER (100u << 20)

/* BOOL: the causal-mask buffers some GPT-NeoX / GPT-2 saves carry (never weights) */
typedef enum { AX_ST_F32, AX_ST_F16, AX_ST_BF16, AX_ST_BOOL } ax_st_dtype;

typedef struct {
    char *name;
    ax_st_dtype dtype;
    int ndim;
    int64_t shape[AX_ST_MAX_DIMS];
    int64_t numel;
    uint64_t begin, end; /* byte range within the data buffer */
} ax_st_tensor;

typedef struct ax_st_file ax_st_file;

/* Parses a whole file image buf[n] (borrowed: it must outlive the result); `what` names it in
 * errors. ax_st_open maps `path` and parses it. */
ax_status ax_st_parse(const uint8_t *buf, size_t n, const char *what, ax_st_file **out);
ax_status ax_st_open(const char *path, ax_st_file **out);
void ax_st_close(ax_st_file *f);
const char *ax_st_path(const ax_st_file *f);
int ax_st_n_tensors(const ax_st_file *f);
const ax_st_tensor *ax_st_tensor_at(const ax_st_file *f, int i);
const ax_st_tensor *ax_st_find(const ax_st_file *f, const char *name); /* NULL if absent */
/* dst[t->numel] <- tensor t of f as fp32. */
void ax_st_read_f32(const ax_st_file *f, const ax_st_tensor *t, float *dst);
/* Element size in bytes of a dtype. */
size_t ax_st_dtype_size(ax_st_dtype d);

/* IEEE half bit pattern -> float (exact; bf16 is lib/dist/comm.h's ax_bf16_to_f32). */
float ax_f16_to_f32(uint16_t h);

/* ---- writer ---- */
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[AX_ST_MAX_DIMS];
    const float *data; /* numel floats */
} ax_st_out;
/* Writes an fp32 safetensors file atomically (temp + rename): tensors in the order given,
 * header padded to 8 bytes, `metadata_json` (a JSON object of strings, may be NULL) as
 * __metadata__. */
ax_status ax_st_write(const char *path, const ax_st_out *ts, int n, const char *metadata_json);
