/* `axmem demo`: the main job end to end on the bundled corpus, by calling the same entry
 * points a user would: train a tokenizer, encode the corpus, train a model. */
#include "cli/commands.h"
#include "lib/fsutil.h"
#include "lib/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run(const char *what, int (*fn)(int, char **), char **argv) {
    int argc = 0;
    while (argv[argc]) argc++;
    AX_INFO("demo: %s", what);
    int rc = fn(argc, argv);
    if (rc) fprintf(stderr, "axmem demo: step '%s' failed (exit %d)\n", what, rc);
    return rc;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: axmem demo [--out DIR] [--corpus FILE.jsonl] [--steps N] [--vocab-size N]\n\n"
            "Runs the main job on the bundled public-domain corpus (KJV, one document per\n"
            "chapter): trains a byte-level BPE tokenizer, encodes the corpus to a .axd\n"
            "dataset and trains a baseline model, writing everything under DIR.\n\n"
            "  --out DIR         output folder (default runs/demo)\n"
            "  --corpus FILE     JSONL corpus (default data/corpus/kjv.jsonl)\n"
            "  --steps N         training steps (default 300)\n"
            "  --vocab-size N    tokenizer vocabulary (default 2048)\n");
}

int ax_cmd_demo(int argc, char **argv) {
    const char *out = "runs/demo", *corpus = "data/corpus/kjv.jsonl", *steps = "300",
               *vocab = "2048";
    for (int i = 1; i < argc; i++) {
        const char **dst = NULL;
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--out"))
            dst = &out;
        else if (!strcmp(argv[i], "--corpus"))
            dst = &corpus;
        else if (!strcmp(argv[i], "--steps"))
            dst = &steps;
        else if (!strcmp(argv[i], "--vocab-size"))
            dst = &vocab;
        else {
            fprintf(stderr, "axmem demo: unknown flag '%s'; see axmem demo --help\n", argv[i]);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "axmem demo: %s needs a value; see axmem demo --help\n", argv[i]);
            return 2;
        }
        *dst = argv[++i];
    }
    if (ax_mkdir_p(out) != AX_OK) {
        fprintf(stderr, "axmem demo: %s\n", ax_error_msg());
        return 1;
    }
    char tok[1024], axd[1024], run_dir[1024];
    snprintf(tok, sizeof tok, "%s/tokenizer.axt", out);
    snprintf(axd, sizeof axd, "%s/corpus.axd", out);
    snprintf(run_dir, sizeof run_dir, "%s/baseline", out);
    char *tok_argv[] = {"data",
                        "tokenizer-train",
                        "--input",
                        (char *)corpus,
                        "--vocab-size",
                        (char *)vocab,
                        "--out",
                        tok,
                        NULL};
    char *enc_argv[] = {"data",         "encode", "--tokenizer", tok, "--input",
                        (char *)corpus, "--out",  axd,           NULL};
    char *train_argv[] = {"train",       "--data",    axd,           "--tokenizer", tok,
                          "--out",       run_dir,     "--model",     "tiny",        "--steps",
                          (char *)steps, "--seq-len", "128",         "--batch",     "16",
                          "--lr",        "2e-3",      "--log-every", "25",          NULL};
    int rc;
    if ((rc = run("train the tokenizer", ax_cmd_data, tok_argv))) return rc;
    if ((rc = run("encode the corpus", ax_cmd_data, enc_argv))) return rc;
    if (ax_path_exists(run_dir)) ax_rm_rf(run_dir); /* the demo always starts fresh */
    if ((rc = run("train the baseline model", ax_cmd_train, train_argv))) return rc;
    AX_INFO("demo: done; outputs in %s (tokenizer, dataset, %s/metrics.jsonl, checkpoints)", out,
            run_dir);
    return 0;
}
