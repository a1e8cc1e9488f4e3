/* `axmem data dedup` (flags and printing; the work is index/dedup_run.h). It stands on the
 * corpus index, a layer above data, so the dispatcher hands this entry point to `axmem data`. */
#include "cli/commands.h"
#include "index/dedup_run.h"
#include "index/index.h"
#include "lib/core/cliargs.h"
#include "lib/core/stop.h"
#include "lib/dist/mpienv.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char input[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX], summary[AX_CFG_STR_MAX],
        tokenizer[AX_CFG_STR_MAX], mem_limit[AX_CFG_STR_MAX];
    int64_t n, seed, hash_bits, top;
    int documents;
} dedup_flags;

#define F(field) offsetof(dedup_flags, field)
static const ax_cfg_entry dedup_entries[] = {
    AX_CFG_INPUT_ENTRY(F, "dataset (.axd) to deduplicate (required)"),
    AX_CFG_OUT_ENTRY(F, "", "deduplicated dataset to write (required; never the input)"),
    {"n", AX_CFG_INT, F(n), "0", 0, AX_MEMSCAN_N_MAX,
     "remove every later copy of a span of >= N tokens (Lee et al. 2022 use 50; 0: keep spans)"},
    {"documents", AX_CFG_BOOL, F(documents), "false", 1, 0,
     "drop every document identical (all its tokens) to an earlier one"},
    {"summary", AX_CFG_STR, F(summary), "", 1, 0,
     "JSON summary to write (default: OUT.dedup.json)"},
    AX_CFG_TOKENIZER_ENTRY(
        F, "the dataset's tokenizer: the summary shows the spans' text (else their token ids)"),
    {"top", AX_CFG_INT, F(top), "20", 0, AX_DEDUP_TOP_MAX, "most duplicated spans to list"},
    /* text, not an int: takes suffixes K, M, G */
    {"mem-limit", AX_CFG_STR, F(mem_limit), "auto", 1, 0,
     "memory for the index per rank, e.g. 8G (auto: half the machine's); a bigger index is "
     "built spilling to disk next to --out (as `memscan index --mem-limit`)"},
    AX_CFG_SEED_ENTRY(F, "0", "hash seed"),
    {"hash-bits", AX_CFG_INT, F(hash_bits), "64", 1, 64,
     "keep the low B bits of each hash (below 64 only to test collisions: the result stays "
     "exact, and slower)"},
};
#undef F
static const ax_cfg_table dedup_table = {
    .usage = "axmem data dedup --input X.axd --out Y.axd (--n 50 | --documents) [flags]",
    .summary =
        "Exact-substring deduplication. Windows of N tokens lie inside one document's text;\n"
        "the window at position p is a repeat when the same N tokens occur at an earlier\n"
        "position (document order, then offset), and a token is removed iff it lies in some\n"
        "repeat window: the first occurrence of every repeated span stays, every later copy of\n"
        "a span of >= N tokens goes. A document whose whole text is removed is dropped.\n"
        "--documents drops documents identical to an earlier one (alone or with --n).\n"
        "Built on the corpus index (`memscan index`): exact (hashes are confirmed against the\n"
        "tokens), in bounded memory (--mem-limit spills to disk), and under mpirun the ranks\n"
        "split the work and write the same bytes as one. Writes Y.axd (the same tokenizer,\n"
        "documents in order; temporary + rename) and a JSON summary: tokens and documents\n"
        "before, after and removed, and the most duplicated spans (count, first position,\n"
        "text with --tokenizer). Ctrl-C stops cleanly and leaves no output.",
    .entries = dedup_entries,
    .n = (int)(sizeof dedup_entries / sizeof dedup_entries[0]),
};

static double pct(uint64_t a, uint64_t b) {
    return b ? 100.0 * (double)a / (double)b : 0.0;
}

static void print_result(const ax_dedup_opts *o, const ax_dedup_result *r) {
    printf("data dedup: %s: %" PRIu64 " docs, %" PRIu64 " tokens", o->input, r->docs_before,
           r->tokens_before);
    if (o->n > 0)
        printf("; %" PRIu64 " windows of %d tokens, %" PRIu64 " repeats of an earlier one "
               "(index %s in %.2f s on %d rank%s)",
               r->windows, o->n, r->windows - r->distinct,
               r->spilled ? "spilled to disk" : "in memory", r->index_s, r->ranks,
               r->ranks == 1 ? "" : "s");
    printf("\n");
    if (o->n > 0)
        printf("removed %" PRIu64 " tokens in later copies of spans of >= %d tokens (%.2f%%); "
               "%" PRIu64 " documents left empty are dropped\n",
               r->span_tokens, o->n, pct(r->span_tokens, r->tokens_before), r->emptied_docs);
    if (o->documents)
        printf("dropped %" PRIu64 " duplicate documents (%" PRIu64 " tokens, %.2f%%)\n",
               r->dup_docs, r->dup_doc_tokens, pct(r->dup_doc_tokens, r->tokens_before));
    uint64_t removed = r->tokens_before - r->tokens_after;
    printf("wrote %s: %" PRIu64 " docs, %" PRIu64 " tokens (%" PRIu64 " docs and %" PRIu64
           " tokens removed, %.2f%%) in %.2f s\n",
           o->out, r->docs_after, r->tokens_after, r->docs_before - r->docs_after, removed,
           pct(removed, r->tokens_before), r->total_s);
    if (r->n_spans) {
        printf("most duplicated spans (each window occurs COUNT times, first at doc:offset):\n");
        printf("  %8s %8s  %-20s %s\n", "count", "tokens", "doc:offset",
               o->tokenizer && *o->tokenizer ? "text" : "token ids");
        for (size_t i = 0; i < r->n_spans; i++) {
            const ax_dedup_span *s = &r->spans[i];
            char at[48];
            snprintf(at, sizeof at, "%" PRIu64 ":%" PRIu64, s->doc, s->offset);
            printf("  %8" PRIu64 " %8" PRIu64 "  %-20s %s\n", s->count, s->len, at, s->preview);
        }
    }
    printf("summary: %s\n", r->summary);
}

int ax_cmd_data_dedup(int argc, char **argv) {
    static const char *CMD = "data dedup";
    dedup_flags fl;
    int rc = ax_cli_parse(CMD, &dedup_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    const char *const need[][2] = {{fl.input, "--input FILE.axd"}, {fl.out, "--out FILE.axd"}};
    if ((rc = ax_cli_require(CMD, need, 2))) return rc;
    if (fl.n == 0 && !fl.documents)
        return ax_cli_usage(CMD,
                            "%s: give --n N (remove later copies of spans of >= N tokens, "
                            "e.g. 50) and/or --documents",
                            "nothing to do");
    ax_dedup_opts o;
    ax_dedup_opts_default(&o);
    uint64_t mem_limit = 0;
    if (strcmp(fl.mem_limit, "auto") != 0 &&
        (ax_parse_size(fl.mem_limit, &mem_limit) != 1 || mem_limit < (1u << 20)))
        return ax_cli_usage(CMD, "--mem-limit '%s' is not a size of at least 1M (e.g. 8G)",
                            fl.mem_limit);
    o.input = fl.input;
    o.out = fl.out;
    o.summary = fl.summary;
    o.tokenizer = fl.tokenizer;
    o.n = (int)fl.n;
    o.documents = fl.documents;
    o.mem_limit = mem_limit;
    o.seed = (uint64_t)fl.seed;
    o.hash_bits = (int)fl.hash_bits;
    o.top = (int)fl.top;
    ax_stop_catch();
    o.stop = ax_stop_flag();
    o.progress = ax_mpi_world_rank() == 0;
    ax_dedup_result r;
    ax_status st = ax_dedup_run(&o, &r);
    if (st != AX_OK) return ax_cli_fail(CMD, st);
    if (ax_mpi_world_rank() == 0) print_result(&o, &r);
    return 0;
}
