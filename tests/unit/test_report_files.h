/* Helpers shared by the report tests: each test writes its scan files under a fresh temporary
 * folder `root` (made by rt_setup, removed by rt_teardown) and reads the report back. */
#pragma once
#include <criterion/criterion.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

static char root[64];

/* root <- a new folder /tmp/PREFIX-XXXXXX */
static __attribute__((unused)) void rt_setup(const char *prefix) {
    snprintf(root, sizeof root, "/tmp/%s-XXXXXX", prefix);
    cr_assert_not_null(mkdtemp(root));
    ax_error_clear();
}

static __attribute__((unused)) void rt_teardown(void) {
    ax_rm_rf(root);
}

/* root/rel <- printf(fmt, ...), making the folders on the way */
static __attribute__((unused)) void put(const char *rel, const char *fmt, ...) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    char *slash = strrchr(path, '/');
    *slash = 0;
    cr_assert_eq(ax_mkdir_p(path), AX_OK);
    *slash = '/';
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(f, fmt, ap);
    va_end(ap);
    fclose(f);
}

/* the whole of root/rel (malloc'd, NUL-terminated) */
static __attribute__((unused)) char *slurp(const char *rel) {
    char path[256], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "%s/%s", root, rel);
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK, "%s: %s", path, ax_error_msg());
    return text;
}

/* non-overlapping occurrences of needle in hay */
static __attribute__((unused)) int count(const char *hay, const char *needle) {
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* report.json (schema axmem-report v2): the block with this id in any section, NULL if none */
static __attribute__((unused)) const ax_json *rt_block(const ax_json *rep, const char *id) {
    const ax_json *secs = ax_json_get(rep, "sections");
    for (size_t i = 0; secs && i < secs->n; i++) {
        const ax_json *b = ax_json_get(secs->items[i], "blocks");
        for (size_t j = 0; b && j < b->n; j++) {
            const ax_json *x = ax_json_get(b->items[j], "id");
            if (x && x->type == AX_JSON_STR && !strcmp(x->str, id)) return b->items[j];
        }
    }
    return NULL;
}

/* row k of table `id`, or the value labelled `key` in facts `id` (k ignored) */
static __attribute__((unused)) const ax_json *rt_row(const ax_json *rep, const char *id, size_t k) {
    const ax_json *rows = ax_json_get(rt_block(rep, id), "rows");
    cr_assert(rows && k < rows->n, "report.json: %s has no row %zu", id, k);
    return rows->items[k];
}

static __attribute__((unused)) const ax_json *rt_fact(const ax_json *rep, const char *id,
                                                      const char *key) {
    const ax_json *v = ax_json_get(ax_json_get(rt_block(rep, id), "facts"), key);
    cr_assert_not_null(v, "report.json: %s has no fact '%s'", id, key);
    return v;
}

/* a number cell: the number, or its object's "value" */
static __attribute__((unused)) double rt_num(const ax_json *cell) {
    const ax_json *v = cell && cell->type == AX_JSON_OBJ ? ax_json_get(cell, "value") : cell;
    cr_assert(v && v->type == AX_JSON_NUM, "report.json: not a number cell");
    return v->num;
}
