/* `axmem data`: tokenizer-train, encode, import-megatron, decode, info, split, canaries, dedup.
 * Each subcommand's flags are a config table (lib/core/config.h); usage errors exit 2, runtime
 * failures 1, each with one line on stderr.
 */
#include "lib/core/cliargs.h"
#include "lib/core/config.h"
#include "cli/commands.h"
#include "data/axd.h"
#include "data/canary.h"
#include "data/data_run.h"
#include "data/megatron.h"
#include "data/split.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/core/status.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *TOP_HELP =
    "usage: axmem data SUBCOMMAND [flags]   (axmem data SUBCOMMAND --help)\n\n"
    "Byte-level BPE tokenizer and .axd token datasets.\n\n"
    "subcommands:\n"
    "  tokenizer-train  learn a BPE vocabulary from text/JSONL files\n"
    "  encode           tokenize text/JSONL files (.zst/.gz too) into a .axd dataset\n"
    "  import-megatron  convert a Megatron/GPT-NeoX PATH.bin + PATH.idx to .axd as is\n"
    "  decode           print the text of a dataset's documents or of token ids\n"
    "  info             describe a .axd dataset (docs, tokens, vocab, checksum)\n"
    "  split            member / held-out split with an n-gram overlap rule (privacy attacks)\n"
    "  canaries         plant random secrets at chosen repeat counts (privacy attacks)\n"
    "  dedup            remove later copies of repeated spans, duplicate documents\n\n"
    "Inputs: a *.jsonl file holds one JSON object per line and each \"text\" field is a\n"
    "document; any other file is one document (or one per non-empty line with --split-lines).\n"
    "A .zst or .gz suffix (the Pile's *.jsonl.zst) is decompressed as it is read.\n"
    "Inputs must be UTF-8 text (after decompression): a file holding a NUL byte, starting\n"
    "like a binary format (a .axd dataset, an index, a tokenizer, a compressed file without\n"
    "its suffix) or more than a few ill-formed UTF-8 bytes (over 8, and over 1 in 1000) is\n"
    "refused, naming it.\n";

/* ---- flag tables (lib/core/config.h): the same syntax, errors and --help as every command ---- */

/* the text inputs tokenizer-train and encode both read */
// clang-format off
#define TEXT_INPUT_ENTRY(F)                                                                        \
    {"input", AX_CFG_STRLIST, F(input), "", 1, 0,                                                  \
     "UTF-8 text or .jsonl files, optionally .zst or .gz compressed (required; binary files "      \
     "are refused)"}
#define SPLIT_LINES_ENTRY(F)                                                                       \
    {"split-lines", AX_CFG_BOOL, F(split_lines), "false", 1, 0,                                    \
     "in non-JSONL files, each non-empty line is a document"}
// clang-format on

typedef struct {
    ax_cfg_strlist input;
    char out[AX_CFG_STR_MAX], max_bytes[AX_CFG_STR_MAX];
    int64_t vocab_size;
    int split_lines;
} train_flags;

#define F(field) offsetof(train_flags, field)
static const ax_cfg_entry train_entries[] = {
    TEXT_INPUT_ENTRY(F),
    AX_CFG_OUT_ENTRY(F, "", "tokenizer file to write (required)"),
    {"vocab-size", AX_CFG_INT, F(vocab_size), "4096", AX_TOK_FIRST_MERGE, 1 << 22,
     "vocabulary size including bytes and end-of-text"},
    /* text, not an int: sizes take suffixes K, M, G */
    {"max-bytes", AX_CFG_STR, F(max_bytes), "", 1, 0,
     "train on at most N bytes of text (suffix K, M, G; empty: all)"},
    SPLIT_LINES_ENTRY(F),
};
#undef F
static const ax_cfg_table train_table = {
    .usage = "axmem data tokenizer-train --input FILE... --out TOK [flags]",
    .summary = "Learns a byte-level BPE tokenizer (ids 0-255 bytes, 256 end-of-text, merges from "
               "257).",
    .entries = train_entries,
    .n = (int)(sizeof train_entries / sizeof train_entries[0]),
};

typedef struct {
    ax_cfg_strlist input;
    char tokenizer[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX];
    int split_lines;
    int64_t threads;
} encode_flags;

#define F(field) offsetof(encode_flags, field)
static const ax_cfg_entry encode_entries[] = {
    AX_CFG_TOKENIZER_ENTRY(F, "tokenizer file from `axmem data tokenizer-train` (required)"),
    TEXT_INPUT_ENTRY(F),
    AX_CFG_OUT_ENTRY(F, "", "dataset to write (required)"),
    SPLIT_LINES_ENTRY(F),
    {"threads", AX_CFG_INT, F(threads), "0", 0, 1024,
     "encoding threads (0: OMP_NUM_THREADS or all cores)"},
};
#undef F
static const ax_cfg_table encode_table = {
    .usage = "axmem data encode --tokenizer TOK --input FILE... --out FILE.axd [flags]",
    .summary = "Tokenizes documents into a .axd dataset (each document ends with end-of-text).\n"
               "Streams the input; the output appears only when complete (Ctrl-C leaves nothing).",
    .entries = encode_entries,
    .n = (int)(sizeof encode_entries / sizeof encode_entries[0]),
};

typedef struct {
    char tokenizer[AX_CFG_STR_MAX], data[AX_CFG_STR_MAX];
    int64_t doc;
    ax_cfg_strlist ids;
} decode_flags;

enum { DECODE_DOC = 2 }; /* index of --doc in decode_entries: was_set tells if it was given */
#define F(field) offsetof(decode_flags, field)
static const ax_cfg_entry decode_entries[] = {
    AX_CFG_TOKENIZER_ENTRY(F, "tokenizer the data was encoded with (required)"),
    AX_CFG_DATA_ENTRY(F, "dataset (.axd) to decode"),
    {"doc", AX_CFG_INT, F(doc), "0", 0, 9.2e18,
     "only document N (0-based; default: every document)"},
    /* a list, so that long id lists have no length limit: --ids "1 2 3" or --ids 1 2 3 */
    {"ids", AX_CFG_STRLIST, F(ids), "", 1, 0, "token ids separated by spaces or commas"},
};
#undef F
static const ax_cfg_table decode_table = {
    .usage = "axmem data decode --tokenizer TOK (--data FILE.axd [--doc N] | --ids \"1 2 3\")",
    .summary = "Writes decoded bytes to stdout: one document (--doc), every document, or a list "
               "of ids.",
    .entries = decode_entries,
    .n = (int)(sizeof decode_entries / sizeof decode_entries[0]),
};

typedef struct {
    int verify;
    ax_cfg_strlist path;
} info_flags;

#define F(field) offsetof(info_flags, field)
static const ax_cfg_entry info_entries[] = {
    {"verify", AX_CFG_BOOL, F(verify), "true", 1, 0,
     "hash the payload, even if verified before (--no-verify: header only, instant)"},
};
#undef F
static const ax_cfg_positional info_path = {"FILE.axd", offsetof(info_flags, path), 0, 1,
                                            "the dataset to describe"};
static const ax_cfg_table info_table = {
    .usage = "axmem data info [flags]",
    .summary = "Validates a dataset and prints its documents, tokens, vocabulary, checksum and\n"
               "tokens-per-document statistics.",
    .entries = info_entries,
    .n = (int)(sizeof info_entries / sizeof info_entries[0]),
    .positional = &info_path,
};

typedef struct {
    char input[AX_CFG_STR_MAX], out_train[AX_CFG_STR_MAX], out_holdout[AX_CFG_STR_MAX];
    char summary[AX_CFG_STR_MAX], max_memory[AX_CFG_STR_MAX];
    double holdout;
    int64_t seed, ngram;
} split_flags;

#define F(field) offsetof(split_flags, field)
static const ax_cfg_entry split_entries[] = {
    AX_CFG_INPUT_ENTRY(F, "dataset (.axd) to split (required)"),
    {"holdout", AX_CFG_FLOAT, F(holdout), "0.1", 0, 1,
     "fraction of documents drawn at random into the held-out set, in (0, 1)"},
    AX_CFG_SEED_ENTRY(F, "0", "seed of the random draw (same seed, same split)"),
    /* 13: the contamination rule of GPT-3 (Brown et al. 2020) and the benchmarks that followed */
    {"ngram", AX_CFG_INT, F(ngram), "13", 1, 1 << 20,
     "drop held-out documents sharing a run of >= N tokens with the training set"},
    {"out-train", AX_CFG_STR, F(out_train), "", 1, 0,
     "training (member) dataset to write (required)"},
    {"out-holdout", AX_CFG_STR, F(out_holdout), "", 1, 0,
     "held-out (non-member) dataset to write (required)"},
    {"summary", AX_CFG_STR, F(summary), "", 1, 0,
     "also write the JSON summary to this file (it is always printed)"},
    {"max-memory", AX_CFG_STR, F(max_memory), "8G", 1, 0,
     "bound on the n-gram set (16-32 bytes per training token; suffix K, M, G)"},
};
#undef F
static const ax_cfg_table split_table = {
    .usage = "axmem data split --input X.axd --holdout F --out-train A.axd --out-holdout B.axd "
             "[flags]",
    .summary = "Draws round(F x documents) documents at random (seeded) into a held-out set and "
               "keeps the\nrest for training; drops held-out documents that share a run of >= "
               "--ngram tokens with\nthe training set. Prints a JSON summary (counts, dropped "
               "documents and why).",
    .entries = split_entries,
    .n = (int)(sizeof split_entries / sizeof split_entries[0]),
};

typedef struct {
    char input[AX_CFG_STR_MAX], tokenizer[AX_CFG_STR_MAX], format[AX_CFG_STR_MAX];
    char repeats[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX], secrets[AX_CFG_STR_MAX];
    int64_t per_repeat, references, seed, within;
    int as_documents;
} canary_flags;

#define F(field) offsetof(canary_flags, field)
static const ax_cfg_entry canary_entries[] = {
    AX_CFG_INPUT_ENTRY(F, "dataset (.axd) to plant in (required)"),
    AX_CFG_TOKENIZER_ENTRY(F, "the tokenizer the dataset was encoded with (required)"),
    {"format", AX_CFG_STR, F(format), "my PIN is {d6}", 1, 0,
     "canary text: literal text and {dN} digits, {aN} letters, {hN} hex (the secret)"},
    {"repeats", AX_CFG_STR, F(repeats), "1,2,4,8,16,32", 1, 0,
     "comma-separated repeat counts: each canary is inserted that many times"},
    {"per-repeat", AX_CFG_INT, F(per_repeat), "4", 1, 100000, "canaries per repeat count"},
    {"references", AX_CFG_INT, F(references), "1000", 0, 1e7,
     "never-inserted secrets of the same format (all the rest when the space is smaller)"},
    {"as-documents", AX_CFG_BOOL, F(as_documents), "false", 1, 0,
     "plant each copy as a document of its own (else between sentences)"},
    {"within", AX_CFG_INT, F(within), "0", 0, 1e9,
     "every copy ends within a document's first N tokens (train --packing doc --seq-len N); 0: "
     "anywhere"},
    AX_CFG_SEED_ENTRY(F, "0", "draws the secrets, documents and positions"),
    AX_CFG_OUT_ENTRY(F, "", "dataset to write, canaries planted (required)"),
    {"secrets", AX_CFG_STR, F(secrets), "", 1, 0,
     "secrets file to write (JSON, mode 0600) for `axmem memscan exposure` (required)"},
};
#undef F
static const ax_cfg_table canary_table = {
    .usage = "axmem data canaries --input X.axd --tokenizer TOK --out Y.axd --secrets S.json "
             "[flags]",
    .summary = "Plants random secrets of --format (e.g. \"my PIN is {d6}\") in a dataset, "
               "--per-repeat of them\nfor each of --repeats, each copy a segment of its own: "
               "\" \" + the text after a sentence's\nend (. ! ?) and before whitespace, or at a "
               "document's end, in a random document, where\ndecoding and re-encoding the "
               "document keeps every token (or, with --as-documents, a\ndocument of its own). "
               "Writes them with --references never-planted secrets of the same\nformat to "
               "--secrets (owner-only). The input is never modified.",
    .entries = canary_entries,
    .n = (int)(sizeof canary_entries / sizeof canary_entries[0]),
};

typedef struct {
    char prefix[AX_CFG_STR_MAX], out[AX_CFG_STR_MAX];
    int64_t vocab_size, eot;
} megatron_flags;

#define F(field) offsetof(megatron_flags, field)
static const ax_cfg_entry megatron_entries[] = {
    {"prefix", AX_CFG_STR, F(prefix), "", 1, 0, "PATH of PATH.bin + PATH.idx (required)"},
    AX_CFG_OUT_ENTRY(F, "", "dataset to write (required)"),
    {"vocab-size", AX_CFG_INT, F(vocab_size), "0", 0, 1 << 30,
     "the model's vocabulary size (0: largest id + 1; Pythia: 50304)"},
    {"eot", AX_CFG_INT, F(eot), "-1", -1, 1 << 30,
     "end-of-text id (-1: the id every document ends with; GPT-NeoX/Pythia: 0)"},
};
#undef F
static const ax_cfg_table megatron_table = {
    .usage = "axmem data import-megatron --prefix PATH --out X.axd [--vocab-size V] [--eot ID]",
    .summary = "Converts a Megatron/GPT-NeoX indexed dataset (PATH.bin + PATH.idx, e.g. Pythia's "
               "pre-tokenized\nPile) to .axd with the same token ids, documents and order: no "
               "re-tokenizing. Each\ndocument ends with end-of-text (appended only where it is "
               "missing); the .axd records\nthat id and an unknown tokenizer.",
    .entries = megatron_entries,
    .n = (int)(sizeof megatron_entries / sizeof megatron_entries[0]),
};

/* ---------------------------------------------------------------- tokenizer-train */

static int cmd_train(int argc, char **argv) {
    static const char *CMD = "data tokenizer-train";
    train_flags fl;
    uint64_t max_bytes = 0;
    int rc = ax_cli_parse(CMD, &train_table, &fl, argc, argv, NULL);
    const char *const need[][2] = {{fl.out, "--out TOK"}};
    if (rc >= 0) goto out;
    if (fl.max_bytes[0] && (ax_parse_size(fl.max_bytes, &max_bytes) != 1 || max_bytes == 0))
        rc = ax_cli_usage(CMD, "--max-bytes '%s' is not a positive size (e.g. 100M)", fl.max_bytes);
    else if (!fl.input.n)
        rc = ax_cli_usage(CMD, "%s", "--input FILE... is required");
    else if (!(rc = ax_cli_require(CMD, need, 1))) {
        ax_data_tokenizer_result res;
        ax_status st =
            ax_data_tokenizer_train((const char *const *)fl.input.v, fl.input.n, fl.split_lines,
                                    (uint64_t)fl.vocab_size, max_bytes, fl.out, &res);
        if (st != AX_OK)
            rc = ax_cli_fail(CMD, st);
        else
            AX_INFO("wrote %s: vocab %d, %d merges, checksum %016" PRIx64 ", %.2f s", fl.out,
                    res.vocab, res.merges, res.checksum, res.seconds);
    }
out:
    ax_cfg_free(&train_table, &fl);
    return rc;
}

/* ---------------------------------------------------------------- encode */

static int cmd_encode(int argc, char **argv) {
    static const char *CMD = "data encode";
    encode_flags fl;
    int rc = ax_cli_parse(CMD, &encode_table, &fl, argc, argv, NULL);
    const char *const tok[][2] = {{fl.tokenizer, "--tokenizer TOK"}}, *const out[][2] = {
                                                                          {fl.out,
                                                                           "--out FILE.axd"}};
    if (rc >= 0) goto out;
    if ((rc = ax_cli_require(CMD, tok, 1))) goto out;
    if (!fl.input.n) {
        rc = ax_cli_usage(CMD, "%s", "--input FILE... is required");
    } else if (!(rc = ax_cli_require(CMD, out, 1))) {
        ax_data_encode_result res;
        ax_status st = ax_data_encode(fl.tokenizer, (const char *const *)fl.input.v, fl.input.n,
                                      fl.split_lines, (int)fl.threads, fl.out, &res);
        if (st != AX_OK)
            rc = ax_cli_fail(CMD, st);
        else
            AX_INFO("wrote %s", fl.out);
    }
out:
    ax_cfg_free(&encode_table, &fl);
    return rc;
}

/* ---------------------------------------------------------------- import-megatron */

static int cmd_import_megatron(int argc, char **argv) {
    static const char *CMD = "data import-megatron";
    megatron_flags fl;
    int rc = ax_cli_parse(CMD, &megatron_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    const char *const need[][2] = {{fl.prefix, "--prefix PATH"}, {fl.out, "--out FILE.axd"}};
    if ((rc = ax_cli_require(CMD, need, 2))) return rc;
    if (fl.vocab_size && fl.vocab_size < AX_TOK_FIRST_MERGE)
        return ax_cli_usage(CMD, "%s", "--vocab-size must be 0 (infer) or at least 257");
    ax_megatron_options o = {(uint32_t)fl.vocab_size, fl.eot};
    ax_megatron_result r;
    ax_status st = ax_megatron_import(fl.prefix, fl.out, &o, &r);
    if (st != AX_OK) return ax_cli_fail(CMD, st);
    AX_INFO("wrote %s: %" PRIu64 " docs, %" PRIu64 " tokens, vocab %u, end-of-text %u%s (appended "
            "to %" PRIu64 " documents)",
            fl.out, r.docs, r.tokens, r.vocab, r.eot, r.eot_inferred ? " (inferred)" : "",
            r.eot_added);
    return 0;
}

/* ---------------------------------------------------------------- decode */

/* --ids: every value holds ids separated by spaces or commas; n_ids bounds how many there are */
static int parse_ids(const ax_cfg_strlist *l, int vocab, int32_t *ids, size_t *n) {
    *n = 0;
    for (int k = 0; k < l->n; k++)
        for (const char *p = l->v[k]; *p;) {
            if (*p == ' ' || *p == ',' || *p == '\t' || *p == '\n') {
                p++;
                continue;
            }
            /* one id: the text up to the next separator, strictly decimal (no 0x10, +5) */
            size_t len = strcspn(p, " ,\t\n");
            char bad[64];
            snprintf(bad, sizeof bad, "%.*s", (int)len, p);
            int64_t x = -1;
            if (len >= sizeof bad || ax_parse_i64(bad, &x) != 1 || x < 0 || x >= vocab) {
                fprintf(stderr,
                        "axmem data decode: --ids: '%s' is not a token id in 0..%d; see "
                        "'axmem data decode --help'\n",
                        bad, vocab - 1);
                return 2;
            }
            ids[(*n)++] = (int32_t)x;
            p += len;
        }
    return 0;
}

static int cmd_decode(int argc, char **argv) {
    static const char *CMD = "data decode";
    decode_flags fl;
    uint8_t was_set[sizeof decode_entries / sizeof decode_entries[0]] = {0};
    ax_tokenizer_t *tok = NULL;
    int32_t *ids = NULL;
    ax_status st = AX_OK;
    int rc = ax_cli_parse(CMD, &decode_table, &fl, argc, argv, was_set);
    const char *const need[][2] = {{fl.tokenizer, "--tokenizer TOK"}};
    if (rc >= 0) goto out;
    if ((rc = ax_cli_require(CMD, need, 1))) goto out;
    if (!fl.data[0] == !fl.ids.n) {
        rc = ax_cli_usage(CMD, "%s", "pass exactly one of --data FILE.axd or --ids \"1 2 3\"");
        goto out;
    }
    if (was_set[DECODE_DOC] && !fl.data[0]) {
        rc = ax_cli_usage(CMD, "%s", "--doc needs --data");
        goto out;
    }
    st = ax_tokenizer_load(fl.tokenizer, &tok);
    if (st == AX_OK && fl.ids.n) {
        size_t n = 0, cap = 1;
        for (int k = 0; k < fl.ids.n; k++) cap += strlen(fl.ids.v[k]) / 2 + 1;
        if (!(ids = malloc(cap * sizeof *ids))) {
            st = ax_errorf(AX_ERR_NOMEM, "out of memory");
        } else if ((rc = parse_ids(&fl.ids, ax_tokenizer_vocab_size(tok), ids, &n))) {
            goto out;
        } else {
            st = ax_data_decode_ids(tok, ids, n, stdout);
        }
    } else if (st == AX_OK) {
        st = ax_data_decode(tok, fl.tokenizer, fl.data, was_set[DECODE_DOC] ? fl.doc : -1, stdout);
    }
    if (st != AX_OK) rc = ax_cli_fail(CMD, st);
out:
    free(ids);
    ax_tokenizer_free(tok);
    ax_cfg_free(&decode_table, &fl);
    return rc;
}

/* ---------------------------------------------------------------- info */

static int cmd_info(int argc, char **argv) {
    static const char *CMD = "data info";
    info_flags fl;
    ax_data_info in;
    int rc = ax_cli_parse(CMD, &info_table, &fl, argc, argv, NULL);
    if (rc >= 0) goto out;
    const char *path = fl.path.v[0]; /* required: the parser checked it is there */
    ax_status st = ax_data_info_read(path, fl.verify, &in);
    if (st != AX_OK) {
        rc = ax_cli_fail(CMD, st);
        goto out;
    }
    printf("path:       %s\n", path);
    printf("format:     axd v%d, %d-byte tokens\n", in.version, in.token_bytes);
    printf("vocab:      %u\n", in.vocab);
    printf("docs:       %" PRIu64 "\n", in.docs);
    printf("tokens:     %" PRIu64 "\n", in.tokens);
    printf("checksum:   %016" PRIx64 " (%s)\n", in.checksum,
           fl.verify ? "verified" : "not verified");
    if (in.tok_checksum)
        printf("tokenizer:  %016" PRIx64 "\n", in.tok_checksum);
    else
        printf("tokenizer:  unknown (imported, or written before datasets recorded it)\n");
    if (in.eot != AX_TOK_EOT) printf("end-of-text: %u\n", in.eot);
    if (in.docs)
        printf("tokens/doc: min %" PRIu64 ", median %" PRIu64 ", mean %.1f, p99 %" PRIu64
               ", max %" PRIu64 " (each includes end-of-text)\n",
               in.len_min, in.len_median, in.len_mean, in.len_p99, in.len_max);
    rc = 0;
out:
    ax_cfg_free(&info_table, &fl);
    return rc;
}

/* ---------------------------------------------------------------- split */

static int cmd_split(int argc, char **argv) {
    static const char *CMD = "data split";
    split_flags fl;
    ax_jw w;
    ax_jw_init(&w);
    int rc = ax_cli_parse(CMD, &split_table, &fl, argc, argv, NULL);
    if (rc >= 0) goto out;
    const char *const need[][2] = {{fl.input, "--input X.axd"},
                                   {fl.out_train, "--out-train A.axd"},
                                   {fl.out_holdout, "--out-holdout B.axd"}};
    if ((rc = ax_cli_require(CMD, need, 3))) goto out;
    ax_split_config c = {.holdout = fl.holdout, .seed = (uint64_t)fl.seed, .ngram = (int)fl.ngram};
    if (ax_parse_size(fl.max_memory, &c.max_memory) != 1 || c.max_memory == 0) {
        rc = ax_cli_usage(CMD, "--max-memory '%s' is not a positive size (e.g. 8G)", fl.max_memory);
        goto out;
    }
    if (fl.summary[0] &&
        (ax_data_same_file(fl.summary, fl.input) || ax_data_same_file(fl.summary, fl.out_train) ||
         ax_data_same_file(fl.summary, fl.out_holdout))) {
        rc = ax_cli_usage(CMD, "--summary %s must not be one of the datasets", fl.summary);
        goto out;
    }
    ax_split_result r;
    ax_status st = ax_data_split(fl.input, fl.out_train, fl.out_holdout, &c, &r);
    if (st == AX_OK) {
        ax_split_result_json(&r, &c, &w);
        st = ax_jw_text(&w) ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory writing the summary");
    }
    /* the summary is always printed, and written to --summary too */
    if (st == AX_OK && (printf("%s\n", ax_jw_text(&w)) < 0 || fflush(stdout) != 0))
        st = ax_errorf(AX_ERR_IO, "writing to stdout failed: %s", strerror(errno));
    if (st == AX_OK && fl.summary[0]) st = ax_write_text_atomic(fl.summary, ax_jw_text(&w), 0);
    if (st != AX_OK) {
        rc = ax_cli_fail(CMD, st);
        goto out;
    }
    AX_INFO("wrote %s (%" PRIu64 " docs) and %s (%" PRIu64 " docs; %" PRIu64
            " drawn documents dropped for a shared %d-gram)",
            fl.out_train, r.train_docs, fl.out_holdout, r.holdout_docs, r.dropped_docs, c.ngram);
out:
    ax_jw_free(&w);
    ax_cfg_free(&split_table, &fl);
    return rc;
}

/* ---------------------------------------------------------------- canaries */

enum { MAX_REPEATS = 64 };

/* "1,2,4": 0 and the counts, or 2 after a usage message */
static int parse_repeats(const char *s, int *out, int *n) {
    *n = 0;
    for (const char *p = s;;) {
        size_t len = strcspn(p, ",");
        char one[32];
        int64_t v = 0;
        snprintf(one, sizeof one, "%.*s", (int)(len < 31 ? len : 31), p);
        if (len == 0 || len > 30 || ax_parse_i64(one, &v) != 1 || v < 1 || v > 1000000 ||
            *n == MAX_REPEATS)
            return ax_cli_usage("data canaries",
                                "--repeats '%s' is not a list of up to 64 counts in 1..1000000, "
                                "e.g. 1,2,4,8",
                                s);
        out[(*n)++] = (int)v;
        if (!p[len]) return 0;
        p += len + 1;
    }
}

static int cmd_canaries(int argc, char **argv) {
    static const char *CMD = "data canaries";
    canary_flags fl;
    int reps[MAX_REPEATS], nrep;
    int rc = ax_cli_parse(CMD, &canary_table, &fl, argc, argv, NULL);
    if (rc >= 0) return rc;
    const char *const need[][2] = {{fl.input, "--input X.axd"},
                                   {fl.tokenizer, "--tokenizer TOK"},
                                   {fl.out, "--out Y.axd"},
                                   {fl.secrets, "--secrets FILE.json"}};
    if ((rc = ax_cli_require(CMD, need, 4)) || (rc = parse_repeats(fl.repeats, reps, &nrep)))
        return rc;
    ax_canary_config c = {.input = fl.input,
                          .tokenizer = fl.tokenizer,
                          .format = fl.format,
                          .out = fl.out,
                          .secrets = fl.secrets,
                          .repeats = reps,
                          .n_repeats = nrep,
                          .per_repeat = (int)fl.per_repeat,
                          .references = (long)fl.references,
                          .seed = (uint64_t)fl.seed,
                          .as_documents = fl.as_documents,
                          .within = (long)fl.within};
    ax_canary_result r;
    ax_status st = ax_data_canaries(&c, &r);
    if (st != AX_OK) return ax_cli_fail(CMD, st);
    AX_INFO("wrote %s: %ld canaries, %" PRIu64 " copies %s, %" PRIu64
            " tokens added; %s: %ld reference secrets%s of a space of %.0f",
            fl.out, r.canaries, r.insertions,
            fl.as_documents ? "as documents" : "between sentences", r.tokens_added, fl.secrets,
            r.references, r.references_complete ? " (all the rest)" : "", r.space);
    return 0;
}

/* `data dedup` (index/cmd_dedup.c) is a layer above this one: the dispatcher sets its entry */
static int (*dedup_entry)(int, char **);
void ax_cmd_data_set_dedup(int (*entry)(int, char **)) {
    dedup_entry = entry;
}
static int cmd_dedup(int argc, char **argv) {
    if (dedup_entry) return dedup_entry(argc, argv);
    fprintf(stderr, "axmem data dedup: not linked into this program\n");
    return 1;
}

int ax_cmd_data(int argc, char **argv) {
    static const ax_cli_sub subs[] = {{"tokenizer-train", cmd_train},
                                      {"encode", cmd_encode},
                                      {"import-megatron", cmd_import_megatron},
                                      {"decode", cmd_decode},
                                      {"info", cmd_info},
                                      {"split", cmd_split},
                                      {"canaries", cmd_canaries},
                                      {"dedup", cmd_dedup}};
    return ax_cli_dispatch("data", TOP_HELP, subs, (int)(sizeof subs / sizeof subs[0]), argc, argv);
}
