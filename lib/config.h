/* One config table drives CLI flags, config files, --help and the copy stored in every
 * checkpoint manifest. A table describes the fields of a plain C struct by offset. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/json.h"
#include "lib/status.h"

#define AX_CFG_STR_MAX 512

typedef enum {
    AX_CFG_INT,   /* field is int64_t */
    AX_CFG_FLOAT, /* field is double */
    AX_CFG_STR,   /* field is char[AX_CFG_STR_MAX] */
    AX_CFG_BOOL,  /* field is int (0/1); flag --name sets 1, --no-name sets 0, or --name=true */
} ax_cfg_type;

typedef struct {
    const char *name; /* flag without "--"; key in config files and manifests */
    ax_cfg_type type;
    size_t offset;    /* offsetof(struct, field) */
    const char *def;  /* default, as text ("" for an empty string) */
    double min, max;  /* inclusive range for INT/FLOAT (ignored when min > max) */
    const char *help; /* one line */
} ax_cfg_entry;

typedef struct {
    const char *usage;   /* e.g. "axmem train [flags]" */
    const char *summary; /* paragraph printed under the usage line */
    const ax_cfg_entry *entries;
    int n;
} ax_cfg_table;

/* was_set (optional, may be NULL): array of t->n flags, 1 where a value came from argv/file. */
ax_status ax_cfg_set_defaults(const ax_cfg_table *t, void *obj);
/* Set one field from text: checks type and range; the error names --name, the value and
 * what is allowed. Unknown names: error suggesting --help. */
ax_status ax_cfg_set(const ax_cfg_table *t, void *obj, const char *name, const char *value,
                     uint8_t *was_set);
/* Parses "--name value", "--name=value", "--flag", "--no-flag", and "--config FILE" (a file
 * of "name = value" lines, '#' comments; later flags override it). "-h"/"--help" set
 * *help and stop. Positional arguments are an error naming them. argv[0] (the command's
 * name, as in main) is skipped; flags on the command line override --config whatever the order. */
ax_status ax_cfg_parse_argv(const ax_cfg_table *t, void *obj, int argc, char **argv,
                            uint8_t *was_set, int *help);
ax_status ax_cfg_load_file(const ax_cfg_table *t, void *obj, const char *path, uint8_t *was_set);
void ax_cfg_print_help(const ax_cfg_table *t, FILE *f); /* usage, summary, flags w/ defaults */
void ax_cfg_write_json(const ax_cfg_table *t, const void *obj, ax_jw *w); /* one JSON object */
/* Fill from a JSON object (keys not in the table are ignored; missing keys keep their value) */
ax_status ax_cfg_read_json(const ax_cfg_table *t, void *obj, const ax_json *o, const char *what);
const ax_cfg_entry *ax_cfg_find(const ax_cfg_table *t, const char *name);
