/* JSON helpers the scan loaders share (load.c, load_privacy.c): every getter checks type and
 * domain and names the file and the field on failure. */
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "reports/model.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SCAN_SCHEMA "axmem-scan"
#define SCAN_VERSION 1

ax_status ax_rep_nomem(void) {
    return ax_errorf(AX_ERR_NOMEM, "out of memory reading reports");
}

ax_status ax_rep_damaged(const char *path, const char *cmd, const char *fmt, ...) {
    char what[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ax_errorf(AX_ERR_CORRUPT, "%s: %s; the file was edited or damaged: rerun %s", path, what,
                     cmd ? cmd : "the command that wrote it");
}

ax_status ax_rep_read_json(const char *path, ax_json **out) {
    char *text = NULL;
    size_t len = 0;
    AX_CHECK(ax_read_file(path, &text, &len));
    ax_status st = ax_json_parse(text, len, path, out);
    free(text);
    return st;
}

/* obj.key as an object; missing or wrong type is corrupt input named by path */
ax_status ax_rep_get_obj(const ax_json *obj, const char *key, const char *path,
                         const ax_json **out) {
    *out = ax_json_get(obj, key);
    if (!*out || (*out)->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" is missing or not an object", path, key);
    return AX_OK;
}

ax_status ax_rep_get_pair(const ax_json *obj, const char *key, const char *field, double min,
                          double max, const char *cmd, const char *path, double out[2]) {
    const ax_json *p = ax_json_get(obj, key);
    if (!p || p->type != AX_JSON_ARR || p->n != 2 || p->items[0]->type != AX_JSON_NUM ||
        p->items[1]->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is not [low, high]", path, field);
    out[0] = p->items[0]->num, out[1] = p->items[1]->num;
    AX_CHECK(ax_rep_check_num(out[0], min, max, path, field));
    AX_CHECK(ax_rep_check_num(out[1], min, max, path, field));
    return out[0] <= out[1]
               ? AX_OK
               : ax_rep_damaged(path, cmd, "%s [%g, %g] is not ordered", field, out[0], out[1]);
}

ax_status ax_rep_get_rate(const ax_json *obj, const char *sec, const char *key, const char *path,
                          ax_rep_stat *s) {
    char field[160];
    snprintf(field, sizeof field, "%s.%s", sec, key);
    const ax_json *o = ax_json_get(obj, key), *m = o ? ax_json_get(o, "mean") : NULL,
                  *ci = o ? ax_json_get(o, "ci95") : NULL;
    if (!o || o->type != AX_JSON_OBJ || !m || m->type != AX_JSON_NUM || !ci ||
        ci->type != AX_JSON_ARR || ci->n != 2 || ci->items[0]->type != AX_JSON_NUM ||
        ci->items[1]->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s is missing or not {\"mean\": x, \"ci95\": [low, high]}", path,
                         field);
    *s = (ax_rep_stat){m->num, ci->items[0]->num, ci->items[1]->num};
    return ax_rep_check_stat(s, 0, 1, path, field);
}

/* obj.key as a whole number in [lo, hi]; section names the object in messages */
ax_status ax_rep_get_int(const ax_json *obj, const char *section, const char *key, int64_t lo,
                         int64_t hi, const char *path, int64_t *out) {
    char field[96];
    snprintf(field, sizeof field, "%s%s%s", section, section[0] ? "." : "", key);
    return ax_rep_check_int(ax_json_get(obj, key), lo, hi, path, field, out);
}

/* the same when present; dflt otherwise */
ax_status ax_rep_opt_int(const ax_json *obj, const char *section, const char *key, int64_t lo,
                         int64_t hi, int64_t dflt, const char *path, int64_t *out) {
    if (!ax_json_get(obj, key)) {
        *out = dflt;
        return AX_OK;
    }
    return ax_rep_get_int(obj, section, key, lo, hi, path, out);
}

/* obj.key as a finite number in [lo, hi] */
ax_status ax_rep_get_in(const ax_json *obj, const char *section, const char *key, double lo,
                        double hi, const char *path, double *out) {
    char field[96];
    snprintf(field, sizeof field, "%s%s%s", section, section[0] ? "." : "", key);
    AX_CHECK(ax_json_get_num(obj, key, path, out));
    return ax_rep_check_num(*out, lo, hi, path, field);
}

/* obj.key, when present, must be of type t */
ax_status ax_rep_opt_typed(const ax_json *obj, const char *key, ax_json_type t, const char *path,
                           const char *field, const ax_json **out) {
    *out = ax_json_get(obj, key);
    if (*out && (*out)->type != t)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is not %s", path, field,
                         t == AX_JSON_ARR ? "an array" : "an object");
    return AX_OK;
}

/* checks schema and version, returns the kind and the identity blocks */
ax_status ax_rep_scan_header(ax_arena *a, const ax_json *v, const char *path, const char **kind,
                             ax_rep_ident *id) {
    const ax_json *schema = ax_json_get(v, "schema"), *ver = ax_json_get(v, "version");
    if (!schema || schema->type != AX_JSON_STR || strcmp(schema->str, SCAN_SCHEMA))
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: not an axmem scan file (schema %s%s%s, expected \"%s\"); pass the "
                         "scan.json or regurgitation.json that axmem memscan wrote",
                         path, schema && schema->type == AX_JSON_STR ? "\"" : "",
                         schema && schema->type == AX_JSON_STR ? schema->str : "missing",
                         schema && schema->type == AX_JSON_STR ? "\"" : "", SCAN_SCHEMA);
    if (!ver || ver->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"version\" is missing or not a number", path);
    if (ver->num != SCAN_VERSION)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s: axmem-scan version %g is not supported (this axmem reads version "
                         "%d); rescan with this axmem or report with the axmem that wrote it",
                         path, ver->num, SCAN_VERSION);
    AX_CHECK(ax_json_get_str(v, "kind", path, kind));
    const ax_json *ck, *ds;
    const char *s;
    AX_CHECK(ax_rep_get_obj(v, "checkpoint", path, &ck));
    AX_CHECK(ax_rep_get_obj(v, "dataset", path, &ds));
    AX_CHECK(ax_json_get_str(ck, "path", path, &s));
    id->ckpt_path = ax_arena_str(a, s);
    AX_CHECK(ax_rep_get_int(ck, "checkpoint", "step", 0, AX_REP_MAX_COUNT, path, &id->step));
    const ax_json *gf = ax_json_get(ck, "goldfish");
    id->goldfish = ax_arena_str(a, gf && gf->type == AX_JSON_STR ? gf->str : "none");
    AX_CHECK(ax_json_get_str(ds, "path", path, &s));
    id->ds_path = ax_arena_str(a, s);
    AX_CHECK(ax_json_get_str(ds, "xxh3", path, &s));
    id->ds_xxh3 = ax_arena_str(a, s);
    AX_CHECK(ax_rep_get_int(ds, "dataset", "docs", 0, AX_REP_MAX_COUNT, path, &id->ds_docs));
    return ax_rep_get_int(ds, "dataset", "tokens", 0, AX_REP_MAX_COUNT, path, &id->ds_tokens);
}

/* Calls fn on each non-blank line of a JSONL file; errors name "path line N". */
ax_status ax_rep_each_jsonl(const char *path, ax_rep_line_fn fn, void *ctx) {
    FILE *f; /* a regular file only: a FIFO would block the report forever */
    AX_CHECK(ax_fopen_regular(path, NULL, &f));
    char *line = NULL, what[1100];
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    ax_status st = AX_OK;
    while (st == AX_OK && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        size_t k = 0;
        while (k < (size_t)len &&
               (line[k] == ' ' || line[k] == '\t' || line[k] == '\n' || line[k] == '\r'))
            k++;
        if (k == (size_t)len) continue;
        snprintf(what, sizeof what, "%s line %ld", path, lineno);
        ax_json *row = NULL;
        st = ax_json_parse(line, (size_t)len, what, &row);
        if (st == AX_OK && row->type != AX_JSON_OBJ)
            st = ax_errorf(AX_ERR_CORRUPT, "%s: not a JSON object", what);
        if (st == AX_OK) st = fn(row, what, ctx);
        ax_json_free(row);
    }
    if (st == AX_OK && ferror(f)) st = ax_errorf(AX_ERR_IO, "read error in %s", path);
    free(line);
    fclose(f);
    return st;
}
