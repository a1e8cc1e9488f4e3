/* memscan index throughput on one core, each rate next to the ceiling measured in the same
 * run over the same tokens: XXH3 of every window (what the build and a lookup cannot avoid).
 * Synthetic datasets (random tokens from a 50k alphabet, plus planted duplicated passages) of
 * growing size show whether build time is linear in tokens.
 *
 * usage: bench_memscan [--build-only] [SIZES] [n]   SIZES: comma list with K/M suffixes (default
 *        1M,10M,100M); --build-only: the ceiling and the build alone (wall and CPU time ratios)
 *        mpirun -np P bench_memscan --build-only SIZES: the same per rank, all ranks at once
 *        bench_memscan --write-data PATH.axd TOKENS [PLANTS.jsonl]   only write the dataset
 *        (bench/peers/), and its planted passages as lookup queries (bench/index_scale.sh)
 * Targets (issue 5): build >= 25% of the hash ceiling per core; <= 16 bytes per window. The
 * occurrence lists (issue 8) add bytes only for windows that occur more than once: printed
 * per distinct window and per listed position. Issue 12: a cold single-query process (build/bin/
 * axmem memscan lookup run for one 64-token passage: exec, shared libraries, the dataset and the
 * index opened in place, one answer), the same inside a forked process (no exec: the open and
 * answer costs alone), and a batch (1000 passages in one process, as `lookup --file Q.jsonl`):
 * targets < 200 ms per single-query process and < 10 ms per batch query at 100M tokens. */
#include "data/axd.h"
#include "lib/core/log.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "lib/core/timer.h"
#include "index/hash.h"
#include "index/index.h"
#include "tests/support/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;

/* this process's CPU seconds (user + system): on a shared machine a ratio of CPU times moves
 * less than one of wall times, which other processes' load stretches unevenly */
static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* XXH3 of every window starting in [lo, hi) (the whole dataset: 0, T), tokens copied to
 * int32 in chunks as the build does */
static double hash_ceiling(const ax_axd_t *ds, int n, uint64_t lo, uint64_t hi, uint64_t *windows,
                           double *cpu) {
    const uint64_t chunk = 1 << 20, T = ax_axd_n_tokens(ds);
    int32_t *buf = malloc(sizeof *buf * (chunk + (uint64_t)n));
    uint64_t acc = 0, w = 0;
    double t0 = ax_now(), c0 = cpu_now();
    for (uint64_t s = lo; s < hi && s + (uint64_t)n <= T; s += chunk) {
        uint64_t m = T - s < chunk + (uint64_t)n - 1 ? T - s : chunk + (uint64_t)n - 1;
        ax_axd_tokens(ds, s, m, buf);
        for (uint64_t i = 0; i + (uint64_t)n <= m && i < chunk && s + i < hi; i++, w++)
            acc += ax_ms_hash(buf + i, n, 0, 64);
    }
    double dt = ax_now() - t0;
    *cpu = cpu_now() - c0;
    sink = acc;
    free(buf);
    *windows = w;
    return dt;
}

static uint64_t parse_size(const char *s) {
    char *end;
    double v = strtod(s, &end);
    if (*end == 'k' || *end == 'K') v *= 1e3;
    if (*end == 'm' || *end == 'M') v *= 1e6;
    if (*end == 'g' || *end == 'G') v *= 1e9;
    return (uint64_t)v;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* what a fresh process pays: open the dataset and the index (in place), answer passage 0;
 * then every passage as a batch would. Times in seconds, written by the child to a pipe:
 * [0] dataset open, [1] index open, [2] first answer, [3] batch median, [4] batch p90,
 * [5] batch mean, [6] hash alone per passage, [7] answers with a span (sanity). */
#define COLD_N 8
static void cold_child(const char *path, const char *ipath, const int32_t *qs, size_t nq,
                       size_t qlen, int n, double *r) {
    double t0 = ax_now();
    ax_axd_t *ds;
    ax_memscan_index_t *idx;
    if (ax_axd_open(path, 0, &ds) != AX_OK) return;
    r[0] = ax_now() - t0;
    t0 = ax_now();
    if (ax_memscan_index_open(ipath, ds, &idx) != AX_OK) return;
    r[1] = ax_now() - t0;
    uint32_t *cnt = malloc(sizeof *cnt * qlen);
    uint64_t *fp = malloc(sizeof *fp * qlen);
    double *lat = malloc(sizeof *lat * nq);
    for (size_t k = 0; k < nq; k++) {
        t0 = ax_now();
        ax_memscan_span *sp = NULL;
        size_t ns = 0;
        ax_memscan_find_spans(idx, qs + k * qlen, qlen, 8, &sp, &ns);
        ax_memscan_index_lookup_all(idx, qs + k * qlen, qlen, cnt, fp);
        free(sp);
        lat[k] = ax_now() - t0;
        if (k == 0) r[2] = lat[0];
        r[7] += ns > 0;
        r[5] += lat[k] / (double)nq;
    }
    t0 = ax_now();
    uint64_t acc = 0;
    for (size_t k = 0; k < nq; k++)
        for (size_t i = 0; i + (size_t)n <= qlen; i++)
            acc += ax_ms_hash(qs + k * qlen + i, n, 0, 64);
    sink = acc;
    r[6] = (ax_now() - t0) / (double)nq;
    if (nq > 1) {
        qsort(lat + 1, nq - 1, sizeof *lat, cmp_double);
        r[3] = lat[1 + (nq - 1) / 2];
        r[4] = lat[1 + (nq - 1) * 9 / 10];
    }
    free(lat);
    free(cnt);
    free(fp);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
}

/* r as above plus r[COLD_N] = the process's wall time, fork to exit; 0 when it failed */
static int cold_process(const char *path, const char *ipath, const int32_t *qs, size_t nq,
                        size_t qlen, int n, double *r) {
    int fd[2];
    if (pipe(fd) != 0) return 0;
    double t0 = ax_now();
    pid_t pid = fork();
    if (pid < 0) return 0;
    if (pid == 0) {
        double c[COLD_N] = {0};
        close(fd[0]);
        cold_child(path, ipath, qs, nq, qlen, n, c);
        ssize_t w = write(fd[1], c, sizeof c);
        _exit(w == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], r, sizeof(double) * COLD_N);
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    r[COLD_N] = ax_now() - t0;
    return got == (ssize_t)(sizeof(double) * COLD_N) && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0 && r[1] > 0;
}

static char g_axmem[4096]; /* the CLI next to this bench (build/bin/axmem), "" if absent */

/* Wall seconds of one process running `axmem ARGS...` (fork, exec, exit) with its output
 * discarded; < 0 when it failed. What a user pays for one query: the program's start (its
 * shared libraries) included. */
static double cli_process(char *const *args) {
    double t0 = ax_now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr)) _exit(127);
        execv(g_axmem, args);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    double dt = ax_now() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? dt : -1;
}

/* median of REPS runs of cli_process, < 0 if any failed */
static double cli_median(char *const *args, int reps) {
    double v[16];
    for (int r = 0; r < reps; r++)
        if ((v[r] = cli_process(args)) < 0) return -1;
    qsort(v, (size_t)reps, sizeof *v, cmp_double);
    return v[reps / 2];
}

/* The planted passages as `memscan lookup --file` queries, one JSON line each: {"id": j,
 * "tokens": [...], "copies": c, "places": [[doc, offset], ...]} (copies in document order; a
 * lookup ignores the extra keys' values but they tell a checker what to expect). */
static void write_plants(const char *path, const ax_memscan_synth_opts *o,
                         const ax_memscan_plant *pl, size_t np) {
    FILE *f = fopen(path, "w");
    int32_t *tok = malloc(sizeof *tok * o->passage_len);
    if (!f || !tok) {
        fprintf(stderr, "bench_memscan: cannot write %s\n", path);
        exit(1);
    }
    for (uint32_t j = 0; j < o->n_passages; j++) {
        ax_memscan_synth_passage(o, j, tok);
        size_t c = 0;
        for (size_t k = 0; k < np; k++) c += pl[k].passage == j;
        fprintf(f, "{\"id\": %u, \"copies\": %zu, \"tokens\": [", j, c);
        for (uint32_t i = 0; i < o->passage_len; i++) fprintf(f, "%s%d", i ? ", " : "", tok[i]);
        fprintf(f, "], \"places\": [");
        const char *sep = "";
        for (size_t k = 0; k < np; k++)
            if (pl[k].passage == j) {
                fprintf(f, "%s[%llu, %llu]", sep, (unsigned long long)pl[k].doc,
                        (unsigned long long)pl[k].offset);
                sep = ", ";
            }
        fprintf(f, "]}\n");
    }
    free(tok);
    if (fclose(f) != 0) {
        fprintf(stderr, "bench_memscan: cannot write %s\n", path);
        exit(1);
    }
}

/* The benchmark's dataset of about `tokens` tokens: ~1000-token documents; 1% of documents
 * carry a passage copied 2..512 times (also written alone by --write-data, for bench/peers) */
static void write_data(const char *path, uint64_t tokens, const char *plants_path) {
    ax_memscan_synth_opts o = {.vocab = 50257,
                               .doc_len_min = 500,
                               .doc_len_max = 1500,
                               .alphabet = 50000,
                               .passage_len = 200,
                               .copies = 2,
                               .copies_growth = 4,
                               .seed = 42};
    o.n_docs = tokens / 1001;
    o.n_passages = 5; /* 2 + 8 + 32 + 128 + 512 copies */
    if (o.n_docs < 700) o.n_passages = 3;
    ax_memscan_plant *pl = NULL;
    size_t np = 0;
    if (ax_memscan_synth_write(path, &o, plants_path ? &pl : NULL, &np) != AX_OK) {
        fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
        exit(1);
    }
    if (plants_path) write_plants(plants_path, &o, pl, np);
    free(pl);
}

static int g_build_only; /* --build-only: the ceiling and the build, no save or lookups */

static void bench_size(uint64_t tokens, int n, int first) {
    char path[256], ipath[300];
    snprintf(path, sizeof path, "/tmp/bench_memscan_%d_%llu.axd", (int)getpid(),
             (unsigned long long)tokens);
    snprintf(ipath, sizeof ipath, "%s.idx", path);
    double t0 = ax_now();
    write_data(path, tokens, NULL);
    double t_gen = ax_now() - t0;
    ax_axd_t *ds;
    if (ax_axd_open(path, 1, &ds) != AX_OK) {
        fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
        exit(1);
    }
    uint64_t T = ax_axd_n_tokens(ds), W;
    /* ceiling: best of 2 (the first pass also pages the dataset in) */
    double c_hash, c2;
    double t_hash = hash_ceiling(ds, n, 0, T, &W, &c_hash), t2 = hash_ceiling(ds, n, 0, T, &W, &c2);
    if (t2 < t_hash) t_hash = t2;
    if (c2 < c_hash) c_hash = c2;
    double ceil_wps = (double)W / t_hash;

    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    bo.n = n;
    /* best of 2 builds: the first also pays for the system handing over fresh pages, which
     * varies run to run (a VM's host backs them lazily) */
    ax_memscan_index_t *idx = NULL;
    double t_build = 1e30, c_build = 1e30;
    for (int rep = 0; rep < 2; rep++) {
        ax_memscan_index_free(idx);
        t0 = ax_now();
        double c0 = cpu_now();
        if (ax_memscan_index_build(ds, &bo, &idx) != AX_OK) {
            fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
            exit(1);
        }
        double dt = ax_now() - t0, dc = cpu_now() - c0;
        if (dt < t_build) t_build = dt;
        if (dc < c_build) c_build = dc;
    }
    const ax_memscan_info *in = ax_memscan_index_info(idx);
    double build_wps = (double)in->n_windows / t_build;
    double bpd = (double)ax_memscan_index_table_bytes(idx) / (double)in->n_distinct;
    double bpw = (double)ax_memscan_index_table_bytes(idx) / (double)in->n_windows;
    double occ_b = (double)ax_memscan_index_occ_bytes(idx);

    if (g_build_only) {
        if (first)
            printf("%-7s %9s %11s %9s %7s %10s %9s %7s\n", "tokens", "windows", "hash Mw/s",
                   "build", "%ceil", "hash CPU", "build CPU", "%ceil");
        printf("%-7.0e %9.3g %11.1f %8.2fs %6.1f%% %9.2fs %8.2fs %6.1f%%\n", (double)T,
               (double)in->n_windows, ceil_wps / 1e6, t_build, 100.0 * build_wps / ceil_wps, c_hash,
               c_build, 100.0 * c_hash * (double)in->n_windows / (double)W / c_build);
        fflush(stdout);
        ax_memscan_index_free(idx);
        ax_axd_free(ds);
        unlink(path);
        return;
    }
    t0 = ax_now();
    ax_memscan_index_save(idx, ipath, NULL);
    double t_save = ax_now() - t0;
    struct stat sb;
    stat(ipath, &sb);
    ax_memscan_index_t *ld;
    t0 = ax_now();
    if (ax_memscan_index_load(ipath, ds, &ld) != AX_OK) {
        fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
        exit(1);
    }
    double t_load = ax_now() - t0;
    /* cold processes: 64-token passages, half from the data (hits), half fresh (misses) */
    enum { QL = 64, NQ = 1000, REPS = 5 };
    int32_t *cq = malloc(sizeof *cq * QL * NQ);
    uint64_t cs = 11;
    for (size_t k = 0; k < NQ; k++) {
        if (k % 2 == 0)
            ax_axd_tokens(ds, splitmix(&cs) % (T - QL), QL, cq + k * QL);
        else
            for (size_t i = 0; i < QL; i++) cq[k * QL + i] = (int32_t)(splitmix(&cs) % 50000);
    }
    double cold[REPS][COLD_N + 1], med[COLD_N + 1], one[REPS][COLD_N + 1], med1[COLD_N + 1];
    int cold_ok = 1;
    for (int r = 0; r < REPS && cold_ok; r++)
        cold_ok = cold_process(path, ipath, cq, NQ, QL, n, cold[r]) &&
                  cold_process(path, ipath, cq, 1, QL, n, one[r]);
    for (int f = 0; f <= COLD_N && cold_ok; f++) {
        double v[REPS], v1[REPS];
        for (int r = 0; r < REPS; r++) v[r] = cold[r][f], v1[r] = one[r][f];
        qsort(v, REPS, sizeof *v, cmp_double);
        qsort(v1, REPS, sizeof *v1, cmp_double);
        med[f] = v[REPS / 2];
        med1[f] = v1[REPS / 2];
    }
    /* the CLI as a user runs it for one passage: a fresh program (exec), the query in a file */
    double cli_one = -1, cli_start = -1;
    char qpath[320];
    snprintf(qpath, sizeof qpath, "%s.q.jsonl", path);
    FILE *qf = g_axmem[0] ? fopen(qpath, "w") : NULL;
    if (qf) {
        fprintf(qf, "{\"tokens\": [");
        for (size_t i = 0; i < QL; i++) fprintf(qf, "%s%d", i ? ", " : "", cq[i]);
        fprintf(qf, "]}\n");
        if (fclose(qf) == 0) {
            char *a1[] = {g_axmem, "memscan", "lookup", "--index", ipath, "--data",
                          path,    "--file",  qpath,    "--json",  NULL};
            char *a0[] = {g_axmem, "--help", NULL};
            cli_one = cli_median(a1, REPS);
            cli_start = cli_median(a0, REPS);
        }
        unlink(qpath);
    }
    free(cq);

    /* lookups: 1024-token slices of the dataset (hits) and of fresh random tokens (misses),
     * as a generation scan would present them; and the same windows one by one */
    const size_t L = 1024, S = 400;
    int32_t *q = malloc(sizeof *q * L * S);
    uint32_t *cnt = malloc(sizeof *cnt * L);
    uint64_t *fp = malloc(sizeof *fp * L), rs = 7, hits = 0;
    for (size_t s = 0; s < S; s++) {
        if (s % 2 == 0) {
            uint64_t p = splitmix(&rs) % (T - L);
            ax_axd_tokens(ds, p, L, q + s * L);
        } else {
            for (size_t i = 0; i < L; i++) q[s * L + i] = (int32_t)(splitmix(&rs) % 50000);
        }
    }
    size_t per = L - (size_t)n + 1;
    t0 = ax_now();
    for (size_t s = 0; s < S; s++) {
        ax_memscan_index_lookup_all(ld, q + s * L, L, cnt, fp);
        for (size_t i = 0; i < per; i++) hits += cnt[i] > 0;
    }
    double t_look = ax_now() - t0;
    t0 = ax_now(); /* the same on the built in-memory table (what version 2 loaded into) */
    uint64_t hits_mem = 0;
    for (size_t s = 0; s < S; s++) {
        ax_memscan_index_lookup_all(idx, q + s * L, L, cnt, fp);
        for (size_t i = 0; i < per; i++) hits_mem += cnt[i] > 0;
    }
    double t_look_mem = ax_now() - t0;
    t0 = ax_now();
    uint64_t hits1 = 0;
    for (size_t s = 0; s < S; s++)
        for (size_t i = 0; i < per; i++) {
            uint32_t c;
            uint64_t f;
            hits1 += (uint64_t)ax_memscan_index_lookup(ld, q + s * L + i, &c, &f);
        }
    double t_look1 = ax_now() - t0;
    double nl = (double)(S * per);
    /* the hash alone over the same query windows */
    t0 = ax_now();
    uint64_t acc = 0;
    for (size_t s = 0; s < S; s++)
        for (size_t i = 0; i < per; i++) acc += ax_ms_hash(q + s * L + i, n, 0, 64);
    double t_qhash = ax_now() - t0;
    sink = acc;

    if (first) {
        printf("memscan index, n = %d, 1 core (serial build; windows cross no document edge)\n", n);
        printf("%-7s %9s %9s %11s %9s %8s %8s %7s %7s %7s %7s\n", "tokens", "windows", "distinct",
               "hash Mw/s", "build", "ns/tok", "%ceil", "B/dist", "B/win", "file B", "load s");
    }
    printf("%-7.0e %9.3g %9.3g %11.1f %8.2fs %8.1f %7.1f%% %7.2f %7.2f %7.2f %7.2f\n", (double)T,
           (double)in->n_windows, (double)in->n_distinct, ceil_wps / 1e6, t_build,
           t_build / (double)T * 1e9, 100.0 * build_wps / ceil_wps, bpd, bpw,
           (double)sb.st_size / (double)in->n_distinct, t_load);
    printf("        build %.1f M windows/s = %.1f M tokens/s per core (ceiling %.1f M windows/s); "
           "in CPU time %.2f s = %.1f%% of the ceiling's %.2f s; save %.2f s; dataset written "
           "in %.1f s\n",
           build_wps / 1e6, (double)T / t_build / 1e6, ceil_wps / 1e6, c_build,
           100.0 * c_hash * (double)in->n_windows / (double)W / c_build, c_hash, t_save, t_gen);
    printf("        occurrence lists: %.3g repeated windows, %.3g positions: %.2f MB = %.2f B per "
           "distinct window, %.2f B per position listed (table + lists %.2f B/dist)\n",
           (double)in->n_dup, (double)in->n_dup_pos, occ_b / 1e6, occ_b / (double)in->n_distinct,
           in->n_dup_pos ? occ_b / (double)in->n_dup_pos : 0.0,
           bpd + occ_b / (double)in->n_distinct);
    printf("        lookups in the saved index (in place): %.2f M/s in 1024-token sequences, "
           "%.2f M/s one by one; in the in-memory table %.2f M/s (hash alone %.1f M/s; %.0f%% "
           "of them hits: %s)\n",
           nl / t_look / 1e6, nl / t_look1 / 1e6, nl / t_look_mem / 1e6, nl / t_qhash / 1e6,
           100.0 * (double)hits / nl, hits == hits1 && hits == hits_mem ? "all agree" : "DISAGREE");
    if (cold_ok) {
        if (cli_one >= 0)
            printf(
                "        cold single-query process (median of %d): `axmem memscan lookup --file` "
                "with one %d-token passage %.1f ms fork + exec to exit, of which the program's "
                "start alone (`axmem --help`: its shared libraries) %.1f ms\n",
                REPS, QL, cli_one * 1e3, cli_start * 1e3);
        else
            printf("        cold single-query process: no %s to run\n",
                   g_axmem[0] ? g_axmem : "build/bin/axmem");
        printf("        one query in a forked process (median of %d): %.1f ms fork to exit = "
               "dataset open %.2f ms + index open %.2f ms (in place) + first %d-token passage "
               "%.2f ms (+ fork and exit of this large process); full load (every page "
               "verified) %.0f ms\n",
               REPS, med1[COLD_N] * 1e3, med1[0] * 1e3, med1[1] * 1e3, QL, med1[2] * 1e3,
               t_load * 1e3);
        printf(
            "        batch of %d passages in a forked process (%.1f ms fork to exit): median %.1f "
            "us, p90 %.1f us, mean %.1f us per passage (XXH3 of its windows alone %.2f us = "
            "%.1f%% of it; %.0f with a span)\n",
            NQ, med[COLD_N] * 1e3, med[3] * 1e6, med[4] * 1e6, med[5] * 1e6, med[6] * 1e6,
            med[3] > 0 ? 100.0 * med[6] / med[3] : 0.0, med[7]);
    } else {
        printf("        cold process: FAILED (%s)\n", ax_error_msg());
    }
    fflush(stdout);
    free(q);
    free(cnt);
    free(fp);
    ax_memscan_index_free(ld);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    unlink(path);
    unlink(ipath);
    char j[320];
    snprintf(j, sizeof j, "%s.json", ipath);
    unlink(j);
}

/* Under mpirun (--build-only): every rank hashes its slice of the dataset at the same time (the
 * ceiling with all cores busy, as the build keeps them), then the ranks build one index. The
 * ratio is the build's windows per second over the ceiling's, both for all ranks together:
 * per rank, the share of its core's hash rate the build reaches. Best of 2 of each. */
static void bench_build_ranks(uint64_t tokens, int n, int first) {
    ax_grid_t *g;
    if (ax_grid_create_world(&g) != AX_OK) {
        fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
        exit(1);
    }
    int P = ax_grid_size(g), r = ax_grid_rank(g);
    char path[256];
    uint64_t tag = (uint64_t)getpid();
    ax_coll_allreduce(g, AX_AXIS_WORLD, &tag, 1, AX_DT_U64, AX_OP_MAX); /* one name for all */
    snprintf(path, sizeof path, "/tmp/bench_memscan_%llu_%llu.axd", (unsigned long long)tag,
             (unsigned long long)tokens);
    if (r == 0) write_data(path, tokens, NULL);
    ax_barrier(g, AX_AXIS_WORLD);
    ax_axd_t *ds;
    if (ax_axd_open(path, 1, &ds) != AX_OK) {
        fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
        exit(1);
    }
    uint64_t T = ax_axd_n_tokens(ds), lo = T * (uint64_t)r / (uint64_t)P,
             hi = T * (uint64_t)(r + 1) / (uint64_t)P, W = 0;
    double t_hash = 1e30, c;
    for (int rep = 0; rep < 2; rep++) {
        ax_barrier(g, AX_AXIS_WORLD);
        double t = hash_ceiling(ds, n, lo, hi, &W, &c);
        ax_coll_allreduce(g, AX_AXIS_WORLD, &t, 1, AX_DT_F64, AX_OP_MAX); /* the slowest rank */
        if (t < t_hash) t_hash = t;
    }
    ax_coll_allreduce(g, AX_AXIS_WORLD, &W, 1, AX_DT_U64, AX_OP_SUM);
    ax_memscan_build_opts bo;
    ax_memscan_build_opts_default(&bo);
    bo.n = n;
    double t_build = 1e30;
    uint64_t nw = 0;
    for (int rep = 0; rep < 2; rep++) {
        ax_barrier(g, AX_AXIS_WORLD);
        ax_memscan_index_t *idx;
        double t0 = ax_now();
        if (ax_memscan_index_build(ds, &bo, &idx) != AX_OK) {
            fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
            exit(1);
        }
        double dt = ax_now() - t0;
        ax_coll_allreduce(g, AX_AXIS_WORLD, &dt, 1, AX_DT_F64, AX_OP_MAX);
        if (dt < t_build) t_build = dt;
        nw = ax_memscan_index_info(idx)->n_windows;
        ax_memscan_index_free(idx);
    }
    if (r == 0) {
        if (first)
            printf("%-7s %5s %9s %16s %9s %12s %7s\n", "tokens", "ranks", "windows",
                   "hash Mw/s/rank", "build", "Mw/s/rank", "%ceil");
        double ceil_r = (double)W / t_hash / P, build_r = (double)nw / t_build / P;
        printf("%-7.0e %5d %9.3g %16.1f %8.2fs %12.1f %6.1f%%\n", (double)T, P, (double)nw,
               ceil_r / 1e6, t_build, build_r / 1e6, 100.0 * build_r / ceil_r);
        fflush(stdout);
    }
    ax_axd_free(ds);
    ax_barrier(g, AX_AXIS_WORLD);
    if (r == 0) unlink(path);
    ax_grid_free(g);
}

int main(int argc, char **argv) {
    ax_log_set_level(AX_LOG_WARN);
    ax_log_init(); /* AXMEM_LOG=debug shows the build's phase times */
    if (ax_mpi_start(&argc, &argv) != AX_OK) {
        fprintf(stderr, "bench_memscan: %s\n", ax_error_msg());
        return 1;
    }
    if ((argc == 4 || argc == 5) && strcmp(argv[1], "--write-data") == 0) {
        if (parse_size(argv[3]) < 2000) {
            fprintf(stderr,
                    "bench_memscan --write-data PATH.axd TOKENS [PLANTS.jsonl]: TOKENS >= 2K\n");
            return 2;
        }
        write_data(argv[2], parse_size(argv[3]), argc == 5 ? argv[4] : NULL);
        return 0;
    }
    /* build/bench/bench_memscan -> build/bin/axmem */
    char self[2048];
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl > 0) {
        self[sl] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(g_axmem, sizeof g_axmem, "%s/../bin/axmem", self);
            if (access(g_axmem, X_OK) != 0) g_axmem[0] = 0;
        }
    }
    if (argc > 1 && strcmp(argv[1], "--build-only") == 0) {
        g_build_only = 1;
        argc--, argv++;
    }
    const char *sizes = argc > 1 ? argv[1] : "1M,10M,100M";
    int n = argc > 2 ? atoi(argv[2]) : 32;
    char *list = strdup(sizes);
    int first = 1;
    if (ax_mpi_world_size() > 1 && !g_build_only) {
        fprintf(stderr, "bench_memscan: under mpirun only --build-only is measured\n");
        ax_mpi_stop();
        return 2;
    }
    for (char *tok = strtok(list, ","); tok; tok = strtok(NULL, ","), first = 0) {
        if (ax_mpi_world_size() > 1)
            bench_build_ranks(parse_size(tok), n, first);
        else
            bench_size(parse_size(tok), n, first);
    }
    free(list);
    if (ax_mpi_world_size() > 1) {
        ax_mpi_stop();
        return 0;
    }
    printf("targets: build >= 25%% of the hash ceiling per core; <= 16 bytes per window; at 100M "
           "tokens a cold single-query process < 200 ms and a batch query < 10 ms (median)\n");
    return 0;
}
