/* MPI driver: one saved index served by any number of ranks. --build makes
 * a corpus with planted duplicates and indexes it on every rank of the job (one file); --query
 * opens that file on every rank of another job, splits a fixed list of count queries (planted
 * windows, dataset windows, random windows) between the ranks, answers them through
 * ax_memscan_index_lookup_routed (each window looked up by the rank serving its hash range)
 * and gathers the answers on rank 0 in query order into --out. Each routed answer is also
 * checked against a direct lookup, and on more than one rank some windows must have been
 * served by another rank. tests/mpi/memscan.sh builds on 4 ranks, queries on 1, 2 and 4 and
 * compares the files.
 *
 * usage: mpi_index_serve --build DIR | --query DIR --out FILE
 * Exits 0 only if every check passed on every rank. */
#include "data/axd.h"
#include "lib/core/log.h"
#include "lib/core/rng.h"
#include "index/hash.h"
#include "index/index.h"
#include "tests/support/synth.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 12
#define Q 3000 /* queries */

static int rank, size;

static const ax_memscan_synth_opts OPTS = {.vocab = 4000,
                                           .n_docs = 300,
                                           .doc_len_min = 40,
                                           .doc_len_max = 200,
                                           .alphabet = 3000,
                                           .n_passages = 4,
                                           .passage_len = 60,
                                           .copies = 2,
                                           .copies_growth = 3,
                                           .seed = 12};

static int fail(const char *what, ax_status st) {
    fprintf(stderr, "mpi_index_serve [r%d]: %s: %s\n", rank, what,
            st != AX_OK ? ax_error_msg() : "");
    return 1;
}

static int do_build(const char *dir) {
    char path[512], ipath[530];
    snprintf(path, sizeof path, "%s/serve.axd", dir);
    snprintf(ipath, sizeof ipath, "%s/serve.idx", dir);
    ax_status st = AX_OK;
    if (rank == 0) st = ax_memscan_synth_write(path, &OPTS, NULL, NULL);
    MPI_Bcast(&st, sizeof st, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (st != AX_OK) return fail("write corpus", st);
    ax_axd_t *ds = NULL;
    if ((st = ax_axd_open(path, 1, &ds)) != AX_OK) return fail("open corpus", st);
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = N;
    o.round_windows = 2000; /* several exchange rounds */
    ax_memscan_index_t *idx = NULL;
    if ((st = ax_memscan_index_build(ds, &o, &idx)) != AX_OK) return fail("build", st);
    if ((st = ax_memscan_index_save(idx, ipath, NULL)) != AX_OK) return fail("save", st);
    int bad = ax_memscan_index_info(idx)->build_ranks != (uint32_t)size;
    if (bad) fprintf(stderr, "mpi_index_serve: build_ranks is not %d\n", size);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return bad;
}

/* query q: planted windows (i % 3 == 0), dataset windows (1), random tokens (2) */
static void make_query(const ax_axd_t *ds, int q, int32_t *w) {
    uint64_t D = ax_axd_n_docs(ds);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    if (q % 3 == 0) {
        int32_t p[60];
        ax_memscan_synth_passage(&OPTS, (uint32_t)(q / 3) % OPTS.n_passages, p);
        memcpy(w, p + ax_rng_below(5, 1, (uint64_t)q, 60 - N + 1), sizeof *w * N);
    } else if (q % 3 == 1) {
        uint64_t d = ax_rng_below(5, 2, (uint64_t)q, D), end = ax_ms_doc_text_end(ds, d);
        uint64_t s = off[d] + ax_rng_below(5, 3, (uint64_t)q, end - off[d] - N + 1);
        ax_axd_tokens(ds, s, N, w);
    } else {
        for (int i = 0; i < N; i++)
            w[i] = (int32_t)ax_rng_below(5, 4 + (uint64_t)i, (uint64_t)q, OPTS.alphabet);
    }
}

static int do_query(const char *dir, const char *out) {
    char path[512], ipath[530];
    snprintf(path, sizeof path, "%s/serve.axd", dir);
    snprintf(ipath, sizeof ipath, "%s/serve.idx", dir);
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *idx = NULL;
    ax_status st;
    if ((st = ax_axd_open(path, 1, &ds)) != AX_OK) return fail("open corpus", st);
    if ((st = ax_memscan_index_open(ipath, ds, &idx)) != AX_OK) return fail("open index", st);
    /* this rank's share of the queries: [a, b) */
    int a = (int)((long)Q * rank / size), b = (int)((long)Q * (rank + 1) / size), k = b - a;
    size_t K = k > 0 ? (size_t)k : 1; /* allocation sizes */
    int32_t *w = malloc(sizeof *w * N * K);
    uint32_t *cnt = malloc(sizeof *cnt * K);
    uint64_t *first = malloc(sizeof *first * K);
    for (int i = 0; i < k; i++) make_query(ds, a + i, w + (size_t)i * N);
    uint8_t *dmg = malloc(K);
    if ((st = ax_memscan_index_lookup_routed(idx, w, (size_t)k, cnt, first, dmg)) != AX_OK)
        return fail("routed lookup", st);
    int bad = 0, remote = 0, found = 0;
    for (int i = 0; i < k; i++) {
        uint32_t c;
        uint64_t f;
        int hit = ax_memscan_index_lookup(idx, w + (size_t)i * N, &c, &f);
        if (!hit) c = 0, f = 0;
        if (dmg[i]) bad++; /* a sound index: no answer is marked damaged */
        if (c != cnt[i] || f != first[i]) {
            if (!bad++)
                fprintf(stderr,
                        "mpi_index_serve [r%d]: query %d: routed (%u, %llu), direct (%u, %llu)\n",
                        rank, a + i, cnt[i], (unsigned long long)first[i], c,
                        (unsigned long long)f);
        }
        remote += ax_memscan_index_server(idx, w + (size_t)i * N, size) != rank;
        found += cnt[i] > 0;
    }
    /* answers to rank 0 in query order */
    uint64_t *mine = malloc(sizeof *mine * 2 * K), *all = NULL;
    for (int i = 0; i < k; i++) mine[2 * i] = cnt[i], mine[2 * i + 1] = first[i];
    size_t S = size > 0 ? (size_t)size : 1;
    int *rc = malloc(sizeof *rc * S), *rd = malloc(sizeof *rd * S);
    for (int r = 0; r < size; r++) {
        int ra = (int)((long)Q * r / size), rb = (int)((long)Q * (r + 1) / size);
        rc[r] = 2 * (rb - ra);
        rd[r] = 2 * ra;
    }
    if (rank == 0) all = malloc(sizeof *all * 2 * Q);
    MPI_Gatherv(mine, 2 * k, MPI_UINT64_T, all, rc, rd, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int tot[2] = {remote, found}, sum[2];
    MPI_Allreduce(tot, sum, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *f = fopen(out, "w");
        if (!f) bad++;
        for (int q = 0; f && q < Q; q++)
            fprintf(f, "%d %llu %llu\n", q, (unsigned long long)all[2 * q],
                    (unsigned long long)all[2 * q + 1]);
        if (f && fclose(f)) bad++;
        /* planted and dataset windows are all present; on > 1 rank some were served remotely */
        if (sum[1] < 2 * Q / 3) bad++, fprintf(stderr, "only %d queries found\n", sum[1]);
        if (size > 1 && sum[0] == 0) bad++, fprintf(stderr, "no query was routed\n");
        printf("mpi_index_serve: %d ranks, %d queries, %d found, %d served by another rank\n", size,
               Q, sum[1], sum[0]);
    }
    if ((st = ax_memscan_index_check(idx)) != AX_OK) bad++, fail("index check", st);
    free(all);
    free(rc);
    free(rd);
    free(mine);
    free(w);
    free(cnt);
    free(first);
    free(dmg);
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return bad != 0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ax_log_set_level(AX_LOG_WARN);
    int bad;
    if (argc == 3 && strcmp(argv[1], "--build") == 0)
        bad = do_build(argv[2]);
    else if (argc == 5 && strcmp(argv[1], "--query") == 0 && strcmp(argv[3], "--out") == 0)
        bad = do_query(argv[2], argv[4]);
    else {
        if (rank == 0)
            fprintf(stderr, "usage: mpi_index_serve --build DIR | --query DIR --out FILE\n");
        bad = 2;
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
