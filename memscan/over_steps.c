/* One scan over the checkpoints of a run, and its curve file (memscan/over_steps.h). */
#include "memscan/over_steps.h"
#include "lib/core/cliargs.h"
#include "lib/ckpt/ckpt.h"
#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- step enumeration ---- */

/* step number of a "step-NNNNNN" name; -1 for anything else (step-5.partial, notes) */
static long step_of(const char *name) {
    if (strncmp(name, "step-", 5) || !name[5]) return -1;
    long v = 0;
    for (const char *p = name + 5; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000000L) return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int cmp_step(const void *a, const void *b) {
    long x = ((const ax_ms_step *)a)->step, y = ((const ax_ms_step *)b)->step;
    return (x > y) - (x < y);
}

/* every step-NNNNNN directory entry of dir, ascending */
static ax_status scan_dir(const char *dir, ax_ms_step **out, int *n) {
    *out = NULL, *n = 0;
    DIR *d = opendir(dir);
    if (!d) return AX_OK; /* the caller reports an empty run */
    int cap = 0;
    ax_status st = AX_OK;
    for (struct dirent *e; st == AX_OK && (e = readdir(d));) {
        long s = step_of(e->d_name);
        if (s < 0) continue;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            ax_ms_step *p = realloc(*out, sizeof **out * (size_t)cap);
            if (!p) {
                st = ax_errorf(AX_ERR_NOMEM, "out of memory listing %s", dir);
                break;
            }
            *out = p;
        }
        (*out)[*n].step = s;
        snprintf((*out)[*n].path, sizeof(*out)[*n].path, "%s/%s", dir, e->d_name);
        (*n)++;
    }
    closedir(d);
    if (st == AX_OK && *n) qsort(*out, (size_t)*n, sizeof **out, cmp_step);
    return st;
}

/* keeps the steps named in list (comma separated), in ascending order, each once */
static ax_status select_steps(const char *run, const char *list, ax_ms_step *all, int *n) {
    char *keep = calloc((size_t)*n, 1);
    if (!keep) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_status st = AX_OK;
    for (const char *p = list; st == AX_OK && *p;) {
        char *end;
        errno = 0;
        long s = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
        if (s < 0 || errno || (*end && *end != ',')) {
            st = ax_errorf(AX_ERR_ARG,
                           "--steps '%s' is not a list of step numbers; write e.g. "
                           "--steps 100,200,300 (or --all-steps)",
                           list);
            break;
        }
        int at = -1;
        for (int i = 0; i < *n; i++)
            if (all[i].step == s) at = i;
        if (at < 0) {
            st = ax_errorf(AX_ERR_ARG,
                           "--steps %ld: %s has no checkpoint step-%06ld (it has steps %ld to %ld, "
                           "%d checkpoints); pick steps it has, or use --all-steps",
                           s, run, s, all[0].step, all[*n - 1].step, *n);
            break;
        }
        keep[at] = 1;
        p = *end ? end + 1 : end;
    }
    int m = 0;
    for (int i = 0; st == AX_OK && i < *n; i++)
        if (keep[i]) all[m++] = all[i];
    if (st == AX_OK) *n = m;
    free(keep);
    return st;
}

ax_status ax_ms_steps_list(const char *run, const char *list, ax_ms_step **out, int *n) {
    char sub[AX_MS_PATH_MAX];
    snprintf(sub, sizeof sub, "%s/ckpt", run);
    AX_CHECK(scan_dir(sub, out, n));
    if (!*n) AX_CHECK(scan_dir(run, out, n)); /* a ckpt folder passed directly */
    if (!*n)
        return ax_errorf(AX_ERR_IO,
                         "--ckpt %s holds no checkpoints (no step-NNNNNN/ in it or in its "
                         "ckpt/); --all-steps and --steps take a run directory",
                         run);
    ax_status st = list && list[0] ? select_steps(run, list, *out, n) : AX_OK;
    if (st != AX_OK) free(*out), *out = NULL, *n = 0;
    return st;
}

/* ---- the curve file ---- */

typedef struct {
    char **v;
    int n, cap;
} strvec;

struct ax_ms_curve {
    char path[AX_MS_PATH_MAX], kind[32], run[AX_MS_PATH_MAX];
    strvec points, skipped; /* serialised objects */
};

static ax_status push(strvec *s, const ax_jw *w) {
    if (!ax_jw_text(w)) return ax_errorf(AX_ERR_NOMEM, "out of memory building the curve");
    if (s->n == s->cap) {
        int cap = s->cap ? 2 * s->cap : 16;
        char **p = realloc(s->v, sizeof *p * (size_t)cap);
        if (!p) return ax_errorf(AX_ERR_NOMEM, "out of memory building the curve");
        s->v = p, s->cap = cap;
    }
    if (!(s->v[s->n] = strdup(ax_jw_text(w))))
        return ax_errorf(AX_ERR_NOMEM, "out of memory building the curve");
    s->n++;
    return AX_OK;
}

ax_status ax_ms_curve_new(const char *path, const char *kind, const char *run, ax_ms_curve **out) {
    ax_ms_curve *c = calloc(1, sizeof *c);
    if (!c) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    snprintf(c->path, sizeof c->path, "%s", path);
    snprintf(c->kind, sizeof c->kind, "%s", kind);
    snprintf(c->run, sizeof c->run, "%s", run);
    *out = c;
    return AX_OK;
}

void ax_ms_curve_point_begin(ax_jw *w, long step, const char *ckpt) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "step"), ax_jw_int(w, step);
    ax_jw_key(w, "ckpt"), ax_jw_str(w, ckpt);
}

ax_status ax_ms_curve_add(ax_ms_curve *c, const ax_jw *point) {
    return push(&c->points, point);
}

ax_status ax_ms_curve_skip(ax_ms_curve *c, long step, const char *ckpt, const char *reason) {
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_curve_point_begin(&w, step, ckpt);
    ax_jw_key(&w, "reason"), ax_jw_str(&w, reason);
    ax_jw_obj_end(&w);
    ax_status st = push(&c->skipped, &w);
    ax_jw_free(&w);
    return st;
}

static void raw_list(ax_jw *w, const char *key, const strvec *s) {
    ax_jw_key(w, key);
    ax_jw_arr_begin(w);
    for (int i = 0; i < s->n; i++) ax_jw_raw(w, s->v[i]);
    ax_jw_arr_end(w);
}

ax_status ax_ms_curve_write(const ax_ms_curve *c) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "schema"), ax_jw_str(&w, "axmem-curve");
    ax_jw_key(&w, "version"), ax_jw_int(&w, 1);
    ax_jw_key(&w, "scan"), ax_jw_str(&w, c->kind);
    ax_jw_key(&w, "run"), ax_jw_str(&w, c->run);
    raw_list(&w, "points", &c->points);
    raw_list(&w, "skipped", &c->skipped);
    ax_jw_obj_end(&w);
    ax_status st = ax_jw_text(&w) ? ax_write_text_atomic(c->path, ax_jw_text(&w), 0)
                                  : ax_errorf(AX_ERR_NOMEM, "out of memory");
    ax_jw_free(&w);
    return st;
}

static void strvec_free(strvec *s) {
    for (int i = 0; i < s->n; i++) free(s->v[i]);
    free(s->v);
}

void ax_ms_curve_free(ax_ms_curve *c) {
    if (!c) return;
    strvec_free(&c->points), strvec_free(&c->skipped);
    free(c);
}

/* ---- the loop ---- */

typedef struct {
    int all, help;
    const char *list;
    int argc; /* the other arguments, argv[0] first: the scan's own flags */
    char **argv;
} steps_args;

/* Takes --all-steps and --steps out of argv (the scans' tables do not know them); the rest is
 * the scan's. 0, or 2 after a usage message. */
static int split_args(const char *sub, int argc, char **argv, steps_args *a) {
    memset(a, 0, sizeof *a);
    a->argv = calloc((size_t)argc + 1, sizeof(char *));
    if (!a->argv) return 1;
    a->argv[a->argc++] = argv[0];
    int rest = 0, got;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (rest || !strcmp(s, "--")) {
            rest = 1;
            a->argv[a->argc++] = argv[i];
        } else if (!strcmp(s, "--all-steps") || !strcmp(s, "--all-steps=true")) {
            a->all = 1;
        } else if (!strcmp(s, "--no-all-steps") || !strcmp(s, "--all-steps=false")) {
            a->all = 0;
        } else if ((got = ax_cli_flag(argc, argv, &i, "--steps", &a->list)) < 0) {
            if (ax_mpi_world_rank() == 0)
                fprintf(stderr, "axmem memscan %s: --steps needs a value (e.g. 100,200)\n", sub);
            return 2;
        } else if (!got) {
            a->help |= ax_cli_is_help(s);
            a->argv[a->argc++] = argv[i];
        }
    }
    return 0;
}

/* Ranks must agree: rank 0 alone reads the scan back and writes the curve. */
static ax_status agree(ax_status st) {
    ax_grid_t *g = NULL;
    if (ax_grid_create_world(&g) != AX_OK) return AX_ERR_MPI;
    double bad = st != AX_OK;
    ax_status cs = ax_coll_allreduce(g, AX_AXIS_WORLD, &bad, 1, AX_DT_F64, AX_OP_MAX);
    ax_grid_free(g);
    if (cs != AX_OK) return cs;
    if (bad && st == AX_OK)
        st = ax_errorf(AX_ERR_MPI, "another rank failed (its message is above)");
    return st;
}

/* the headline metrics of the scan JSON just written, as a curve point (rank 0) */
static ax_status add_point(const ax_ms_steps_kind *k, ax_ms_curve *c, const ax_ms_step *s,
                           const char *scan, const char *rel) {
    char *text = NULL;
    size_t len = 0;
    ax_json *j = NULL;
    AX_CHECK(ax_read_file_max(scan, 256u << 20, &text, &len));
    ax_status st = ax_json_parse(text, len, scan, &j);
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_curve_point_begin(&w, s->step, s->path);
    ax_jw_key(&w, "scan_file"), ax_jw_str(&w, rel);
    if (st == AX_OK) st = k->point(j, scan, &w);
    ax_jw_obj_end(&w);
    if (st == AX_OK) st = ax_ms_curve_add(c, &w);
    ax_jw_free(&w);
    ax_json_free(j);
    free(text);
    return st;
}

/* a path into dst[AX_MS_PATH_MAX]; 1 when it did not fit (through vsnprintf: -Wformat-truncation
 * cannot see the sizes, the return value is checked instead) */
__attribute__((format(printf, 2, 3))) static int path_fmt(char *dst, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(dst, AX_MS_PATH_MAX, fmt, ap);
    va_end(ap);
    return n < 0 || n >= AX_MS_PATH_MAX;
}

static const char *base_of(const char *p) {
    return strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
}

/* a text setting of the scan's options, by its flag name ("" when the table has none) */
static const char *opt_text(const ax_ms_steps_kind *k, const void *o, const char *name) {
    const ax_cfg_entry *e = ax_cfg_find(k->table, name);
    return e && ax_cfg_is_text(e->type) ? (const char *)o + e->offset : "";
}

/* where step s writes: its --out (and --samples-out), the scan JSON, and that name relative to
 * the curve's folder; AX_ERR_ARG when a path gets too long */
static ax_status step_paths(const ax_ms_steps_kind *k, const char *out, const char *samples_out,
                            const ax_ms_step *s, char *step_out, char *step_samples, char *scan,
                            char *rel) {
    char dir[AX_MS_PATH_MAX], name[64];
    int bad = 0;
    snprintf(name, sizeof name, "step-%06ld", s->step);
    if (k->out_is_dir) {
        bad |= path_fmt(step_out, "%s/%s", out, name);
        bad |= path_fmt(scan, "%s/%s", step_out, k->scan_file);
        bad |= path_fmt(rel, "%s/%s", name, k->scan_file);
    } else {
        ax_dirname(out, dir, sizeof dir);
        bad |= path_fmt(step_out, "%s/%s/%s", dir, name, base_of(out));
        bad |= path_fmt(scan, "%s", step_out);
        bad |= path_fmt(rel, "%s/%s", name, base_of(out));
    }
    step_samples[0] = 0;
    if (samples_out[0]) {
        ax_dirname(samples_out, dir, sizeof dir);
        bad |= path_fmt(step_samples, "%s/%s/%s", dir, name, base_of(samples_out));
    }
    if (bad) return ax_errorf(AX_ERR_ARG, "--out %s makes paths too long; use a shorter one", out);
    return AX_OK;
}

static ax_status curve_path(const ax_ms_steps_kind *k, const char *out, char *path) {
    char dir[AX_MS_PATH_MAX];
    const char *base = base_of(out);
    int bl = (int)strlen(base), bad;
    if (k->out_is_dir) {
        bad = path_fmt(path, "%s/%s.curve.json", out, k->name);
    } else {
        ax_dirname(out, dir, sizeof dir);
        if (bl > 5 && !strcmp(base + bl - 5, ".json")) bl -= 5; /* probe.json -> probe */
        bad = path_fmt(path, "%s/%.*s.curve.json", dir, bl, base);
    }
    if (bad) return ax_errorf(AX_ERR_ARG, "--out %s makes paths too long; use a shorter one", out);
    return AX_OK;
}

static void print_help(void) {
    printf("\nmemorization over training:\n"
           "  --all-steps        with --ckpt RUN_DIR: scan every checkpoint of the run; each\n"
           "                     step's outputs go to a step-NNNNNN/ folder beside --out, and\n"
           "                     NAME.curve.json holds the headline metrics per step\n"
           "  --steps LIST       the same for the listed steps only (e.g. 100,200,300)\n");
}

static int fail(const char *sub, ax_status st) {
    if (ax_mpi_world_rank() == 0)
        fprintf(stderr, "axmem memscan %s: %s\n", sub,
                ax_error_msg()[0] ? ax_error_msg() : ax_status_str(st));
    return st == AX_ERR_ARG ? 2 : 1;
}

/* pre-check: a checkpoint that does not open is skipped, and says why */
static int check_steps(const char *sub, const ax_ms_step *steps, int n, char *ok,
                       ax_ms_curve *curve) {
    int good = 0;
    for (int i = 0; i < n; i++) {
        ax_ckpt_t *ck = NULL;
        ok[i] = ax_ckpt_open(steps[i].path, &ck) == AX_OK;
        ax_ckpt_free(ck);
        good += ok[i];
        if (ok[i]) continue;
        if (ax_mpi_world_rank() == 0)
            fprintf(stderr, "axmem memscan %s: skipping step %ld (%s): %s\n", sub, steps[i].step,
                    steps[i].path, ax_error_msg());
        ax_ms_curve_skip(curve, steps[i].step, steps[i].path, ax_error_msg());
        ax_error_clear();
    }
    return good;
}

/* One step: the scan's options with --ckpt, --out (and --samples-out) of this step, the
 * library call, its headline print, and (rank 0) the curve point. */
static ax_status run_step(const ax_ms_steps_kind *k, const void *base, void *o, void *sum,
                          const ax_ms_step *s, const char *out, ax_ms_curve *curve) {
    char step_out[AX_MS_PATH_MAX], step_samples[AX_MS_PATH_MAX], scan[AX_MS_PATH_MAX],
        rel[AX_MS_PATH_MAX], dir[AX_MS_PATH_MAX];
    int rank0 = ax_mpi_world_rank() == 0;
    ax_status st =
        step_paths(k, out, opt_text(k, base, "samples-out"), s, step_out, step_samples, scan, rel);
    memcpy(o, base, k->opts_size); /* text and numbers only: the scans have no list settings */
    if (st == AX_OK) st = ax_cfg_set(k->table, o, "ckpt", s->path, NULL);
    if (st == AX_OK) st = ax_cfg_set(k->table, o, "out", step_out, NULL);
    if (st == AX_OK && step_samples[0])
        st = ax_cfg_set(k->table, o, "samples-out", step_samples, NULL);
    if (st == AX_OK && rank0) { /* the scans write into existing folders */
        ax_dirname(scan, dir, sizeof dir);
        st = ax_mkdir_p(dir);
        if (st == AX_OK && step_samples[0]) {
            ax_dirname(step_samples, dir, sizeof dir);
            st = ax_mkdir_p(dir);
        }
    }
    AX_CHECK(agree(st));
    memset(sum, 0, k->summary_size);
    AX_CHECK(k->run(o, sum));
    if (rank0) k->print(o, sum, stdout);
    if (rank0) st = add_point(k, curve, s, scan, rel);
    if (rank0 && st == AX_OK) st = ax_ms_curve_write(curve);
    return agree(st);
}

static int run_loop(const ax_ms_steps_kind *k, const steps_args *a, const void *base) {
    const char *sub = k->name, *run = opt_text(k, base, "ckpt"), *out = opt_text(k, base, "out");
    int rank0 = ax_mpi_world_rank() == 0, n = 0, done = 0, at = 0;
    ax_ms_step *steps = NULL;
    ax_ms_curve *curve = NULL;
    char cpath[AX_MS_PATH_MAX], *ok = NULL;
    void *o = NULL, *sum = NULL;
    ax_status st = AX_OK;
    if (a->all && a->list)
        return fail(sub, ax_errorf(AX_ERR_ARG, "give --all-steps or --steps LIST, not both"));
    if (!run[0])
        return fail(sub, ax_errorf(AX_ERR_ARG,
                                   "--%s needs --ckpt RUN_DIR (the run whose "
                                   "checkpoints to scan)",
                                   a->all ? "all-steps" : "steps"));
    if (!out[0])
        return fail(sub,
                    ax_errorf(AX_ERR_ARG, "--out is required; see axmem memscan %s --help", sub));
    AX_CHECK_GOTO(ax_ms_steps_list(run, a->list, &steps, &n), out);
    AX_CHECK_GOTO(curve_path(k, out, cpath), out);
    AX_CHECK_GOTO(ax_ms_curve_new(cpath, sub, run, &curve), out);
    ok = calloc((size_t)n, 1), o = malloc(k->opts_size), sum = malloc(k->summary_size);
    if (!ok || !o || !sum) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory");
        goto out;
    }
    int good = check_steps(sub, steps, n, ok, curve);
    for (int i = 0; st == AX_OK && i < n; i++) {
        if (!ok[i]) continue;
        if (rank0)
            fprintf(stderr, "axmem memscan %s: step %ld (%d of %d): %s\n", sub, steps[i].step, ++at,
                    good, steps[i].path);
        st = run_step(k, base, o, sum, &steps[i], out, curve);
        if (st == AX_OK) {
            done++;
        } else if (rank0) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", ax_error_msg());
            ax_error_clear(); /* the step's message, then where the curve stands */
            ax_errorf(st, "%s (at step %ld; %s holds the %d steps before it)", msg, steps[i].step,
                      cpath, done);
        }
    }
    if (rank0 && (st != AX_OK || !done)) ax_ms_curve_write(curve); /* the skips, at least */
    if (st == AX_OK && !done)
        st = ax_errorf(AX_ERR_IO, "no checkpoint of %s could be scanned (reasons above)", run);
    if (st == AX_OK && rank0)
        fprintf(stderr, "axmem memscan %s: wrote %s: %d step%s%s\n", sub, cpath, done,
                done == 1 ? "" : "s",
                n - good ? " (some checkpoints were skipped: see its \"skipped\" list)" : "");
out:
    free(ok), free(o), free(sum), free(steps);
    ax_ms_curve_free(curve);
    return st == AX_OK ? 0 : fail(sub, st);
}

int ax_ms_over_steps(const ax_ms_steps_kind *k, int argc, char **argv) {
    steps_args a;
    int rc = split_args(k->name, argc, argv, &a);
    void *base = NULL;
    if (rc == 0 && !a.all && !a.list && !a.help) {
        rc = -1; /* one checkpoint: the command as it was */
    } else if (rc == 0 && !(base = malloc(k->opts_size))) {
        rc = 1;
    } else if (rc == 0) {
        char cmd[64];
        snprintf(cmd, sizeof cmd, "memscan %s", k->name);
        ax_error_clear();
        rc = ax_cli_parse(cmd, k->table, base, a.argc, a.argv, NULL); /* prints --help */
        if (rc == 0 && ax_mpi_world_rank() == 0) print_help();
        if (rc < 0) rc = run_loop(k, &a, base);
        ax_cfg_free(k->table, base);
    }
    free(base);
    free(a.argv);
    return rc;
}
