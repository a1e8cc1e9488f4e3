/* MPI driver for the memscan index: builds indexes of several planted corpora on all ranks of
 * MPI_COMM_WORLD and checks each against a brute-force reference computed locally: every
 * shard's counts and first occurrences, the global histogram, and the saved file loaded
 * serially on every rank. Run under mpirun at 1, 2, 4 ranks (tests/mpi/memscan.sh).
 *
 * usage: mpi_index [--bits B] [--dir DIR]   (B < 64 masks hashes: collisions everywhere)
 * Prints one verdict line on rank 0; exits 0 only if every check passed on every rank. */
#include "data/axd.h"
#include "lib/core/log.h"
#include "tests/support/brute.h"
#include "index/index.h"
#include "tests/support/synth.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;
static int failures;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        fprintf(stderr, "mpi_index [r%d]: ", rank);                                                \
        fprintf(stderr, __VA_ARGS__);                                                              \
        fprintf(stderr, "\n");                                                                     \
        failures++;                                                                                \
    } while (0)

/* random documents plus one long run of a single token: every window of that run is the same,
 * so its owner receives far more than a round's share and the exchange must split */
static ax_status write_skewed(const char *path) {
    ax_axd_writer_t *w;
    ax_status st = ax_axd_writer_create(path, 300, &w);
    if (st != AX_OK) return st;
    int32_t doc[3000];
    uint64_t s = 77;
    for (int d = 0; d < 12 && st == AX_OK; d++) {
        int len = d == 5 ? 3000 : 20 + d * 13;
        for (int i = 0; i < len; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            doc[i] = d == 5 ? 7 : (int32_t)((s >> 40) % 9);
        }
        st = ax_axd_writer_add_doc(w, doc, (size_t)len);
    }
    if (st != AX_OK) {
        ax_axd_writer_abort(w);
        return st;
    }
    return ax_axd_writer_close(w);
}

typedef struct {
    const char *name;
    int n;
    uint64_t round;
    ax_memscan_synth_opts o; /* vocab 0: the skewed corpus */
    int min_bits;            /* collisions cost O(cluster) each: big corpora get more bits */
} corpus;

/* messages: the pairs go as MPI messages, as between hosts (ax_memscan_build_opts.messages_only);
 * else ranks on this host exchange them through shared memory */
static void check_corpus(const corpus *c, const char *dir, int bits, int messages) {
    char path[512], ipath[512];
    snprintf(path, sizeof path, "%s/%s.axd", dir, c->name);
    snprintf(ipath, sizeof ipath, "%s/%s.np%d.idx", dir, c->name, size);
    int ok = 1;
    if (rank == 0) {
        ax_status st =
            c->o.vocab ? ax_memscan_synth_write(path, &c->o, NULL, NULL) : write_skewed(path);
        if (st != AX_OK) {
            FAIL("%s: writing the corpus: %s", c->name, ax_error_msg());
            ok = 0;
        }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (!ok) return;
    ax_axd_t *ds;
    if (ax_axd_open(path, 1, &ds) != AX_OK) {
        FAIL("%s: %s", c->name, ax_error_msg());
        return; /* every rank fails the same way here */
    }
    ax_memscan_brute ref;
    if (ax_memscan_brute_build(ds, c->n, &ref) != AX_OK) {
        FAIL("%s: reference: %s", c->name, ax_error_msg());
        ax_axd_free(ds);
        return;
    }
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.n = c->n;
    o.round_windows = c->round;
    o.hash_bits = bits < c->min_bits ? c->min_bits : bits;
    o.messages_only = messages;
    ax_memscan_index_t *idx = NULL;
    ax_status st = ax_memscan_index_build(ds, &o, &idx);
    char why[512];
    if (st != AX_OK) {
        FAIL("%s: build: %s", c->name, ax_error_msg());
    } else {
        /* my shard, and the global info */
        uint64_t bad = ax_memscan_brute_check(idx, &ref, why, sizeof why);
        if (bad)
            FAIL("%s: shard of rank %d: %llu mismatches; first: %s", c->name, rank,
                 (unsigned long long)bad, why);
        uint64_t local = ax_memscan_index_local_entries(idx), total = 0;
        MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (total != ref.n_distinct)
            FAIL("%s: shards hold %llu entries, reference %llu distinct", c->name,
                 (unsigned long long)total, (unsigned long long)ref.n_distinct);
        st = ax_memscan_index_save(idx, ipath, NULL);
        if (st != AX_OK) FAIL("%s: save: %s", c->name, ax_error_msg());
        /* the build's and save's traffic is in the comm statistics (lib/dist/comm.h): each
         * pair for another rank as one u64 (8 bytes: hash bits over a round offset; a rank's
         * own pairs never travel), plus one i32 count per peer per round; shards streamed to
         * rank 0; nothing at all on one rank. With full hashes (64 bits) the owners are
         * uniform, so in a big corpus about (P - 1) / P of the pairs travel; 16-byte pairs would
         * exceed the bound (1.25x that, in 8 bytes). */
        ax_comm_stats cs;
        ax_memscan_index_comm_stats(idx, &cs);
        double pairs = cs.bytes[AX_COMM_ALLTOALL][AX_AXIS_WORLD], all = 0;
        long rounds = cs.calls[AX_COMM_ALLTOALL][AX_AXIS_WORLD] / 2, n_win = 0;
        MPI_Allreduce(&pairs, &all, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        n_win = (long)ax_memscan_index_info(idx)->n_windows;
        if (size == 1 && ax_comm_stats_bytes_total(&cs) != 0)
            FAIL("%s: a serial build counts %.0f bytes", c->name, ax_comm_stats_bytes_total(&cs));
        double travel = o.hash_bits == 64 && n_win > 1000 ? 1.25 * (size - 1) / size : 1.0;
        if (size > 1 && messages &&
            (cs.bytes[AX_COMM_ALLREDUCE][AX_AXIS_WORLD] <= 0 || rounds < 1 ||
             all > 8.0 * travel * n_win + 4.0 * (size - 1) * size * rounds ||
             (n_win > 100 && all <= 0)))
            FAIL("%s: exchange bytes %.0f over %ld rounds for %ld windows", c->name, all, rounds,
                 n_win);
        /* through shared memory no pair is a message */
        if (size > 1 && !messages && all != 0)
            FAIL("%s: %.0f bytes of pairs sent as messages on one host", c->name, all);
        /* gathered on rank 0: each entry raw (16 bytes), an 8-byte count per message and
         * the end, 16 bytes of list sizes */
        if (size > 1 && rank != 0 &&
            cs.bytes[AX_COMM_SEND][AX_AXIS_WORLD] < 24.0 + 16.0 * (double)local)
            FAIL("%s: rank %d streamed %.0f bytes to rank 0 for %llu entries", c->name, rank,
                 cs.bytes[AX_COMM_SEND][AX_AXIS_WORLD], (unsigned long long)local);
    }
    ax_memscan_index_free(idx);
    /* the one file, loaded whole on every rank */
    if (st == AX_OK) {
        ax_memscan_index_t *whole;
        if (ax_memscan_index_load(ipath, ds, &whole) != AX_OK) {
            FAIL("%s: load: %s", c->name, ax_error_msg());
        } else {
            uint64_t bad = ax_memscan_brute_check(whole, &ref, why, sizeof why);
            if (bad)
                FAIL("%s: loaded index: %llu mismatches; first: %s", c->name,
                     (unsigned long long)bad, why);
            if (ax_memscan_index_info(whole)->build_ranks != (uint32_t)size)
                FAIL("%s: header says built on %u ranks", c->name,
                     ax_memscan_index_info(whole)->build_ranks);
            ax_memscan_index_free(whole);
        }
    }
    ax_memscan_brute_free(&ref);
    ax_axd_free(ds);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ax_log_init();
    ax_log_set_rank(rank);
    ax_log_set_level(AX_LOG_WARN);
    int bits = 64;
    const char *dir = NULL;
    char defdir[256];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bits") && i + 1 < argc)
            bits = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
        else {
            if (rank == 0) fprintf(stderr, "usage: mpi_index [--bits B] [--dir DIR]\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (!dir) {
        /* rank 0's pid names the folder: every rank must agree on it */
        int pid = (int)getpid();
        MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
        snprintf(defdir, sizeof defdir, "/tmp/axmem_mpi_index_%d", pid);
        dir = defdir;
    }
    char cmd[512];
    if (rank == 0) {
        snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
        if (system(cmd) != 0) FAIL("cannot create %s", dir);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    corpus cs[] = {
        /* small alphabet: windows repeat at every rate; tiny rounds */
        {"small",
         6,
         97,
         {.vocab = 300,
          .n_docs = 200,
          .doc_len_min = 0,
          .doc_len_max = 60,
          .alphabet = 3,
          .n_passages = 3,
          .passage_len = 20,
          .copies = 4,
          .seed = 1},
         0},
        /* passages copied 2, 8, 32, 128 times: every histogram bucket */
        {"planted",
         12,
         1000,
         {.vocab = 5000,
          .n_docs = 300,
          .doc_len_min = 30,
          .doc_len_max = 80,
          .alphabet = 4000,
          .n_passages = 4,
          .passage_len = 25,
          .copies = 2,
          .copies_growth = 4,
          .seed = 2},
         0},
        /* fewer documents than ranks can have slices: some ranks own no windows */
        {"tiny",
         4,
         5,
         {.vocab = 300, .n_docs = 3, .doc_len_min = 2, .doc_len_max = 9, .alphabet = 4, .seed = 3},
         0},
        /* big rounds over a larger table: batches are grouped by table region */
        {"large",
         16,
         1 << 20,
         {.vocab = 5000,
          .n_docs = 400,
          .doc_len_min = 400,
          .doc_len_max = 600,
          .alphabet = 4000,
          .n_passages = 3,
          .passage_len = 60,
          .copies = 3,
          .copies_growth = 3,
          .seed = 4},
         16},
        /* one window repeated thousands of times: skewed exchange, split rounds */
        {"skewed", 8, 200, {.vocab = 0}, 0},
    };
    for (int messages = 0; messages < 2; messages++)
        for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
            check_corpus(&cs[i], dir, bits, messages);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("mpi_index: %d rank%s, hash bits %d: %s (%d failure%s)\n", size,
               size == 1 ? "" : "s", bits, total ? "FAILED" : "ok", total, total == 1 ? "" : "s");
        if (dir == defdir) {
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
            if (system(cmd) != 0) fprintf(stderr, "mpi_index: could not remove %s\n", dir);
        }
    }
    MPI_Finalize();
    return total ? 1 : 0;
}
