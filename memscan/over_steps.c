/* One scan over the checkpoints of a run, and its curve file (memscan/over_steps.h). */
#include "memscan/over_steps.h"
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
    ax_status st = ax_jw_text(&w) ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory");
    char tmp[AX_MS_PATH_MAX + 64];
    int fd = -1;
    if (st == AX_OK) st = ax_create_temp(c->path, 0, tmp, sizeof tmp, &fd);
    if (st == AX_OK) {
        st = ax_write_all(fd, ax_jw_text(&w), strlen(ax_jw_text(&w)), tmp);
        if (st == AX_OK && (ax_write_all(fd, "\n", 1, tmp) != AX_OK || fsync(fd) != 0))
            st = ax_errorf(AX_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
        close(fd);
        if (st == AX_OK) st = ax_rename_durable(tmp, c->path);
        if (st != AX_OK) unlink(tmp);
    }
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

static int depth; /* > 0 while the loop runs the command: its own calls go straight through */

typedef struct {
    int all, help;
    const char *list, *ckpt, *out, *samples_out;
    int argc; /* the other arguments, argv[0] first */
    char **argv;
} steps_args;

/* value of "--name V" / "--name=V" at argv[*i]; NULL when argv[*i] is not that flag */
static const char *flag_value(int argc, char **argv, int *i, const char *name, int *missing) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, "--", 2) || strncmp(a + 2, name, n)) return NULL;
    if (a[2 + n] == '=') return a + 3 + n;
    if (a[2 + n]) return NULL;
    if (*i + 1 >= argc) {
        *missing = 1;
        return NULL;
    }
    return argv[++*i];
}

/* Takes --all-steps, --steps, --ckpt, --out, --samples-out out of argv (the loop sets the last
 * three per step); the rest is kept for the command. 0, or 2 after a usage message. */
static int split_args(const char *sub, int argc, char **argv, steps_args *a) {
    memset(a, 0, sizeof *a);
    a->argv = calloc((size_t)argc + 8, sizeof(char *));
    if (!a->argv) return 1;
    a->argv[a->argc++] = argv[0];
    int rest = 0;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i], *v;
        int missing = 0;
        if (rest || !strcmp(s, "--")) {
            rest = 1;
            a->argv[a->argc++] = argv[i];
        } else if (!strcmp(s, "--all-steps") || !strcmp(s, "--all-steps=true")) {
            a->all = 1;
        } else if (!strcmp(s, "--no-all-steps") || !strcmp(s, "--all-steps=false")) {
            a->all = 0;
        } else if ((v = flag_value(argc, argv, &i, "steps", &missing))) {
            a->list = v;
        } else if ((v = flag_value(argc, argv, &i, "ckpt", &missing))) {
            a->ckpt = v;
        } else if ((v = flag_value(argc, argv, &i, "out", &missing))) {
            a->out = v;
        } else if ((v = flag_value(argc, argv, &i, "samples-out", &missing))) {
            a->samples_out = v;
        } else if (missing) {
            if (ax_mpi_world_rank() == 0)
                fprintf(stderr, "axmem memscan %s: %s needs a value\n", sub, s);
            return 2;
        } else {
            if (!strcmp(s, "--help") || !strcmp(s, "-h")) a->help = 1;
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

/* where step s writes: its --out (and --samples-out), the scan JSON, and that name relative to
 * the curve's folder; AX_ERR_ARG when a path gets too long */
static ax_status step_paths(const ax_ms_steps_kind *k, const steps_args *a, const char *out,
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
    if (a->samples_out) {
        ax_dirname(a->samples_out, dir, sizeof dir);
        bad |= path_fmt(step_samples, "%s/%s/%s", dir, name, base_of(a->samples_out));
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

static int run_loop(const ax_ms_steps_kind *k, int (*cmd)(int, char **), const steps_args *a,
                    const char *out) {
    const char *sub = k->name;
    int rank0 = ax_mpi_world_rank() == 0, rc = 0, n = 0, done = 0;
    ax_ms_step *steps = NULL;
    ax_ms_curve *curve = NULL;
    char cpath[AX_MS_PATH_MAX], *ok = NULL;
    ax_status st = ax_ms_steps_list(a->ckpt, a->list, &steps, &n);
    if (st != AX_OK) return fail(sub, st);
    st = curve_path(k, out, cpath);
    if (st == AX_OK) st = ax_ms_curve_new(cpath, sub, a->ckpt, &curve);
    ok = calloc((size_t)n, 1);
    if (st == AX_OK && !ok) st = ax_errorf(AX_ERR_NOMEM, "out of memory");
    if (st != AX_OK) goto out;
    int good = check_steps(sub, steps, n, ok, curve), at = 0;
    char **argv = malloc(sizeof(char *) * (size_t)(a->argc + 8));
    char step_out[AX_MS_PATH_MAX], step_samples[AX_MS_PATH_MAX], scan[AX_MS_PATH_MAX],
        rel[AX_MS_PATH_MAX], dir[AX_MS_PATH_MAX];
    if (!argv) st = ax_errorf(AX_ERR_NOMEM, "out of memory");
    for (int i = 0; st == AX_OK && rc == 0 && i < n; i++) {
        if (!ok[i]) continue;
        const ax_ms_step *s = &steps[i];
        st = step_paths(k, a, out, s, step_out, step_samples, scan, rel);
        if (st == AX_OK && rank0) {
            ax_dirname(k->out_is_dir ? scan : step_out, dir, sizeof dir);
            st = ax_mkdir_p(dir);
            if (st == AX_OK && step_samples[0]) {
                ax_dirname(step_samples, dir, sizeof dir);
                st = ax_mkdir_p(dir);
            }
            fprintf(stderr, "axmem memscan %s: step %ld (%d of %d): %s\n", sub, s->step, ++at, good,
                    s->path);
        }
        if ((st = agree(st)) != AX_OK) break;
        int m = 0;
        for (int j = 0; j < a->argc; j++) argv[m++] = a->argv[j];
        argv[m++] = "--ckpt", argv[m++] = (char *)s->path;
        argv[m++] = "--out", argv[m++] = step_out;
        if (step_samples[0]) argv[m++] = "--samples-out", argv[m++] = step_samples;
        argv[m] = NULL;
        depth++;
        rc = cmd(m, argv);
        depth--;
        if (rc != 0) {
            if (rank0)
                fprintf(stderr,
                        "axmem memscan %s: stopped at step %ld (the scan failed, exit %d); %s "
                        "holds the %d steps before it\n",
                        sub, s->step, rc, cpath, done);
            break;
        }
        if (rank0) st = add_point(k, curve, s, scan, rel);
        if (rank0 && st == AX_OK) st = ax_ms_curve_write(curve);
        st = agree(st);
        done += st == AX_OK;
    }
    free(argv);
    if (st == AX_OK && rank0 && (rc != 0 || !done)) st = ax_ms_curve_write(curve);
    if (st == AX_OK && rc == 0 && !done)
        st = ax_errorf(AX_ERR_IO, "no checkpoint of %s could be scanned (reasons above)", a->ckpt);
    if (st == AX_OK && rc == 0 && rank0)
        fprintf(stderr, "axmem memscan %s: wrote %s: %d step%s%s\n", sub, cpath, done,
                done == 1 ? "" : "s",
                n - good ? " (some checkpoints were skipped: see its \"skipped\" list)" : "");
out:
    free(ok);
    free(steps);
    ax_ms_curve_free(curve);
    if (rc != 0) return rc;
    return st == AX_OK ? 0 : fail(sub, st);
}

int ax_ms_over_steps(const ax_ms_steps_kind *k, int (*cmd)(int, char **), int argc, char **argv) {
    if (depth > 0) return -1;
    steps_args a;
    int rc = split_args(k->name, argc, argv, &a);
    if (rc == 0 && a.help) {
        depth++; /* without the loop's flags, which the command does not know */
        rc = cmd(a.argc, a.argv);
        depth--;
        if (ax_mpi_world_rank() == 0) print_help();
    } else if (rc == 0 && !a.all && !a.list) {
        rc = -1;
    } else if (rc == 0) {
        const char *out = a.out ? a.out : k->default_out;
        ax_error_clear();
        if (a.all && a.list)
            rc = fail(k->name, ax_errorf(AX_ERR_ARG, "give --all-steps or --steps LIST, not both"));
        else if (!a.ckpt)
            rc = fail(k->name, ax_errorf(AX_ERR_ARG,
                                         "--%s needs --ckpt RUN_DIR on the command "
                                         "line (the run whose checkpoints to scan)",
                                         a.all ? "all-steps" : "steps"));
        else if (!out[0])
            rc = fail(k->name, ax_errorf(AX_ERR_ARG,
                                         "--out is required; see axmem memscan %s "
                                         "--help",
                                         k->name));
        else
            rc = run_loop(k, cmd, &a, out);
    }
    free(a.argv);
    return rc;
}
