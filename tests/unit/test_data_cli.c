/* `axmem data` end to end in-process: train, encode, info, decode, and exit codes. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "data/axd.h"
#include "data/data_run.h"
#include "lib/core/log.h"
#include "test_data_util.h"

static int run(const char *line) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", line);
    char *argv[64];
    int argc = 0;
    for (char *tok = strtok(buf, " "); tok && argc < 63; tok = strtok(NULL, " "))
        argv[argc++] = tok;
    argv[argc] = NULL;
    return ax_cmd_data(argc, argv);
}

/* runs with stdout captured into a file; returns the exit code, *out the bytes */
static int run_capture(const char *line, const char *cap, uint8_t **out, size_t *n) {
    fflush(stdout);
    FILE *saved = stdout;
    FILE *f = fopen(cap, "wb");
    cr_assert(f);
    stdout = f;
    int rc = run(line);
    fflush(f);
    stdout = saved;
    fclose(f);
    *out = td_read(cap, n);
    return rc;
}

Test(data_cli, train_encode_info_decode) {
    ax_log_set_level(AX_LOG_WARN);
    char txt[256], jl[256], tok[256], axd[256], cap[256], cmd[2048];
    td_tmp(txt, sizeof txt, "cli.txt");
    td_tmp(jl, sizeof jl, "cli.jsonl");
    td_tmp(tok, sizeof tok, "cli.tok");
    td_tmp(axd, sizeof axd, "cli.axd");
    td_tmp(cap, sizeof cap, "cli.out");
    const char *text = "first line of text\n\nsecond line, with more words\nthird\n";
    cr_assert(td_write(txt, text, strlen(text)));
    const char *j = "{\"text\": \"json doc \\u00e9\"}\n{\"text\": \"\"}\n";
    cr_assert(td_write(jl, j, strlen(j)));

    snprintf(cmd, sizeof cmd, "data tokenizer-train --input %s %s --vocab-size 270 --out %s", txt,
             jl, tok);
    cr_assert_eq(run(cmd), 0);
    snprintf(cmd, sizeof cmd,
             "data encode --tokenizer %s --input %s --input %s --split-lines --out %s", tok, txt,
             jl, axd);
    cr_assert_eq(run(cmd), 0);
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(axd, 1, &d), AX_OK);
    cr_assert_eq(ax_axd_n_docs(d), 5); /* 3 non-empty lines + 2 JSONL docs */
    cr_assert_eq(ax_axd_vocab_size(d), 270);
    ax_axd_free(d);

    uint8_t *out;
    size_t n;
    snprintf(cmd, sizeof cmd, "data decode --tokenizer %s --data %s --doc 1", tok, axd);
    cr_assert_eq(run_capture(cmd, cap, &out, &n), 0);
    cr_assert_eq(n, strlen("second line, with more words"));
    cr_assert(!memcmp(out, "second line, with more words", n));
    free(out);
    snprintf(cmd, sizeof cmd, "data decode --tokenizer %s --data %s", tok, axd);
    cr_assert_eq(run_capture(cmd, cap, &out, &n), 0);
    const char *all = "first line of textsecond line, with more wordsthirdjson doc \xc3\xa9";
    cr_assert_eq(n, strlen(all));
    cr_assert(!memcmp(out, all, n));
    free(out);
    snprintf(cmd, sizeof cmd, "data decode --tokenizer %s --ids 104,105,32", tok);
    cr_assert_eq(run_capture(cmd, cap, &out, &n), 0);
    cr_assert(n == 3 && !memcmp(out, "hi ", 3));
    free(out);
    snprintf(cmd, sizeof cmd, "data info %s", axd);
    cr_assert_eq(run_capture(cmd, cap, &out, &n), 0);
    out = realloc(out, n + 1);
    out[n] = 0;
    cr_assert(strstr((char *)out, "docs:       5"), "%s", out);
    cr_assert(strstr((char *)out, "vocab:      270"), "%s", out);
    cr_assert(strstr((char *)out, "verified"), "%s", out);
    free(out);
    unlink(txt);
    unlink(jl);
    unlink(tok);
    unlink(axd);
    unlink(cap);
}

Test(data_cli, exit_codes) {
    ax_log_set_level(AX_LOG_ERROR);
    char tok[256], cmd[1024];
    td_tmp(tok, sizeof tok, "codes.tok");
    cr_assert_eq(run("data"), 2);
    cr_assert_eq(run("data bogus"), 2);
    cr_assert_eq(run("data encode --bogus"), 2);
    cr_assert_eq(run("data encode --input x"), 2);      /* missing --tokenizer */
    cr_assert_eq(run("data tokenizer-train --out"), 2); /* missing value */
    cr_assert_eq(run("data tokenizer-train --input a --out b --vocab-size 12"), 2);
    cr_assert_eq(run("data decode --tokenizer t"), 2); /* neither --data nor --ids */
    cr_assert_eq(run("data info"), 2);
    snprintf(cmd, sizeof cmd, "data tokenizer-train --input /nonexistent/in.txt --out %s", tok);
    cr_assert_eq(run(cmd), 1);
    cr_assert_eq(run("data encode --tokenizer /nonexistent/t --input x --out y"), 1);
    cr_assert_eq(run("data info /nonexistent/x.axd"), 1);
    cr_assert_neq(access(tok, F_OK), 0);
}

Test(data_cli, help_exits_zero, .init = cr_redirect_stdout) {
    cr_assert_eq(run("data --help"), 0);
    cr_assert_eq(run("data tokenizer-train --help"), 0);
    cr_assert_eq(run("data encode --help"), 0);
    cr_assert_eq(run("data decode -h"), 0);
    cr_assert_eq(run("data info --help"), 0);
}

/* The library entry points (data/data_run.h) are what the command runs: same tokenizer file, same
 * dataset bytes, and results that count what was written. */
Test(data_cli, library_calls_match_the_command) {
    ax_log_set_level(AX_LOG_WARN);
    char txt[256], tok_a[256], tok_b[256], axd_a[256], axd_b[256], cmd[2048];
    td_tmp(txt, sizeof txt, "lib.txt");
    td_tmp(tok_a, sizeof tok_a, "lib_a.tok");
    td_tmp(tok_b, sizeof tok_b, "lib_b.tok");
    td_tmp(axd_a, sizeof axd_a, "lib_a.axd");
    td_tmp(axd_b, sizeof axd_b, "lib_b.axd");
    const char *text = "the cat sat on the mat\nthe dog sat on the log\n\nthe end\n";
    cr_assert(td_write(txt, text, strlen(text)));
    snprintf(cmd, sizeof cmd, "data tokenizer-train --input %s --vocab-size 264 --out %s", txt,
             tok_a);
    cr_assert_eq(run(cmd), 0);
    const char *inputs[] = {txt};
    ax_data_tokenizer_result tr;
    cr_assert_eq(ax_data_tokenizer_train(inputs, 1, 0, 264, 0, tok_b, &tr), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(tr.vocab, 264);
    cr_assert_eq(tr.merges, 264 - 257);
    size_t na, nb;
    uint8_t *a = td_read(tok_a, &na), *b = td_read(tok_b, &nb);
    cr_assert(na == nb && !memcmp(a, b, na), "tokenizer files differ");
    free(a);
    free(b);

    snprintf(cmd, sizeof cmd, "data encode --tokenizer %s --input %s --split-lines --out %s", tok_a,
             txt, axd_a);
    cr_assert_eq(run(cmd), 0);
    ax_data_encode_result er;
    cr_assert_eq(ax_data_encode(tok_a, inputs, 1, 1, 2, axd_b, &er), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(er.docs, 3);
    cr_assert_eq(er.text_bytes, strlen("the cat sat on the mat") * 2 + strlen("the end"));
    ax_axd_t *d;
    cr_assert_eq(ax_axd_open(axd_b, 1, &d), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_axd_n_tokens(d), er.tokens);
    ax_axd_free(d);
    a = td_read(axd_a, &na), b = td_read(axd_b, &nb);
    cr_assert(na == nb && !memcmp(a, b, na), "datasets differ");
    free(a);
    free(b);
    /* a missing tokenizer is an error with a message, and no dataset appears */
    unlink(axd_b);
    ax_error_clear();
    cr_assert_neq(ax_data_encode("/nonexistent/t.tok", inputs, 1, 0, 1, axd_b, &er), AX_OK);
    cr_assert(strstr(ax_error_msg(), "/nonexistent/t.tok"), "%s", ax_error_msg());
    cr_assert_neq(access(axd_b, F_OK), 0);
    ax_error_clear();
    unlink(txt);
    unlink(tok_a);
    unlink(tok_b);
    unlink(axd_a);
}
