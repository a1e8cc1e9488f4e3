/* The config table: one description of a struct's fields drives flags, config files, --help
 * and the JSON copy in checkpoint manifests. */
#include "lib/core/config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/cliargs.h"
#include "lib/core/fsutil.h"

/* "axmem train [flags]" -> "axmem train": the words before the first [..], <..> or -flag */
static void cmd_name(const ax_cfg_table *t, char *out, size_t size) {
    const char *u = t->usage ? t->usage : "axmem";
    if (!strncmp(u, "usage:", 6)) u += 6;
    while (*u == ' ') u++;
    size_t n = 0;
    while (u[n]) {
        if ((n == 0 || u[n - 1] == ' ') && (u[n] == '[' || u[n] == '<' || u[n] == '-')) break;
        n++;
    }
    while (n > 0 && u[n - 1] == ' ') n--;
    if (n >= size) n = size - 1;
    memcpy(out, u, n);
    out[n] = 0;
}

static void *field(void *obj, const ax_cfg_entry *e) {
    return (char *)obj + e->offset;
}
static const void *cfield(const void *obj, const ax_cfg_entry *e) {
    return (const char *)obj + e->offset;
}
static int has_range(const ax_cfg_entry *e) {
    return e->min <= e->max;
}

const ax_cfg_entry *ax_cfg_find(const ax_cfg_table *t, const char *name) {
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->entries[i].name, name)) return &t->entries[i];
    return NULL;
}

/* Levenshtein distance, for "did you mean --x?" on typos */
static int edit_distance(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return 99;
    int row[64];
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int prev = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int cur = row[j];
            int sub = prev + (a[i - 1] != b[j - 1]);
            int best = row[j] + 1 < row[j - 1] + 1 ? row[j] + 1 : row[j - 1] + 1;
            row[j] = sub < best ? sub : best;
            prev = cur;
        }
    }
    return row[lb];
}

static ax_status unknown_name(const ax_cfg_table *t, const char *name, const char *where) {
    char cmd[128];
    cmd_name(t, cmd, sizeof cmd);
    const char *best = NULL;
    int bd = 3; /* suggest only close matches */
    for (int i = 0; i < t->n; i++) {
        int d = edit_distance(name, t->entries[i].name);
        if (d < bd) {
            bd = d;
            best = t->entries[i].name;
        }
    }
    char hint[128] = "", text[160] = "";
    if (best) snprintf(hint, sizeof hint, " (did you mean --%s?)", best);
    if (t->positional && !*where) /* the user may have meant it as text */
        snprintf(text, sizeof text, "; put '--' before a %s that starts with '--'",
                 t->positional->name);
    return ax_errorf(AX_ERR_ARG, "%sunknown flag --%s for '%s'%s%s; see %s --help", where, name,
                     cmd, hint, text, cmd);
}

static const char *type_word(ax_cfg_type t) {
    static const char *const words[] = {"int", "float", "string", "bool", "string", "word"};
    return t <= AX_CFG_CHOICE ? words[t] : "?";
}

static ax_status range_error(const ax_cfg_entry *e, const char *value, const char *where,
                             const char *why) {
    if (has_range(e))
        return ax_errorf(AX_ERR_ARG, "%s--%s=%s %s; expected %s %s in [%.17g, %.17g]", where,
                         e->name, value, why, e->type == AX_CFG_INT ? "an" : "a",
                         type_word(e->type), e->min, e->max);
    return ax_errorf(AX_ERR_ARG, "%s--%s=%s %s; expected %s %s", where, e->name, value, why,
                     e->type == AX_CFG_INT ? "an" : "a", type_word(e->type));
}

int ax_cfg_is_text(ax_cfg_type type) {
    return type == AX_CFG_STR || type == AX_CFG_CHOICE;
}

/* The i-th word of a CHOICE entry's "a|b|c" into out; 0 when there is none. */
static int choice_word(const ax_cfg_entry *e, int i, char *out, size_t size) {
    const char *p = e->def ? e->def : "";
    for (; i > 0; i--) {
        p = strchr(p, '|');
        if (!p) return 0;
        p++;
    }
    size_t n = strcspn(p, "|");
    if (n == 0 || n >= size) return 0;
    memcpy(out, p, n);
    out[n] = 0;
    return 1;
}

/* "packed or doc", "auto, always or never": the words of a CHOICE entry for messages */
static void choice_list(const ax_cfg_entry *e, char *out, size_t size) {
    char w[AX_CFG_STR_MAX];
    int n = 0;
    while (choice_word(e, n, w, sizeof w)) n++;
    out[0] = 0;
    for (int i = 0; i < n && choice_word(e, i, w, sizeof w); i++) {
        size_t l = strlen(out);
        snprintf(out + l, size - l, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", w);
    }
}

static int parse_bool(const char *v, int *out) {
    static const char *yes[] = {"1", "true", "yes", "on"}, *no[] = {"0", "false", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(v, yes[i])) return *out = 1, 1;
        if (!strcasecmp(v, no[i])) return *out = 0, 1;
    }
    return 0;
}

static ax_cfg_strlist *list_at(void *obj, size_t offset) {
    return (ax_cfg_strlist *)((char *)obj + offset);
}

static ax_status list_append(ax_cfg_strlist *l, const char *value, const char *what) {
    char *copy = strdup(value);
    char **v = copy ? realloc(l->v, sizeof *v * (size_t)(l->n + 1)) : NULL;
    if (!v) {
        free(copy);
        return ax_errorf(AX_ERR_NOMEM, "out of memory storing %s", what);
    }
    v[l->n++] = copy;
    l->v = v;
    return AX_OK;
}

static void list_clear(ax_cfg_strlist *l) {
    for (int i = 0; i < l->n; i++) free(l->v[i]);
    free(l->v);
    l->n = 0;
    l->v = NULL;
}

/* range-checks an integer for an INT entry; `text` is how the value was written (messages) */
static ax_status set_int(const ax_cfg_entry *e, void *obj, int64_t v, const char *text,
                         const char *where) {
    if (has_range(e) && ((double)v < e->min || (double)v > e->max))
        return range_error(e, text, where, "is out of range");
    *(int64_t *)field(obj, e) = v;
    return AX_OK;
}

/* `where` prefixes messages with the source ("cfg.txt:3: "), "" for flags. */
static ax_status set_entry(const ax_cfg_entry *e, void *obj, const char *value, const char *where) {
    switch (e->type) {
    case AX_CFG_INT: {
        /* strict decimal (lib/core/cliargs.h): "0x10", "010", "+5", " 5" and "5k" are errors, not
         * 16, 8 or 5; integral exponent forms such as 1e6 are accepted for token counts */
        int64_t v = 0;
        int r = ax_parse_i64(value, &v);
        if (r == 0) return range_error(e, value, where, "is not an integer");
        if (r < 0) return range_error(e, value, where, "is out of range");
        return set_int(e, obj, v, value, where);
    }
    case AX_CFG_FLOAT: {
        double d = 0;
        int r = ax_parse_f64(value, &d);
        if (r == 0) return range_error(e, value, where, "is not a number");
        if (r < 0) return range_error(e, value, where, "is out of range");
        if (has_range(e) && (d < e->min || d > e->max))
            return range_error(e, value, where, "is out of range");
        *(double *)field(obj, e) = d;
        return AX_OK;
    }
    case AX_CFG_STR: {
        size_t n = strlen(value);
        if (n >= AX_CFG_STR_MAX)
            return ax_errorf(AX_ERR_ARG, "%s--%s is %zu characters long; at most %d are allowed",
                             where, e->name, n, AX_CFG_STR_MAX - 1);
        memcpy(field(obj, e), value, n + 1);
        return AX_OK;
    }
    case AX_CFG_BOOL: {
        int b;
        if (!parse_bool(value, &b))
            return ax_errorf(AX_ERR_ARG, "%s--%s=%s is not a boolean; use true or false", where,
                             e->name, value);
        *(int *)field(obj, e) = b;
        return AX_OK;
    }
    case AX_CFG_STRLIST:
        return list_append(field(obj, e), value, e->name);
    case AX_CFG_CHOICE: {
        char w[AX_CFG_STR_MAX];
        for (int i = 0; choice_word(e, i, w, sizeof w); i++)
            if (!strcmp(w, value)) {
                memcpy(field(obj, e), w, strlen(w) + 1);
                return AX_OK;
            }
        char list[1024];
        choice_list(e, list, sizeof list);
        return ax_errorf(AX_ERR_ARG, "%s--%s '%s' is not allowed: use %s", where, e->name, value,
                         list);
    }
    }
    return ax_errorf(AX_ERR_INTERNAL, "config entry --%s has an unknown type", e->name);
}

ax_status ax_cfg_set_defaults(const ax_cfg_table *t, void *obj) {
    /* lists first, so that ax_cfg_free is safe whatever fails below; obj may be garbage: set,
     * never free */
    if (t->positional) *list_at(obj, t->positional->offset) = (ax_cfg_strlist){0};
    for (int i = 0; i < t->n; i++)
        if (t->entries[i].type == AX_CFG_STRLIST)
            *(ax_cfg_strlist *)field(obj, &t->entries[i]) = (ax_cfg_strlist){0};
    for (int i = 0; i < t->n; i++) {
        const ax_cfg_entry *e = &t->entries[i];
        if (e->type == AX_CFG_STRLIST) {
            if (e->def && *e->def)
                return ax_errorf(AX_ERR_INTERNAL,
                                 "list flag --%s must default to \"\": a bug in the config table",
                                 e->name);
            continue;
        }
        char first[AX_CFG_STR_MAX];
        const char *def = e->def ? e->def : "";
        if (e->type == AX_CFG_CHOICE) def = choice_word(e, 0, first, sizeof first) ? first : "";
        if (set_entry(e, obj, def, "") != AX_OK)
            return ax_errorf(AX_ERR_INTERNAL, "bad default for --%s: a bug in the config table",
                             e->name);
    }
    return AX_OK;
}

void ax_cfg_free(const ax_cfg_table *t, void *obj) {
    if (t->positional) list_clear(list_at(obj, t->positional->offset));
    for (int i = 0; i < t->n; i++)
        if (t->entries[i].type == AX_CFG_STRLIST) list_clear(field(obj, &t->entries[i]));
}

ax_status ax_cfg_set(const ax_cfg_table *t, void *obj, const char *name, const char *value,
                     uint8_t *was_set) {
    const ax_cfg_entry *e = ax_cfg_find(t, name);
    if (!e) return unknown_name(t, name, "");
    AX_CHECK(set_entry(e, obj, value, ""));
    if (was_set) was_set[e - t->entries] = 1;
    return AX_OK;
}

static char *trim(char *s) {
    while (*s == ' ' || *s == '\t' || *s == '\r') s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r')) s[--n] = 0;
    return s;
}

/* A JSON object file (e.g. the "config" object from a manifest): unknown keys are errors here
 * because a person wrote or chose this file. */
static ax_status load_json_file(const ax_cfg_table *t, void *obj, const char *path,
                                const char *text, size_t len, uint8_t *was_set) {
    ax_json *root;
    AX_CHECK(ax_json_parse(text, len, path, &root));
    ax_status st = AX_OK;
    if (root->type != AX_JSON_OBJ)
        st = ax_errorf(AX_ERR_ARG, "%s: expected a JSON object of flag names to values", path);
    for (size_t i = 0; st == AX_OK && i < root->n; i++) {
        char where[600];
        snprintf(where, sizeof where, "%s: ", path);
        if (!ax_cfg_find(t, root->keys[i])) st = unknown_name(t, root->keys[i], where);
    }
    if (st == AX_OK) st = ax_cfg_read_json(t, obj, root, path);
    for (size_t i = 0; st == AX_OK && was_set && i < root->n; i++)
        was_set[ax_cfg_find(t, root->keys[i]) - t->entries] = 1;
    ax_json_free(root);
    return st;
}

ax_status ax_cfg_load_file(const ax_cfg_table *t, void *obj, const char *path, uint8_t *was_set) {
    char *text;
    size_t len;
    AX_CHECK(ax_read_file_max(path, AX_CFG_FILE_MAX, &text, &len));
    /* the file is read whole: a NUL byte would silently end the text the line parser sees */
    const char *nul = memchr(text, 0, len);
    if (nul) {
        size_t line = 1, col = 1;
        for (const char *q = text; q < nul; q++, col++)
            if (*q == '\n') line++, col = 0;
        ax_status st = ax_errorf(AX_ERR_ARG,
                                 "%s:%zu: NUL byte at column %zu; a config file is text (name = "
                                 "value lines, or JSON): fix or regenerate it",
                                 path, line, col);
        free(text);
        return st;
    }
    ax_status st = AX_OK;
    char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (*p == '{') {
        st = load_json_file(t, obj, path, text, len, was_set);
        free(text);
        return st;
    }
    int lineno = 0;
    for (char *line = text; line && st == AX_OK;) {
        char *next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        char where[600];
        snprintf(where, sizeof where, "%s:%d: ", path, lineno);
        char *s = trim(line);
        line = next;
        if (*s == 0 || *s == '#') continue;
        char *eq = strchr(s, '=');
        if (!eq) {
            st = ax_errorf(AX_ERR_ARG, "%sexpected \"name = value\", got \"%s\"", where, s);
            break;
        }
        *eq = 0;
        char *name = trim(s), *value = trim(eq + 1);
        if (!strncmp(name, "--", 2)) name += 2; /* tolerate pasted flags */
        size_t vn = strlen(value);
        if (vn >= 2 && value[0] == '"' && value[vn - 1] == '"') { /* quoted: kept verbatim */
            value[vn - 1] = 0;
            value++;
        } else { /* unquoted: " # ..." starts a comment */
            for (char *h = value; *h; h++)
                if (*h == '#' && (h == value || h[-1] == ' ' || h[-1] == '\t')) {
                    *h = 0;
                    value = trim(value);
                    break;
                }
        }
        const ax_cfg_entry *e = ax_cfg_find(t, name);
        if (!e) {
            st = unknown_name(t, name, where);
            break;
        }
        st = set_entry(e, obj, value, where);
        if (st == AX_OK && was_set) was_set[e - t->entries] = 1;
    }
    free(text);
    return st;
}

static int is_flag(const char *a) {
    return a[0] == '-' && a[1] == '-';
}

/* How many arguments after argv[i] (a "--name" without '=') are its values: none for a
 * boolean or an unknown name, every following non-flag for a list, else one. */
static int n_values(const ax_cfg_table *t, int argc, char **argv, int i) {
    const ax_cfg_entry *e = ax_cfg_find(t, argv[i] + 2);
    if (!e || e->type == AX_CFG_BOOL) return 0;
    if (e->type != AX_CFG_STRLIST) return i + 1 < argc;
    int k = 0;
    while (i + 1 + k < argc && !is_flag(argv[i + 1 + k])) k++;
    return k;
}

/* Applies every --config FILE first, so that command-line flags win whatever their order. */
static ax_status load_config_flags(const ax_cfg_table *t, void *obj, int argc, char **argv,
                                   uint8_t *was_set, const char *cmd) {
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (!strcmp(a, "--")) break; /* the rest is positional */
        if (!strcmp(a, "--config")) {
            if (i + 1 >= argc)
                return ax_errorf(AX_ERR_ARG, "--config needs a file: --config FILE (see %s --help)",
                                 cmd);
            v = argv[++i];
        } else if (!strncmp(a, "--config=", 9)) {
            v = a + 9;
        } else if (is_flag(a) && !strchr(a, '=')) {
            i += n_values(t, argc, argv, i); /* skip its values: they may look like flags */
        }
        if (v) AX_CHECK(ax_cfg_load_file(t, obj, v, was_set));
    }
    return AX_OK;
}

/* A non-flag argument: the table's positional, or an error that says why it is not one. */
static ax_status take_positional(const ax_cfg_table *t, void *obj, char **argv, int i,
                                 const char *cmd) {
    const char *a = argv[i];
    const ax_cfg_positional *p = t->positional;
    if (p) {
        ax_cfg_strlist *l = list_at(obj, p->offset);
        if (!p->many && l->n > 0)
            return ax_errorf(AX_ERR_ARG, "'%s' takes one %s; got '%s' and '%s' (see %s --help)",
                             cmd, p->name, l->v[0], a, cmd);
        return list_append(l, a, p->name);
    }
    if (i > 1 && is_flag(argv[i - 1])) {
        const ax_cfg_entry *prev = ax_cfg_find(t, argv[i - 1] + 2);
        if (prev && prev->type == AX_CFG_BOOL)
            return ax_errorf(AX_ERR_ARG,
                             "unexpected argument '%s' after --%s; a boolean flag takes "
                             "no separate value: write --%s=%s (see %s --help)",
                             a, prev->name, prev->name, a, cmd);
    }
    return ax_errorf(AX_ERR_ARG,
                     "unexpected argument '%s' for '%s': it takes only --flags; see %s --help", a,
                     cmd, cmd);
}

/* "--name[=value]" at argv[*i]; advances *i past the values it takes. */
static ax_status take_flag(const ax_cfg_table *t, void *obj, int argc, char **argv, int *i,
                           uint8_t *was_set, const char *cmd) {
    char name[256];
    const char *body = argv[*i] + 2, *eq = strchr(body, '=');
    size_t nl = eq ? (size_t)(eq - body) : strlen(body);
    if (nl >= sizeof name) return unknown_name(t, body, "");
    memcpy(name, body, nl);
    name[nl] = 0;
    const ax_cfg_entry *e = ax_cfg_find(t, name);
    if (!e && !eq && !strncmp(name, "no-", 3)) {
        const ax_cfg_entry *b = ax_cfg_find(t, name + 3);
        if (b && b->type == AX_CFG_BOOL) {
            *(int *)field(obj, b) = 0;
            if (was_set) was_set[b - t->entries] = 1;
            return AX_OK;
        }
    }
    if (!e) return unknown_name(t, name, "");
    if (eq) {
        AX_CHECK(set_entry(e, obj, eq + 1, ""));
    } else if (e->type == AX_CFG_BOOL) {
        AX_CHECK(set_entry(e, obj, "true", ""));
    } else {
        int k = n_values(t, argc, argv, *i);
        if (k > 0 && e->type != AX_CFG_STRLIST && is_flag(argv[*i + 1])) k = 0;
        if (k == 0)
            return ax_errorf(AX_ERR_ARG,
                             "--%s needs a value: --%s VALUE or --%s=VALUE (see %s --help)", name,
                             name, name, cmd);
        for (int j = 1; j <= k; j++) AX_CHECK(set_entry(e, obj, argv[*i + j], ""));
        *i += k;
    }
    if (was_set) was_set[e - t->entries] = 1;
    return AX_OK;
}

/* argv[0] is the command's own name (as in main) and is skipped. */
ax_status ax_cfg_parse_argv(const ax_cfg_table *t, void *obj, int argc, char **argv,
                            uint8_t *was_set, int *help) {
    char cmd[128];
    cmd_name(t, cmd, sizeof cmd);
    if (help) *help = 0;
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (ax_cli_is_help(argv[i])) {
            if (help) *help = 1;
            return AX_OK;
        }
    AX_CHECK(load_config_flags(t, obj, argc, argv, was_set, cmd));
    int rest = 0; /* after "--": positional only */
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!rest && !strcmp(a, "--") && t->positional) {
            rest = 1;
        } else if (!rest && !strcmp(a, "--config")) {
            i++;
        } else if (!rest && !strncmp(a, "--config=", 9)) {
            continue;
        } else if (!rest && is_flag(a) && a[2]) {
            AX_CHECK(take_flag(t, obj, argc, argv, &i, was_set, cmd));
        } else {
            AX_CHECK(take_positional(t, obj, argv, i, cmd));
        }
    }
    const ax_cfg_positional *p = t->positional;
    if (p && p->required && list_at(obj, p->offset)->n == 0)
        return ax_errorf(AX_ERR_ARG, "%s is required: %s %s (see %s --help)", p->name, cmd, p->name,
                         cmd);
    return AX_OK;
}

static void flag_left(const ax_cfg_entry *e, char *out, size_t size) {
    if (e->type == AX_CFG_BOOL)
        snprintf(out, size, "--%s, --no-%s", e->name, e->name);
    else if (e->type == AX_CFG_STRLIST)
        snprintf(out, size, "--%s %s...", e->name, type_word(e->type));
    else if (e->type == AX_CFG_CHOICE) /* the words themselves: "--packing packed|doc" */
        snprintf(out, size, "--%s %s", e->name, e->def ? e->def : "");
    else
        snprintf(out, size, "--%s %s", e->name, type_word(e->type));
}

static void print_usage_line(const ax_cfg_table *t, FILE *f) {
    fprintf(f, "usage: %s", t->usage ? t->usage : "axmem");
    const ax_cfg_positional *p = t->positional;
    if (p) fprintf(f, p->required ? " %s%s" : " [%s%s]", p->name, p->many ? "..." : "");
    fprintf(f, "\n");
    if (t->summary && *t->summary) fprintf(f, "\n%s\n", t->summary);
    if (p) fprintf(f, "\narguments:\n  %s%s  %s\n", p->name, p->many ? "..." : "", p->help);
}

/* A flag's default as shown: a CHOICE's first word, a list's nothing, the text otherwise */
static const char *flag_default(const ax_cfg_entry *e, char *buf, size_t size) {
    if (e->type == AX_CFG_STRLIST) return "";
    if (e->type == AX_CFG_CHOICE) return choice_word(e, 0, buf, size) ? buf : "";
    return e->def ? e->def : "";
}

static int g_markdown; /* ax_cfg_help_markdown */

void ax_cfg_help_markdown(int on) {
    g_markdown = on;
}

/* text for a Markdown table cell: '|' would end the cell and '<' may open an HTML tag */
static void md_cell(const char *s, FILE *f) {
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", f);
        else if (*s == '<')
            fputs("&lt;", f);
        else
            fputc(*s, f);
    }
}

/* docs/cli.md: usage and summary verbatim, the flags as a table */
static void print_markdown(const ax_cfg_table *t, FILE *f) {
    fputs("```text\n", f);
    print_usage_line(t, f);
    fputs("```\n\n| flag | default | description |\n|---|---|---|\n", f);
    char left[200], def[AX_CFG_STR_MAX];
    for (int i = 0; i < t->n; i++) {
        const ax_cfg_entry *e = &t->entries[i];
        flag_left(e, left, sizeof left);
        fputs("| `", f);
        md_cell(left, f);
        fputs("` | ", f);
        const char *d = flag_default(e, def, sizeof def);
        if (*d) {
            fputc('`', f);
            md_cell(d, f);
            fputc('`', f);
        }
        if (has_range(e) && (e->type == AX_CFG_INT || e->type == AX_CFG_FLOAT))
            fprintf(f, " (%.15g..%.15g)", e->min, e->max);
        fputs(" | ", f);
        md_cell(e->help ? e->help : "", f);
        if (e->type == AX_CFG_STRLIST) fputs(" (repeatable)", f);
        fputs(" |\n", f);
    }
    fputs("| `--config FILE` | | read flags from FILE (name = value lines, or JSON); command-line "
          "flags win |\n",
          f);
}

void ax_cfg_print_help(const ax_cfg_table *t, FILE *f) {
    if (g_markdown) {
        print_markdown(t, f);
        return;
    }
    print_usage_line(t, f);
    fprintf(f, "\nflags:\n");
    char left[200], def[AX_CFG_STR_MAX];
    int w = (int)strlen("--config FILE");
    for (int i = 0; i < t->n; i++) {
        flag_left(&t->entries[i], left, sizeof left);
        int l = (int)strlen(left);
        if (l > w) w = l;
    }
    for (int i = 0; i < t->n; i++) {
        const ax_cfg_entry *e = &t->entries[i];
        flag_left(e, left, sizeof left);
        fprintf(f, "  %-*s  %s", w, left, e->help ? e->help : "");
        const char *d = flag_default(e, def, sizeof def);
        if (e->type == AX_CFG_STRLIST) {
            fprintf(f, " (repeatable)");
        } else if (e->type == AX_CFG_CHOICE) {
            char list[1024];
            choice_list(e, list, sizeof list);
            fprintf(f, " (%s; default: %s)", list, d);
        } else if (e->type == AX_CFG_STR) {
            fprintf(f, " (default: \"%s\")", d);
        } else {
            fprintf(f, " (default: %s)", d);
        }
        if (has_range(e) && (e->type == AX_CFG_INT || e->type == AX_CFG_FLOAT))
            fprintf(f, " [%.15g..%.15g]", e->min, e->max);
        fputc('\n', f);
    }
    fprintf(f, "  %-*s  %s\n", w, "--config FILE",
            "read flags from FILE (name = value lines, or JSON); command-line flags win");
    fprintf(f, "  %-*s  %s\n", w, "-h, --help", "show this help");
}

void ax_cfg_write_json(const ax_cfg_table *t, const void *obj, ax_jw *w) {
    ax_jw_obj_begin(w);
    for (int i = 0; i < t->n; i++) {
        const ax_cfg_entry *e = &t->entries[i];
        const void *p = cfield(obj, e);
        ax_jw_key(w, e->name);
        switch (e->type) {
        case AX_CFG_INT:
            ax_jw_int(w, (long long)*(const int64_t *)p);
            break;
        case AX_CFG_FLOAT:
            ax_jw_num(w, *(const double *)p);
            break;
        case AX_CFG_STR:
        case AX_CFG_CHOICE:
            ax_jw_str(w, (const char *)p);
            break;
        case AX_CFG_BOOL:
            ax_jw_bool(w, *(const int *)p);
            break;
        case AX_CFG_STRLIST: {
            const ax_cfg_strlist *l = p;
            ax_jw_arr_begin(w);
            for (int k = 0; k < l->n; k++) ax_jw_str(w, l->v[k]);
            ax_jw_arr_end(w);
            break;
        }
        }
    }
    ax_jw_obj_end(w);
}

/* A list reads from an array of strings; its values append, as repeated flags do. */
static ax_status read_json_list(const ax_cfg_entry *e, void *obj, const ax_json *v,
                                const char *what) {
    int ok = v->type == AX_JSON_ARR;
    for (size_t k = 0; ok && k < v->n; k++)
        ok = v->items[k]->type == AX_JSON_STR && strlen(v->items[k]->str) == v->items[k]->str_len;
    if (!ok)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: \"%s\" should be an array of strings; fix or regenerate the file",
                         what, e->name);
    for (size_t k = 0; k < v->n; k++)
        AX_CHECK(list_append(field(obj, e), v->items[k]->str, e->name));
    return AX_OK;
}

ax_status ax_cfg_read_json(const ax_cfg_table *t, void *obj, const ax_json *o, const char *what) {
    if (!o || o->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: the config is not a JSON object; the file is damaged",
                         what);
    for (int i = 0; i < t->n; i++) {
        const ax_cfg_entry *e = &t->entries[i];
        const ax_json *v = ax_json_get(o, e->name);
        if (!v) continue;
        if (e->type == AX_CFG_STRLIST) {
            AX_CHECK(read_json_list(e, obj, v, what));
            continue;
        }
        char where[600], text[64];
        snprintf(where, sizeof where, "%s: ", what);
        const char *value = NULL;
        int ok = 0;
        switch (e->type) {
        case AX_CFG_INT:
            /* converted only when finite, integral and inside int64 (a cast would be UB) */
            if (v->type == AX_JSON_NUM) {
                snprintf(text, sizeof text, "%.17g", v->num);
                if (!isfinite(v->num) || v->num != floor(v->num) ||
                    v->num < -9223372036854775808.0 || v->num >= 9223372036854775808.0)
                    return range_error(e, text, where, "is not an integer in range");
                AX_CHECK(set_int(e, obj, (int64_t)v->num, text, where));
                continue;
            }
            break;
        case AX_CFG_FLOAT:
            ok = v->type == AX_JSON_NUM;
            if (ok) snprintf(text, sizeof text, "%.17g", v->num), value = text;
            break;
        case AX_CFG_STR:
        case AX_CFG_CHOICE:
            ok = v->type == AX_JSON_STR && strlen(v->str) == v->str_len;
            value = v->str;
            break;
        case AX_CFG_BOOL:
            ok = v->type == AX_JSON_BOOL;
            value = v->num ? "true" : "false";
            break;
        case AX_CFG_STRLIST: /* handled above */
            break;
        }
        if (!ok)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: \"%s\" should be %s %s; fix or regenerate the file", what,
                             e->name, e->type == AX_CFG_INT ? "an" : "a", type_word(e->type));
        AX_CHECK(set_entry(e, obj, value, where));
    }
    return AX_OK;
}
