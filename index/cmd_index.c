/* `axmem memscan index` (build the n-gram index of a dataset, on one rank or under mpirun; the
 * work is index/index_run.h) and `axmem memscan info` (describe an index). */
#include "cli/commands.h"
#include "index/index_run.h"
#include "lib/core/cliargs.h"
#include "lib/core/stop.h"
#include "lib/dist/mpienv.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct {
    char data[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX], round_windows[AX_CFG_STR_MAX],
        mem_limit[AX_CFG_STR_MAX];
    int64_t n, seed, hash_bits;
} index_flags;

#define F(field) offsetof(index_flags, field)
static const ax_cfg_entry index_entries[] = {
    AX_CFG_DATA_ENTRY(F, "dataset from `axmem data encode` (required)"),
    AX_CFG_OUT_ENTRY(F, "", "index file to write (required)"),
    {"n", AX_CFG_INT, F(n), "32", 1, AX_MEMSCAN_N_MAX, "window length in tokens"},
    AX_CFG_SEED_ENTRY(F, "0", "hash seed"),
    /* text, not an int: takes suffixes K, M */
    {"mem-limit", AX_CFG_STR, F(mem_limit), "auto", 1, 0,
     "memory for the build, e.g. 8G (auto: half the machine's); an index that needs more "
     "(~48 bytes per window per rank) is built spilling hash partitions to disk next to "
     "--out (on every rank; the limit is per rank)"},
    {"round-windows", AX_CFG_STR, F(round_windows), "1M", 1, 0,
     "windows each rank hashes per exchange round: bounds memory (suffix K, M; 1..64M)"},
    {"hash-bits", AX_CFG_INT, F(hash_bits), "64", 1, 64,
     "keep the low B bits of each window hash (below 64 only to test collisions: the index "
     "stays exact, and slower)"},
};
#undef F
static const ax_cfg_table index_table = {
    .usage = "axmem memscan index --data FILE.axd --out INDEX [flags]",
    .summary =
        "Counts every window of n tokens of the dataset (windows stay inside one document; its\n"
        "end-of-text token is not part of it) and keeps, per distinct window, its count and first\n"
        "occurrence. Exact: hash collisions are resolved against the tokens. Writes INDEX (zstd,\n"
        "checksummed) and INDEX.json (counts and duplication histogram, for reports). Under\n"
        "mpirun the ranks split the dataset and the table; the file loads on any number of ranks.\n"
        "Ctrl-C stops cleanly and leaves no output.",
    .entries = index_entries,
    .n = (int)(sizeof index_entries / sizeof index_entries[0]),
};

typedef struct {
    int verify, json;
    ax_cfg_strlist path;
} info_flags;

#define F(field) offsetof(info_flags, field)
static const ax_cfg_entry info_entries[] = {
    {"verify", AX_CFG_BOOL, F(verify), "false", 1, 0,
     "also decompress every block and check its checksum"},
    AX_CFG_JSON_ENTRY(F, "print the header as JSON (the INDEX.json fields)"),
};
#undef F
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

static void print_hist(FILE *f, const ax_memscan_info *in) {
    fprintf(f, "duplication (distinct windows by how often they occur):\n");
    for (int i = 0; i < AX_MEMSCAN_HIST; i++)
        fprintf(f, "  %-6s times %14" PRIu64 "  %6.2f%%\n", ax_memscan_hist_labels[i], in->hist[i],
                in->n_distinct ? 100.0 * (double)in->hist[i] / (double)in->n_distinct : 0.0);
    if (in->n_saturated)
        fprintf(f, "  (%" PRIu64 " windows occur 16777215+ times; their counts are capped)\n",
                in->n_saturated);
}

static void print_built(const char *data, const char *out, uint64_t mem_limit,
                        const ax_index_run_result *r) {
    const ax_memscan_info *in = &r->info;
    struct stat sb;
    double mb = stat(out, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
    const char *s = in->build_ranks == 1 ? "" : "s";
    printf("memscan index: %s: %" PRIu64 " tokens, %" PRIu64 " docs; %" PRIu64
           " windows of %u tokens, %" PRIu64 " distinct\n",
           data, in->ds_tokens, in->ds_docs, in->n_windows, in->n, in->n_distinct);
    if (r->spilled) {
        printf("built in %.0f MB (--mem-limit) per rank on %u rank%s, spilling to disk, in "
               "%.2f s\n",
               (double)mem_limit / 1e6, in->build_ranks, s, r->build_s);
    } else {
        printf("built on %u rank%s in %.2f s (%.2f M tokens/s); table %.1f bytes per distinct "
               "window%s\n",
               in->build_ranks, s, r->build_s, (double)in->ds_tokens / r->build_s / 1e6,
               in->n_distinct ? r->table_bytes / (double)in->n_distinct : 0.0,
               in->build_ranks > 1 ? " (all ranks)" : "");
        printf("occurrence lists: %" PRIu64 " repeated windows, %" PRIu64 " positions, %.1f MB\n",
               in->n_dup, in->n_dup_pos, r->occ_bytes / 1e6);
    }
    print_hist(stdout, in);
    printf("wrote %s (%.1f MB) and %s.json\n", out, mb, out);
}

int ax_cmd_memscan_index(int argc, char **argv) {
    static const char *CMD = "memscan index";
    index_flags fl;
    int rc = ax_cli_parse(CMD, &index_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    ax_memscan_build_opts o;
    ax_memscan_build_opts_default(&o);
    o.hash_bits = (int)fl.hash_bits;
    uint64_t u, mem_limit = 0;
    if (ax_parse_size(fl.round_windows, &u) != 1 || u < 1 || u > (1u << 26))
        return ax_cli_usage(CMD, "--round-windows '%s' is not a count in 1..64M", fl.round_windows);
    o.round_windows = u;
    o.n = (int)fl.n;
    o.seed = (uint64_t)fl.seed;
    int limit_given = strcmp(fl.mem_limit, "auto") != 0;
    if (limit_given && (ax_parse_size(fl.mem_limit, &mem_limit) != 1 || mem_limit < (1u << 20)))
        return ax_cli_usage(CMD, "--mem-limit '%s' is not a size of at least 1M (e.g. 8G)",
                            fl.mem_limit);
    if (!limit_given) {
        long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
        mem_limit = pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 2 : UINT64_MAX;
    }
    const char *const need[][2] = {{fl.data, "--data FILE.axd"}, {fl.out, "--out INDEX"}};
    if ((rc = ax_cli_require(CMD, need, 2))) return rc;
    ax_stop_catch();
    o.stop = ax_stop_flag();
    o.progress = ax_mpi_world_rank() == 0;
    ax_index_run_result r;
    ax_status st = ax_index_run(fl.data, fl.out, &o, mem_limit, &r);
    if (st != AX_OK) return ax_cli_fail(CMD, st);
    if (ax_mpi_world_rank() == 0) print_built(fl.data, fl.out, mem_limit, &r);
    return 0;
}

/* INDEX's header as text or JSON */
static int show_info(const char *CMD, const char *path, int verify, int json) {
    ax_memscan_info in;
    ax_status st = ax_memscan_index_read_info(path, verify, &in);
    if (st != AX_OK) return ax_cli_fail(CMD, st);
    if (json) {
        char *text = ax_memscan_info_json(&in);
        if (!text) return ax_cli_fail(CMD, ax_errorf(AX_ERR_NOMEM, "out of memory"));
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

int ax_cmd_memscan_info(int argc, char **argv) {
    info_flags fl;
    int rc = ax_cli_parse("memscan info", &info_table, &fl, argc, argv, NULL);
    if (rc < 0) rc = show_info("memscan info", fl.path.v[0], fl.verify, fl.json);
    ax_cfg_free(&info_table, &fl);
    return rc;
}
