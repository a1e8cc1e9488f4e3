/* One config table drives CLI flags, config files, --help and the copy stored in every
 * checkpoint manifest. A table describes the fields of a plain C struct by offset. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/core/json.h"
#include "lib/core/status.h"

#define AX_CFG_STR_MAX 512
#define AX_CFG_FILE_MAX (16u << 20) /* --config files: bigger is an error, not a 4 GB read */

typedef enum {
    AX_CFG_INT,     /* field is int64_t */
    AX_CFG_FLOAT,   /* field is double */
    AX_CFG_STR,     /* field is char[AX_CFG_STR_MAX] */
    AX_CFG_BOOL,    /* field is int (0/1); flag --name sets 1, --no-name sets 0, or --name=true */
    AX_CFG_STRLIST, /* field is ax_cfg_strlist; repeatable: "--name A B C" takes every following
                     * argument up to the next --flag, "--name=A" one; each use appends. Config
                     * files append one value per line; JSON takes an array of strings. The
                     * default must be "" (an empty list). Free with ax_cfg_free. */
    AX_CFG_CHOICE,  /* field is char[AX_CFG_STR_MAX] holding one of a fixed set of words. `def`
                     * lists them separated by '|', the default first ("packed|doc"); --help
                     * shows them and a value outside them is an error that lists them. In files
                     * and manifests it is a string, as AX_CFG_STR. */
} ax_cfg_type;

/* A list of strings owned by the struct (copies of argv/file text): no length limit, so paths
 * and passages longer than AX_CFG_STR_MAX fit. */
typedef struct {
    int n;
    char **v;
} ax_cfg_strlist;

typedef struct {
    const char *name; /* flag without "--"; key in config files and manifests */
    ax_cfg_type type;
    size_t offset;    /* offsetof(struct, field) */
    const char *def;  /* default, as text ("" for an empty string); CHOICE: "dflt|other|..." */
    double min, max;  /* inclusive range for INT/FLOAT (ignored when min > max) */
    const char *help; /* one line */
} ax_cfg_entry;

/* Arguments that are not flags (a file name, a passage). Without one in the table, any
 * positional argument is an error. "--" ends the flags: everything after it is positional. */
typedef struct {
    const char *name; /* shown in usage and errors, e.g. "FILE.axd" or "TEXT" */
    size_t offset;    /* offsetof(struct, field): an ax_cfg_strlist */
    int many;         /* 0: at most one; 1: any number (usage shows NAME...) */
    int required;     /* 1: parse fails naming NAME when none is given (unless --help) */
    const char *help; /* one line, under "arguments:" in --help */
} ax_cfg_positional;

typedef struct {
    const char *usage;   /* e.g. "axmem train [flags]"; --help appends the positional's NAME */
    const char *summary; /* paragraph printed under the usage line */
    const ax_cfg_entry *entries;
    int n;
    const ax_cfg_positional *positional; /* optional (NULL: flags only) */
} ax_cfg_table;

/* was_set (optional, may be NULL): array of t->n flags, 1 where a value came from argv/file.
 * set_defaults initialises every field (STRLIST and the positional list to empty without
 * reading them), so obj may hold garbage before it; after it, release with ax_cfg_free. */
ax_status ax_cfg_set_defaults(const ax_cfg_table *t, void *obj);
/* Frees the STRLIST fields and the positional list and empties them; other fields untouched. */
void ax_cfg_free(const ax_cfg_table *t, void *obj);
/* Set one field from text: checks type and range; the error names --name, the value and
 * what is allowed. Unknown names: error suggesting --help. */
ax_status ax_cfg_set(const ax_cfg_table *t, void *obj, const char *name, const char *value,
                     uint8_t *was_set);
/* Parses "--name value", "--name=value", "--flag", "--no-flag", and "--config FILE" (a file
 * of "name = value" lines, '#' comments; later flags override it). "-h"/"--help" set
 * *help and stop. Positional arguments go to t->positional (an error naming them when the
 * table has none, or a second one when it takes one). argv[0] (the command's name, as in main)
 * is skipped; flags on the command line override --config whatever the order (a STRLIST
 * appends the command line's values to the file's). */
ax_status ax_cfg_parse_argv(const ax_cfg_table *t, void *obj, int argc, char **argv,
                            uint8_t *was_set, int *help);
/* Reads the whole file (a regular file of at most AX_CFG_FILE_MAX bytes; a NUL byte is an error
 * naming the line), then sets each "name = value" line or each key of a JSON object. */
ax_status ax_cfg_load_file(const ax_cfg_table *t, void *obj, const char *path, uint8_t *was_set);
void ax_cfg_print_help(const ax_cfg_table *t, FILE *f); /* usage, summary, flags w/ defaults */
/* From now on ax_cfg_print_help writes Markdown (a fenced usage and summary, a table of flags):
 * for `axmem help --markdown`, which generates docs/cli.md */
void ax_cfg_help_markdown(int on);
void ax_cfg_write_json(const ax_cfg_table *t, const void *obj, ax_jw *w); /* one JSON object */
/* Fill from a JSON object (keys not in the table are ignored; missing keys keep their value) */
ax_status ax_cfg_read_json(const ax_cfg_table *t, void *obj, const ax_json *o, const char *what);
const ax_cfg_entry *ax_cfg_find(const ax_cfg_table *t, const char *name);
/* 1 for the types whose field is char[AX_CFG_STR_MAX] (STR, CHOICE) */
int ax_cfg_is_text(ax_cfg_type type);

/* Flag groups: entries that several commands share, declared once. Each expands to table
 * entries for a struct that has the named fields (F(field) is the caller's offsetof macro);
 * use them inside a command's ax_cfg_entry array. */
#define AX_CFG_THREADS_ENTRY(F)                                                                    \
    { "threads", AX_CFG_INT, F(threads), "0", 0, 4096, "OpenMP threads (0 = all cores)" }
#define AX_CFG_GRID_ENTRY(F, help)                                                                 \
    { "grid", AX_CFG_STR, F(grid), "1x1x1x1", 1, 0, help }
#define AX_CFG_DEVICE_ENTRY(F, help)                                                               \
    { "device", AX_CFG_CHOICE, F(device), "cpu|cuda", 1, 0, help }
/* --precision: the GEMMs' arithmetic (lib/backend/backend.h, ax_precision_resolve); the field
 * is a char[AX_CFG_STR_MAX] that reaches the model as "DEVICE:PRECISION" */
#define AX_CFG_PRECISION_ENTRY(F)                                                                  \
    {                                                                                              \
        "precision", AX_CFG_CHOICE, F(precision), "auto|fp32|bf16", 1, 0,                          \
            "GEMM arithmetic: bf16 (bf16 operands, fp32 accumulation; fp32 master weights and "    \
            "optimizer state; needs --device cuda), fp32 (TF32 off: reproduces the CPU), auto "    \
            "(bf16 on cuda, fp32 on cpu)"                                                          \
    }
/* The device spec the model opens its context with (ax_model_create_dev): "DEVICE:PRECISION"
 * from a flags struct with `device` and `precision` fields, in a buffer that lives as long as
 * the enclosing block (so it can be written straight into the call). */
#define AX_CFG_DEVICE_SPEC_MAX (2 * AX_CFG_STR_MAX + 2)
static inline const char *ax_cfg_device_spec(char *out, const char *device, const char *precision) {
    snprintf(out, AX_CFG_DEVICE_SPEC_MAX, "%s:%s", device, precision[0] ? precision : "auto");
    return out;
}
#define AX_CFG_DEVICE_SPEC(fl)                                                                     \
    ax_cfg_device_spec((char[AX_CFG_DEVICE_SPEC_MAX]){0}, (fl)->device, (fl)->precision)
/* --comm: how collectives move bytes (lib/dist/comm.h, ax_comm_select) */
#define AX_CFG_COMM_ENTRY(F)                                                                       \
    {                                                                                              \
        "comm", AX_CFG_CHOICE, F(comm), "auto|mpi|nccl", 1, 0,                                     \
            "collective transport: mpi (device memory staged through the host), nccl (GPU "        \
            "builds), auto (nccl for a GPU run when built with NCCL, else mpi)"                    \
    }
#define AX_CFG_CKPT_ENTRY(F)                                                                       \
    {                                                                                              \
        "ckpt", AX_CFG_STR, F(ckpt), "", 1, 0,                                                     \
            "checkpoint: a step-NNNNNN directory, or a run directory (its newest checkpoint)"      \
    }
/* --out: every command writes somewhere; the default and what it is differ */
#define AX_CFG_OUT_ENTRY(F, def, help)                                                             \
    { "out", AX_CFG_STR, F(out), def, 1, 0, help }
#define AX_CFG_SEED_ENTRY(F, def, help)                                                            \
    { "seed", AX_CFG_INT, F(seed), def, 0, 9.2e18, help }
/* The files most commands read: what each is for differs (the help) */
#define AX_CFG_DATA_ENTRY(F, help)                                                                 \
    { "data", AX_CFG_STR, F(data), "", 1, 0, help }
#define AX_CFG_INPUT_ENTRY(F, help)                                                                \
    { "input", AX_CFG_STR, F(input), "", 1, 0, help }
#define AX_CFG_TOKENIZER_ENTRY(F, help)                                                            \
    { "tokenizer", AX_CFG_STR, F(tokenizer), "", 1, 0, help }
#define AX_CFG_INDEX_ENTRY(F, help)                                                                \
    { "index", AX_CFG_STR, F(index), "", 1, 0, help }
#define AX_CFG_JSON_ENTRY(F, help)                                                                 \
    { "json", AX_CFG_BOOL, F(json), "false", 1, 0, help }
