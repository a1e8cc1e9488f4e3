/* `axmem memscan`: index (build the n-gram index of a dataset, on one rank or under mpirun),
 * lookup (memscan/cmd_lookup.c) and info. */
#include "cli/commands.h"
#include "lib/core/cliargs.h"
#include "lib/core/config.h"
#include "data/axd.h"
#include "lib/core/stop.h"
#include "lib/core/log.h"
#include "lib/core/status.h"
#include "lib/core/timer.h"
#include "memscan/cmd_util.h"
#include "memscan/hash.h"
#include "memscan/index.h"
#include "lib/dist/comm.h"
#include "lib/dist/mpienv.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *TOP_HELP =
    "usage: axmem memscan SUBCOMMAND [flags]   (axmem memscan SUBCOMMAND --help)\n\n"
    "n-gram index of the training set, lookups against it, and scans of checkpoints for\n"
    "memorized training text.\n\n"
    "subcommands:\n"
    "  index     hash every n-token window of a .axd dataset into an index (MPI: mpirun -np N)\n"
    "  lookup    is this passage in the training data? longest verbatim span, sources\n"
    "  info      describe an index: dataset, window length, duplication histogram\n"
    "  generate  regurgitation scan: free generations slid over the index, verbatim spans\n"
    "  probe     extractable memorization of a checkpoint: prefix -> greedy suffix, exact match\n"
    "  mia       membership inference: member vs non-member documents, ROC AUC per score\n"
    "  exposure  canary exposure: rank of each inserted secret among its format's candidates\n";

typedef struct {
    char data[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX], round_windows[AX_CFG_STR_MAX],
        mem_limit[AX_CFG_STR_MAX];
    int64_t n, seed;
} index_flags;

static const ax_cfg_entry index_entries[] = {
    {"data", AX_CFG_STR, offsetof(index_flags, data), "", 1, 0,
     "dataset from `axmem data encode` (required)"},
    {"out", AX_CFG_STR, offsetof(index_flags, out), "", 1, 0, "index file to write (required)"},
    {"n", AX_CFG_INT, offsetof(index_flags, n), "32", 1, AX_MEMSCAN_N_MAX,
     "window length in tokens"},
    {"seed", AX_CFG_INT, offsetof(index_flags, seed), "0", 0, 9.2e18, "hash seed"},
    /* text, not an int: takes suffixes K, M */
    {"mem-limit", AX_CFG_STR, offsetof(index_flags, mem_limit), "auto", 1, 0,
     "memory for the build, e.g. 8G (auto: half the machine's); an index that needs more "
     "(~48 bytes per window per rank) is built spilling hash partitions to disk next to "
     "--out (on every rank; the limit is per rank)"},
    {"round-windows", AX_CFG_STR, offsetof(index_flags, round_windows), "1M", 1, 0,
     "windows each rank hashes per exchange round: bounds memory (suffix K, M; 1..64M)"},
};
static const ax_cfg_table index_table = {
    .usage = "axmem memscan index --data FILE.axd --out INDEX [flags]",
    .summary =
        "Counts every window of n tokens of the dataset (windows stay inside one document; its\n"
        "end-of-text token is not part of it) and keeps, per distinct window, its count and first\n"
        "occurrence. Exact: hash collisions are resolved against the tokens. Writes INDEX (zstd,\n"
        "checksummed) and INDEX.json (counts and duplication histogram, for reports). Under\n"
        "mpirun the ranks split the dataset and the table; the file loads on any number of ranks.\n"
        "Ctrl-C stops cleanly and leaves no output.\n\n"
        "environment: AXMEM_MEMSCAN_HASH_BITS=B keeps B bits of each hash (tests: collisions)",
    .entries = index_entries,
    .n = (int)(sizeof index_entries / sizeof index_entries[0]),
};

typedef struct {
    int verify, json;
    ax_cfg_strlist path;
} info_flags;

static const ax_cfg_entry info_entries[] = {
    {"verify", AX_CFG_BOOL, offsetof(info_flags, verify), "false", 1, 0,
     "also decompress every block and check its checksum"},
    {"json", AX_CFG_BOOL, offsetof(info_flags, json), "false", 1, 0,
     "print the header as JSON (the INDEX.json fields)"},
};
static const ax_cfg_positional info_path = {"INDEX", offsetof(info_flags, path), 0, 1,
                                            "index from `axmem memscan index`"};
static const ax_cfg_table info_table = {
    .usage = "axmem memscan info [flags]",
    .summary = "Prints an index's header: the dataset it was built from, window length, window "
               "counts and\nthe duplication histogram (distinct windows occurring 1, 2-3, 4-15, "
               "16-63, 64+ times).",
    .entries = info_entries,
    .n = (int)(sizeof info_entries / sizeof info_entries[0]),
    .positional = &info_path,
};

int ax_ms_cli_parse(const char *sub, const ax_cfg_table *t, void *fl, int argc, char **argv) {
    int help = 0, rank0 = ax_mpi_world_rank() == 0;
    ax_status st = ax_cfg_set_defaults(t, fl);
    if (st == AX_OK) st = ax_cfg_parse_argv(t, fl, argc, argv, NULL, &help);
    if (st != AX_OK) {
        if (rank0) fprintf(stderr, "axmem memscan %s: %s\n", sub, ax_error_msg());
        return st == AX_ERR_ARG ? 2 : 1;
    }
    if (!help) return -1;
    if (rank0) ax_cfg_print_help(t, stdout);
    return 0;
}

int ax_ms_cli_usage(const char *sub, const char *fmt, const char *arg) {
    if (ax_mpi_world_rank() != 0) return 2;
    fprintf(stderr, "axmem memscan %s: ", sub);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "; see 'axmem memscan %s --help'\n", sub);
    return 2;
}

int ax_ms_cli_fail(const char *sub, ax_status st) {
    const char *m = ax_error_msg();
    if (!strncmp(m, "memscan ", 8) && !strncmp(m + 8, sub, strlen(sub)) &&
        !strncmp(m + 8 + strlen(sub), ": ", 2))
        m += 8 + strlen(sub) + 2; /* the line already starts "axmem memscan SUB: " */
    int rank = ax_mpi_world_rank();
    /* rank 0 always speaks; other ranks only for a failure of their own */
    if (rank == 0 || (strstr(m, "another rank failed") == NULL && strstr(m, "rank 0") == NULL)) {
        if (ax_mpi_world_size() > 1)
            fprintf(stderr, "axmem memscan %s: [r%d] %s\n", sub, rank,
                    m[0] ? m : ax_status_str(st));
        else
            fprintf(stderr, "axmem memscan %s: %s\n", sub, m[0] ? m : ax_status_str(st));
    }
    return st == AX_ERR_ARG ? 2 : 1;
}

static void print_hist(FILE *f, const ax_memscan_info *in) {
    fprintf(f, "duplication (distinct windows by how often they occur):\n");
    for (int i = 0; i < AX_MEMSCAN_HIST; i++)
        fprintf(f, "  %-6s times %14" PRIu64 "  %6.2f%%\n", ax_memscan_hist_labels[i], in->hist[i],
                in->n_distinct ? 100.0 * (double)in->hist[i] / (double)in->n_distinct : 0.0);
    if (in->n_saturated)
        fprintf(f, "  (%" PRIu64 " windows occur 16777215+ times; their counts are capped)\n",
                in->n_saturated);
}

static int cmd_index(int argc, char **argv) {
    static const char *SUB = "index";
    index_flags fl;
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    const char *bits_env = getenv("AXMEM_MEMSCAN_HASH_BITS");
    if (bits_env && *bits_env) {
        int64_t b;
        if (ax_parse_i64(bits_env, &b) != 1 || b < 1 || b > 64)
            return ax_ms_cli_usage(SUB, "AXMEM_MEMSCAN_HASH_BITS='%s' is not an integer in 1..64",
                                   bits_env);
        o.hash_bits = (int)b;
    }
    int rc = ax_ms_cli_parse(SUB, &index_table, &fl, argc, argv);
    if (rc >= 0) return rc;
    uint64_t u;
    if (ax_parse_size(fl.round_windows, &u) != 1 || u < 1 || u > (1u << 26))
        return ax_ms_cli_usage(SUB, "--round-windows '%s' is not a count in 1..64M",
                               fl.round_windows);
    o.round_windows = u;
    o.n = (int)fl.n;
    o.seed = (uint64_t)fl.seed;
    uint64_t mem_limit = 0;
    int limit_given = strcmp(fl.mem_limit, "auto") != 0;
    if (limit_given && (ax_parse_size(fl.mem_limit, &mem_limit) != 1 || mem_limit < (1u << 20)))
        return ax_ms_cli_usage(SUB, "--mem-limit '%s' is not a size of at least 1M (e.g. 8G)",
                               fl.mem_limit);
    if (!limit_given) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        mem_limit = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 2 : UINT64_MAX;
    }
    const char *data = fl.data, *out = fl.out;
    if (!data[0]) return ax_ms_cli_usage(SUB, "%s", "--data FILE.axd is required");
    if (!out[0]) return ax_ms_cli_usage(SUB, "%s", "--out INDEX is required");
    int rank = ax_mpi_world_rank();
    ax_axd_t *ds = NULL;
    ax_memscan_index_t *idx = NULL;
    rc = 0;
    ax_stop_catch();
    o.stop = ax_stop_flag();
    o.progress = rank == 0;
    double t0 = ax_now();
    ax_status st = ax_axd_open(data, 1, &ds);
    { /* nobody enters the build alone */
        ax_grid_t *world = NULL;
        ax_status ws = ax_grid_create_world(&world);
        st = ws != AX_OK ? ws : ax_coll_agree(world, AX_AXIS_WORLD, st, "memscan index");
        ax_grid_free(world);
    }
    /* each rank holds its share of the windows; a share over the limit spills (collective:
     * every rank sees the same dataset and limit, so decides alike) */
    if (st == AX_OK && ax_memscan_windows_of(ds, o.n) / (uint64_t)ax_mpi_world_size() >
                           mem_limit / AX_MEMSCAN_BYTES_PER_WINDOW) {
        ax_memscan_info bi;
        st = ax_memscan_index_build_bounded(ds, &o, mem_limit, out, &bi);
        if (st != AX_OK) {
            rc = ax_ms_cli_fail(SUB, st);
            goto done;
        }
        if (rank != 0) goto done;
        struct stat sb;
        double mb = stat(out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
        printf("memscan index: %s: %" PRIu64 " tokens, %" PRIu64 " docs; %" PRIu64
               " windows of %u tokens, %" PRIu64 " distinct\n",
               data, bi.ds_tokens, bi.ds_docs, bi.n_windows, bi.n, bi.n_distinct);
        printf("built in %.0f MB (--mem-limit) per rank on %u rank%s, spilling to disk, in "
               "%.2f s\n",
               (double)mem_limit / 1e6, bi.build_ranks, bi.build_ranks == 1 ? "" : "s",
               ax_now() - t0);
        print_hist(stdout, &bi);
        printf("wrote %s (%.1f MB) and %s.json\n", out, mb, out);
        goto done;
    }
    o.mem_limit = mem_limit; /* rank 0 gathers the shards in memory when this allows */
    if (st == AX_OK) st = ax_memscan_index_build(ds, &o, &idx);
    double t_build = ax_now() - t0;
    if (st == AX_OK) st = ax_memscan_index_save(idx, out, o.stop);
    if (st != AX_OK) {
        rc = ax_ms_cli_fail(SUB, st);
        goto done;
    }
    {
        ax_comm_stats cs;
        ax_memscan_index_comm_stats(idx, &cs);
        AX_DEBUG("memscan index: sent %.1f MB to other ranks (%.1f MB exchanging windows)",
                 ax_comm_stats_bytes_total(&cs) / 1e6,
                 cs.bytes[AX_COMM_ALLTOALL][AX_AXIS_WORLD] / 1e6);
    }
    if (rank == 0) {
        const ax_memscan_info *in = ax_memscan_index_info(idx);
        struct stat sb;
        double mb = stat(out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
        printf("memscan index: %s: %" PRIu64 " tokens, %" PRIu64 " docs; %" PRIu64
               " windows of %u tokens, %" PRIu64 " distinct\n",
               data, in->ds_tokens, in->ds_docs, in->n_windows, in->n, in->n_distinct);
        printf("built on %u rank%s in %.2f s (%.2f M tokens/s); table %.1f bytes per distinct "
               "window%s\n",
               in->build_ranks, in->build_ranks == 1 ? "" : "s", t_build,
               (double)in->ds_tokens / t_build / 1e6,
               in->n_distinct
                   ? (double)ax_memscan_index_table_bytes_all(idx) / (double)in->n_distinct
                   : 0.0,
               in->build_ranks > 1 ? " (all ranks)" : "");
        printf("occurrence lists: %" PRIu64 " repeated windows, %" PRIu64 " positions, %.1f MB\n",
               in->n_dup, in->n_dup_pos, (double)ax_memscan_index_occ_bytes_all(idx) / 1e6);
        print_hist(stdout, in);
        printf("wrote %s (%.1f MB) and %s.json\n", out, mb, out);
    }
done:
    ax_memscan_index_free(idx);
    ax_axd_free(ds);
    return rc;
}

static int show_info(const char *SUB, const char *path, int verify, int json);

static int cmd_info(int argc, char **argv) {
    static const char *SUB = "info";
    info_flags fl;
    int rc = ax_ms_cli_parse(SUB, &info_table, &fl, argc, argv);
    if (rc < 0) rc = show_info(SUB, fl.path.v[0], fl.verify, fl.json);
    ax_cfg_free(&info_table, &fl);
    return rc;
}

/* INDEX's header as text or JSON */
static int show_info(const char *SUB, const char *path, int verify, int json) {
    ax_memscan_info in;
    ax_status st = ax_memscan_index_read_info(path, verify, &in);
    if (st != AX_OK) return ax_ms_cli_fail(SUB, st);
    if (json) {
        char *text = ax_memscan_info_json(&in);
        if (!text) return ax_ms_cli_fail(SUB, ax_errorf(AX_ERR_NOMEM, "out of memory"));
        printf("%s\n", text);
        free(text);
        return 0;
    }
    printf("index:        %s%s\n", path, verify ? " (all blocks verified)" : "");
    printf("dataset:      %s\n", in.ds_path);
    printf("              %" PRIu64 " tokens, %" PRIu64 " docs, vocab %u, checksum %016" PRIx64
           "\n",
           in.ds_tokens, in.ds_docs, in.vocab, in.ds_checksum);
    if (in.tok_checksum) printf("              tokenizer %016" PRIx64 "\n", in.tok_checksum);
    printf("window:       %u tokens, XXH3 seed %" PRIu64 "%s\n", in.n, in.seed,
           in.hash_bits < 64 ? " (hash masked for tests)" : "");
    if (in.hash_bits < 64) printf("hash bits:    %u\n", in.hash_bits);
    printf("windows:      %" PRIu64 ", %" PRIu64 " distinct (%.2f%% of windows repeat one "
           "seen before)\n",
           in.n_windows, in.n_distinct,
           in.n_windows ? 100.0 * (double)(in.n_windows - in.n_distinct) / (double)in.n_windows
                        : 0.0);
    printf("lists:        every occurrence of the %" PRIu64 " repeated windows (%" PRIu64
           " positions)\n",
           in.n_dup, in.n_dup_pos);
    printf("built on:     %u rank%s\n", in.build_ranks, in.build_ranks == 1 ? "" : "s");
    print_hist(stdout, &in);
    return 0;
}

/* MPI is started by the dispatcher (cli/main.c) under a launcher; index is collective then */
int ax_cmd_memscan(int argc, char **argv) {
    static const ax_cli_sub subs[] = {{"index", cmd_index},
                                      {"lookup", ax_ms_cmd_lookup},
                                      {"info", cmd_info},
                                      {"generate", ax_ms_cmd_generate},
                                      {"probe", ax_ms_cmd_probe},
                                      {"mia", ax_ms_cmd_mia},
                                      {"exposure", ax_ms_cmd_exposure}};
    return ax_cli_dispatch("memscan", TOP_HELP, subs, (int)(sizeof subs / sizeof subs[0]), argc,
                           argv);
}
