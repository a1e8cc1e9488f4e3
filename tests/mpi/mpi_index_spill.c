/* MPI driver: peak memory of the spilled index build on several ranks.
 * --make DIR writes a 1.5M-token corpus (one process: its memory stays out of the build's
 * job); --build DIR LIMIT, on every rank of a job, builds its index spilling with --mem-limit
 * LIMIT (bytes per rank), then in memory, and measures each build's peak RSS per rank above
 * the resident memory it started from (getrusage's high-water mark minus the current RSS from
 * /proc/self/statm: an upper bound on the build's own growth). Checks on every rank: the
 * spilled build stays within LIMIT plus the dataset's mapped pages plus 8 MB; the in-memory
 * build and save does not on rank 0, which gathers the whole index to save it (else the
 * check would prove nothing); and rank 0 finds the two files, and
 * their INDEX.json, byte for byte equal. tests/mpi/memscan.sh runs it on 2 and 4 ranks.
 *
 * usage: mpi_index_spill --make DIR | --build DIR LIMIT
 * Exits 0 only if every check passed on every rank. */
#include "data/axd.h"
#include "lib/core/log.h"
#include "index/index.h"
#include "tests/support/synth.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static int rank, size;

static const ax_memscan_synth_opts OPTS = {.vocab = 50257,
                                           .n_docs = 1500,
                                           .doc_len_min = 500,
                                           .doc_len_max = 1500,
                                           .alphabet = 50000,
                                           .n_passages = 3,
                                           .passage_len = 200,
                                           .copies = 2,
                                           .copies_growth = 4,
                                           .seed = 5};

static int fail(const char *what, ax_status st) {
    fprintf(stderr, "mpi_index_spill [r%d]: %s: %s\n", rank, what,
            st != AX_OK ? ax_error_msg() : "");
    return 1;
}

static long rss_now_kib(void) {
    long pages = 0, res = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f) return -1;
    int got = fscanf(f, "%ld %ld", &pages, &res);
    fclose(f);
    return got == 2 ? res * (sysconf(_SC_PAGESIZE) / 1024) : -1;
}

static long peak_kib(void) {
    struct rusage r;
    getrusage(RUSAGE_SELF, &r);
    return r.ru_maxrss;
}

/* 1 if files a and b hold the same bytes */
static int same_file(const char *a, const char *b) {
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = fgetc(fa), cb = fgetc(fb);
        if (ca != cb) same = 0;
        if (ca == EOF || cb == EOF) break;
    }
    if (fa) fclose(fa);
    if (fb) fclose(fb);
    return same;
}

static int do_build(const char *dir, uint64_t limit) {
    char data[512], a[530], b[530];
    snprintf(data, sizeof data, "%s/rss.axd", dir);
    snprintf(a, sizeof a, "%s/rss_spill.idx", dir);
    snprintf(b, sizeof b, "%s/rss_mem.idx", dir);
    ax_axd_t *ds = NULL;
    ax_status st = ax_axd_open(data, 1, &ds);
    if (st != AX_OK) return fail("open corpus", st);
    struct stat sb;
    if (stat(data, &sb) != 0) return fail("stat corpus", AX_OK);
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.round_windows = 4096;
    long base = rss_now_kib();
    st = ax_memscan_index_build_bounded(ds, &o, limit, a, NULL);
    long spill = peak_kib() - base;
    if (st != AX_OK) return fail("spilled build", st);
    /* the in-memory build after it: its peak is the higher, so the mark is its own */
    base = rss_now_kib();
    ax_memscan_index_t *idx = NULL;
    st = ax_memscan_index_build(ds, &o, &idx);
    if (st == AX_OK) st = ax_memscan_index_save(idx, b, NULL);
    long mem = peak_kib() - base;
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    if (st != AX_OK) return fail("in-memory build", st);
    long bound = (long)(limit >> 10) + (long)(sb.st_size >> 10) + 8192;
    long v[2] = {spill, mem}, mx[2], mn[2];
    MPI_Allreduce(v, mx, 2, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(v, mn, 2, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    int bad = 0;
    if (rank == 0) {
        printf("memscan spilled build on %d ranks: peak RSS growth per rank %ld..%ld KiB "
               "(bound %ld = limit + dataset + 8 MB); in memory %ld..%ld KiB\n",
               size, mn[0], mx[0], bound, mn[1], mx[1]);
        char ja[540], jb[540];
        snprintf(ja, sizeof ja, "%s.json", a);
        snprintf(jb, sizeof jb, "%s.json", b);
        if (!same_file(a, b) || !same_file(ja, jb)) {
            fprintf(stderr, "mpi_index_spill: %s differs from %s\n", a, b);
            bad = 1;
        }
    }
    if (mx[0] > bound) {
        if (rank == 0)
            fprintf(stderr, "mpi_index_spill: spilled peak %ld KiB > %ld\n", mx[0], bound);
        bad = 1;
    }
    /* rank 0 gathers every entry of the in-memory build to save it (16 bytes each), so its
     * peak there must be over the bound; other ranks' shards alone may fit it on 4 ranks */
    if (rank == 0 && mem <= bound) {
        fprintf(stderr,
                "mpi_index_spill: the in-memory build and save (%ld KiB on rank 0) fits "
                "the bound: the check would prove nothing\n",
                mem);
        bad = 1;
    }
    return bad;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    ax_log_set_level(AX_LOG_WARN);
    int bad;
    if (argc == 3 && strcmp(argv[1], "--make") == 0) {
        char path[512];
        snprintf(path, sizeof path, "%s/rss.axd", argv[2]);
        ax_status st = rank == 0 ? ax_memscan_synth_write(path, &OPTS, NULL, NULL) : AX_OK;
        bad = st != AX_OK ? fail("write corpus", st) : 0;
    } else if (argc == 4 && strcmp(argv[1], "--build") == 0) {
        bad = do_build(argv[2], strtoull(argv[3], NULL, 10));
    } else {
        if (rank == 0) fprintf(stderr, "usage: mpi_index_spill --make DIR | --build DIR LIMIT\n");
        bad = 2;
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    MPI_Finalize();
    return any;
}
