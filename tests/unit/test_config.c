#include <criterion/criterion.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/cliargs.h"
#include "lib/core/config.h"
#include "lib/core/fsutil.h"

typedef struct {
    int64_t steps;
    double lr;
    char out[AX_CFG_STR_MAX];
    int fast;
    int64_t seed;
} tcfg;

static const ax_cfg_entry entries[] = {
    {"steps", AX_CFG_INT, offsetof(tcfg, steps), "100", 1, 1e9, "optimizer steps"},
    {"lr", AX_CFG_FLOAT, offsetof(tcfg, lr), "3e-4", 0, 1, "peak learning rate"},
    {"out", AX_CFG_STR, offsetof(tcfg, out), "runs/x", 1, 0, "output directory"},
    {"fast", AX_CFG_BOOL, offsetof(tcfg, fast), "false", 1, 0, "skip the slow checks"},
    {"seed", AX_CFG_INT, offsetof(tcfg, seed), "-1", 1, 0, "random seed (unbounded)"},
};
static const ax_cfg_table table = {"axmem train [flags]", "Trains a model.", entries, 5, NULL};

static tcfg fresh(void) {
    tcfg c;
    memset(&c, 0x5a, sizeof c);
    cr_assert_eq(ax_cfg_set_defaults(&table, &c), AX_OK, "%s", ax_error_msg());
    return c;
}

/* argv with argv[0] = "train"; returns the status, message in ax_error_msg() */
static ax_status parse(tcfg *c, uint8_t *was_set, int *help, int n, ...) {
    char *argv[16] = {"train"};
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) argv[i + 1] = va_arg(ap, char *);
    va_end(ap);
    ax_error_clear();
    return ax_cfg_parse_argv(&table, c, n + 1, argv, was_set, help);
}

static void tmpfile_with(char *path, size_t size, const char *text) {
    snprintf(path, size, "/tmp/axcfg-%d-%ld.txt", (int)getpid(), random());
    cr_assert_eq(ax_write_file(path, text, strlen(text)), AX_OK, "%s", ax_error_msg());
}

Test(config, defaults) {
    tcfg c = fresh();
    cr_assert_eq(c.steps, 100);
    cr_assert_eq(c.lr, 3e-4);
    cr_assert_str_eq(c.out, "runs/x");
    cr_assert_eq(c.fast, 0);
    cr_assert_eq(c.seed, -1);
    cr_assert_eq(ax_cfg_find(&table, "lr"), &entries[1]);
    cr_assert_null(ax_cfg_find(&table, "nope"));
}

Test(config, flags_space_and_equals) {
    tcfg c = fresh();
    uint8_t set[5] = {0};
    int help = 7;
    cr_assert_eq(parse(&c, set, &help, 5, "--steps", "5", "--lr=0.5", "--out", "a b"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(help, 0);
    cr_assert_eq(c.steps, 5);
    cr_assert_eq(c.lr, 0.5);
    cr_assert_str_eq(c.out, "a b");
    cr_assert_eq(set[0] + set[1] + set[2], 3);
    cr_assert_eq(set[3] + set[4], 0);
    /* negative numbers are values, not flags; 1e6 is an integer */
    cr_assert_eq(parse(&c, NULL, NULL, 4, "--seed", "-7", "--steps", "1e6"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(c.seed, -7);
    cr_assert_eq(c.steps, 1000000);
}

Test(config, bool_flags) {
    tcfg c = fresh();
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--fast"), AX_OK);
    cr_assert_eq(c.fast, 1);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--no-fast"), AX_OK);
    cr_assert_eq(c.fast, 0);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--fast=yes"), AX_OK);
    cr_assert_eq(c.fast, 1);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--fast=false"), AX_OK);
    cr_assert_eq(c.fast, 0);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--fast=maybe"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--fast=maybe"), "%s", ax_error_msg());
    /* "--fast true" is a mistake the message explains */
    cr_assert_eq(parse(&c, NULL, NULL, 2, "--fast", "true"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--fast=true"), "%s", ax_error_msg());
}

Test(config, range_and_type_errors) {
    tcfg c = fresh();
    cr_assert_eq(parse(&c, NULL, NULL, 2, "--lr", "2"), AX_ERR_ARG);
    const char *m = ax_error_msg();
    cr_assert(strstr(m, "--lr") && strstr(m, "2") && strstr(m, "[0, 1]"), "%s", m);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--steps=0"), AX_ERR_ARG);
    m = ax_error_msg();
    cr_assert(strstr(m, "--steps=0") && strstr(m, "out of range") && strstr(m, "1000000000"), "%s",
              m);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--steps=abc"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "not an integer"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--steps=1.5"), AX_ERR_ARG);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--lr=0.1x"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "not a number"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--lr=nan"), AX_ERR_ARG);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--lr="), AX_ERR_ARG);
    /* failed sets leave the old value */
    cr_assert_eq(c.lr, 3e-4);
    cr_assert_eq(c.steps, 100);
    char big[AX_CFG_STR_MAX + 10];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = 0;
    ax_error_clear();
    cr_assert_eq(ax_cfg_set(&table, &c, "out", big, NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--out"), "%s", ax_error_msg());
}

Test(config, unknown_and_missing) {
    tcfg c = fresh();
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--foo"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "unknown flag --foo for 'axmem train'"), "%s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), "axmem train --help"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 2, "--step", "3"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "did you mean --steps"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--lr"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--lr needs a value"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 3, "--lr", "--steps", "4"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--lr needs a value"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 1, "data.txt"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "'data.txt'"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_cfg_set(&table, &c, "bogus", "1", NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--bogus"), "%s", ax_error_msg());
}

Test(config, help_flag) {
    tcfg c = fresh();
    int help = 0;
    cr_assert_eq(parse(&c, NULL, &help, 2, "--steps=3", "--help"), AX_OK);
    cr_assert_eq(help, 1);
    help = 0;
    cr_assert_eq(parse(&c, NULL, &help, 1, "-h"), AX_OK);
    cr_assert_eq(help, 1);
}

Test(config, config_file_and_override) {
    char path[256];
    tmpfile_with(path, sizeof path,
                 "# a comment\n\n  steps = 7\nlr=0.25   # inline comment\nout = \"x # y\"\r\n"
                 "fast = true\n");
    tcfg c = fresh();
    uint8_t set[5] = {0};
    /* the command-line flag wins even though it comes before --config */
    cr_assert_eq(parse(&c, set, NULL, 3, "--steps=9", "--config", path), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(c.steps, 9);
    cr_assert_eq(c.lr, 0.25);
    cr_assert_str_eq(c.out, "x # y");
    cr_assert_eq(c.fast, 1);
    cr_assert_eq(set[0] && set[1] && set[2] && set[3], 1);
    cr_assert_eq(set[4], 0);
    unlink(path);
}

Test(config, config_file_errors_name_file_and_line) {
    char path[256];
    tmpfile_with(path, sizeof path, "steps = 7\nlr = 5\n");
    tcfg c = fresh();
    char flag[300];
    snprintf(flag, sizeof flag, "--config=%s", path);
    cr_assert_eq(parse(&c, NULL, NULL, 1, flag), AX_ERR_ARG);
    char want[300];
    snprintf(want, sizeof want, "%s:2: --lr=5", path);
    cr_assert(strstr(ax_error_msg(), want), "%s", ax_error_msg());
    unlink(path);

    tmpfile_with(path, sizeof path, "stepz = 7\n");
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "--stepz"), "%s",
              ax_error_msg());
    unlink(path);

    tmpfile_with(path, sizeof path, "steps 7\n");
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "name = value"), "%s", ax_error_msg());
    unlink(path);

    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, "/tmp/axcfg-does-not-exist.txt", NULL), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "/tmp/axcfg-does-not-exist.txt"), "%s", ax_error_msg());
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--config"), AX_ERR_ARG);
}

Test(config, json_round_trip) {
    tcfg a = fresh();
    cr_assert_eq(parse(&a, NULL, NULL, 5, "--steps=123456789", "--lr=0.1", "--out=q\"\\\n",
                       "--fast", "--seed=-9007199254740993"),
                 AX_OK, "%s", ax_error_msg());
    ax_jw w;
    ax_jw_init(&w);
    ax_cfg_write_json(&table, &a, &w);
    const char *text = ax_jw_text(&w);
    cr_assert(strstr(text, "\"lr\":0.1,"), "%s", text);
    ax_json *o;
    cr_assert_eq(ax_json_parse(text, strlen(text), "m", &o), AX_OK);
    tcfg b = fresh();
    cr_assert_eq(ax_cfg_read_json(&table, &b, o, "manifest.json"), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(b.steps, a.steps);
    cr_assert_eq(b.lr, a.lr);
    cr_assert_str_eq(b.out, a.out);
    cr_assert_eq(b.fast, 1);
    cr_assert_eq(b.seed, -9007199254740992); /* beyond 2^53: a double holds the nearest */
    ax_json_free(o);
    ax_jw_free(&w);

    /* unknown keys are ignored, missing keep values, wrong types fail naming the key */
    const char *j = "{\"zzz\":1,\"lr\":0.5}";
    cr_assert_eq(ax_json_parse(j, strlen(j), "m", &o), AX_OK);
    cr_assert_eq(ax_cfg_read_json(&table, &b, o, "m"), AX_OK);
    cr_assert_eq(b.lr, 0.5);
    cr_assert_eq(b.steps, a.steps);
    ax_json_free(o);
    j = "{\"steps\":\"many\"}";
    cr_assert_eq(ax_json_parse(j, strlen(j), "m", &o), AX_OK);
    ax_error_clear();
    cr_assert_eq(ax_cfg_read_json(&table, &b, o, "ck/manifest.json"), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "ck/manifest.json") && strstr(ax_error_msg(), "steps"), "%s",
              ax_error_msg());
    ax_json_free(o);
}

Test(config, json_config_file) {
    char path[256];
    tmpfile_with(path, sizeof path, " {\"steps\": 11, \"fast\": true}");
    tcfg c = fresh();
    uint8_t set[5] = {0};
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, set), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(c.steps, 11);
    cr_assert_eq(c.fast, 1);
    cr_assert_eq(set[0] + set[3], 2);
    unlink(path);
}

Test(config, help_output) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ax_cfg_print_help(&table, f);
    fclose(f);
    cr_assert(strstr(buf, "usage: axmem train [flags]"), "%s", buf);
    cr_assert(strstr(buf, "Trains a model."), "%s", buf);
    for (int i = 0; i < table.n; i++) {
        char flag[80];
        snprintf(flag, sizeof flag, "--%s", entries[i].name);
        cr_assert(strstr(buf, flag), "missing %s in:\n%s", flag, buf);
        cr_assert(strstr(buf, entries[i].help), "missing help of %s", flag);
    }
    cr_assert(strstr(buf, "--no-fast"));
    cr_assert(strstr(buf, "(default: 3e-4)"), "%s", buf);
    cr_assert(strstr(buf, "[0..1]"), "%s", buf);
    cr_assert(strstr(buf, "--config FILE"));
    /* help texts start in one column */
    const char *a = strstr(buf, "optimizer steps"), *b = strstr(buf, "peak learning rate");
    const char *la = a, *lb = b;
    while (la[-1] != '\n') la--;
    while (lb[-1] != '\n') lb--;
    cr_assert_eq(a - la, b - lb, "%s", buf);
    free(buf);
}

/* ---- list flags and positional arguments ---- */

typedef struct {
    ax_cfg_strlist input, run;
    int64_t n;
    int quiet;
    ax_cfg_strlist args;
} lcfg;

static const ax_cfg_entry lentries[] = {
    {"input", AX_CFG_STRLIST, offsetof(lcfg, input), "", 1, 0, "input files"},
    {"run", AX_CFG_STRLIST, offsetof(lcfg, run), "", 1, 0, "LABEL=DIR"},
    {"n", AX_CFG_INT, offsetof(lcfg, n), "3", 1, 9, "count"},
    {"quiet", AX_CFG_BOOL, offsetof(lcfg, quiet), "false", 1, 0, "say less"},
};
static const ax_cfg_positional one_file = {"FILE", offsetof(lcfg, args), 0, 1, "the file"};
static const ax_cfg_positional many_text = {"TEXT", offsetof(lcfg, args), 1, 0, "words"};
static const ax_cfg_table ltable = {"axmem thing [flags]", "Does a thing.", lentries, 4, NULL};

static ax_status lparse(const ax_cfg_table *t, lcfg *c, int n, ...) {
    char *argv[16] = {"thing"};
    va_list ap;
    va_start(ap, n);
    for (int i = 0; i < n; i++) argv[i + 1] = va_arg(ap, char *);
    va_end(ap);
    memset(c, 0x5a, sizeof *c); /* set_defaults must not read what was there */
    cr_assert_eq(ax_cfg_set_defaults(t, c), AX_OK, "%s", ax_error_msg());
    ax_error_clear();
    return ax_cfg_parse_argv(t, c, n + 1, argv, NULL, NULL);
}

Test(config, strlist_takes_values_up_to_the_next_flag) {
    lcfg c;
    cr_assert_eq(
        lparse(&ltable, &c, 9, "--input", "a", "b", "-c", "--n", "4", "--input=d", "--input", "e"),
        AX_OK, "%s", ax_error_msg());
    cr_assert_eq(c.input.n, 5);
    const char *want[] = {"a", "b", "-c", "d", "e"};
    for (int i = 0; i < 5; i++) cr_assert_str_eq(c.input.v[i], want[i]);
    cr_assert_eq(c.n, 4);
    cr_assert_eq(c.run.n, 0);
    ax_cfg_free(&ltable, &c);
    cr_assert_eq(c.input.n, 0);
    cr_assert_null(c.input.v);
    /* repeated --run LABEL=DIR; "--run=" keeps an empty value */
    cr_assert_eq(lparse(&ltable, &c, 4, "--run", "x=1", "--run", "y=2"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(c.run.n, 2);
    cr_assert_str_eq(c.run.v[1], "y=2");
    ax_cfg_free(&ltable, &c);
}

Test(config, strlist_errors) {
    lcfg c;
    cr_assert_eq(lparse(&ltable, &c, 2, "--input", "--quiet"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--input needs a value"), "%s", ax_error_msg());
    ax_cfg_free(&ltable, &c);
    cr_assert_eq(lparse(&ltable, &c, 2, "--inputs", "a"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "did you mean --input?"), "%s", ax_error_msg());
    ax_cfg_free(&ltable, &c);
    /* without a positional in the table, a stray argument after a non-list flag is an error */
    cr_assert_eq(lparse(&ltable, &c, 3, "--n", "2", "stray"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "'stray'"), "%s", ax_error_msg());
    ax_cfg_free(&ltable, &c);
}

Test(config, strlist_from_config_files_json_and_manifest) {
    char path[128];
    tmpfile_with(path, sizeof path, "input = a.txt\ninput = \"b c.txt\"\n");
    lcfg c;
    cr_assert_eq(lparse(&ltable, &c, 4, "--config", path, "--input", "z"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(c.input.n, 3); /* the file's values, then the command line's */
    cr_assert_str_eq(c.input.v[1], "b c.txt");
    cr_assert_str_eq(c.input.v[2], "z");
    ax_jw w;
    ax_jw_init(&w);
    ax_cfg_write_json(&ltable, &c, &w);
    cr_assert(strstr(ax_jw_text(&w), "\"input\":[\"a.txt\",\"b c.txt\",\"z\"]"), "%s",
              ax_jw_text(&w));
    ax_json *o;
    cr_assert_eq(ax_json_parse(ax_jw_text(&w), strlen(ax_jw_text(&w)), "m", &o), AX_OK);
    lcfg d;
    cr_assert_eq(ax_cfg_set_defaults(&ltable, &d), AX_OK);
    cr_assert_eq(ax_cfg_read_json(&ltable, &d, o, "m"), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(d.input.n, 3);
    cr_assert_str_eq(d.input.v[2], "z");
    ax_json_free(o);
    ax_jw_free(&w);
    ax_cfg_free(&ltable, &d);
    ax_cfg_free(&ltable, &c);
    unlink(path);
    /* a JSON config with a string where a list belongs is rejected, naming the key */
    tmpfile_with(path, sizeof path, "{\"input\": 3}");
    cr_assert_eq(lparse(&ltable, &c, 2, "--config", path), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "\"input\" should be an array of strings"), "%s",
              ax_error_msg());
    ax_cfg_free(&ltable, &c);
    unlink(path);
}

Test(config, strlist_default_must_be_empty) {
    static const ax_cfg_entry bad[] = {
        {"input", AX_CFG_STRLIST, offsetof(lcfg, input), "x", 1, 0, "input files"}};
    static const ax_cfg_table t = {"axmem bad [flags]", "", bad, 1, NULL};
    lcfg c;
    cr_assert_eq(ax_cfg_set_defaults(&t, &c), AX_ERR_INTERNAL);
    cr_assert(strstr(ax_error_msg(), "--input"), "%s", ax_error_msg());
}

Test(config, one_positional) {
    ax_cfg_table t = ltable;
    t.positional = &one_file;
    lcfg c;
    cr_assert_eq(lparse(&t, &c, 3, "--quiet", "f.axd", "--n=2"), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(c.args.n, 1);
    cr_assert_str_eq(c.args.v[0], "f.axd");
    cr_assert_eq(c.quiet, 1);
    cr_assert_eq(c.n, 2);
    ax_cfg_free(&t, &c);
    cr_assert_eq(lparse(&t, &c, 2, "a", "b"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "takes one FILE; got 'a' and 'b'"), "%s", ax_error_msg());
    ax_cfg_free(&t, &c);
    cr_assert_eq(lparse(&t, &c, 1, "--quiet"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "FILE is required"), "%s", ax_error_msg());
    ax_cfg_free(&t, &c);
    int help = 0;
    char *argv[] = {"thing", "--help"};
    cr_assert_eq(ax_cfg_set_defaults(&t, &c), AX_OK);
    cr_assert_eq(ax_cfg_parse_argv(&t, &c, 2, argv, NULL, &help), AX_OK, "--help needs no FILE");
    cr_assert_eq(help, 1);
    ax_cfg_free(&t, &c);
}

Test(config, many_positionals_and_double_dash) {
    ax_cfg_table t = ltable;
    t.positional = &many_text;
    lcfg c;
    cr_assert_eq(lparse(&t, &c, 6, "hello", "--n", "5", "world", "--", "--quiet"), AX_OK, "%s",
                 ax_error_msg());
    cr_assert_eq(c.args.n, 3);
    cr_assert_str_eq(c.args.v[1], "world");
    cr_assert_str_eq(c.args.v[2], "--quiet", "after --, flags are text");
    cr_assert_eq(c.quiet, 0);
    cr_assert_eq(c.n, 5);
    ax_cfg_free(&t, &c);
    cr_assert_eq(lparse(&t, &c, 0), AX_OK, "TEXT is optional here");
    cr_assert_eq(c.args.n, 0);
}

Test(config, help_shows_lists_and_positionals) {
    ax_cfg_table t = ltable;
    t.positional = &one_file;
    char path[128];
    tmpfile_with(path, sizeof path, "");
    FILE *f = fopen(path, "w");
    ax_cfg_print_help(&t, f);
    fclose(f);
    char *text;
    size_t len;
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK);
    cr_assert(strstr(text, "usage: axmem thing [flags] FILE\n"), "%s", text);
    cr_assert(strstr(text, "arguments:\n  FILE  the file\n"), "%s", text);
    cr_assert(strstr(text, "--input string...") && strstr(text, "(repeatable)"), "%s", text);
    free(text);
    t.positional = &many_text;
    f = fopen(path, "w");
    ax_cfg_print_help(&t, f);
    fclose(f);
    cr_assert_eq(ax_read_file(path, &text, &len), AX_OK);
    cr_assert(strstr(text, "usage: axmem thing [flags] [TEXT...]\n"), "%s", text);
    free(text);
    unlink(path);
}

/* Numbers mean what a person means: anything else is an error naming the flag. */
Test(config, integers_and_floats_are_strict_decimal) {
    const char *bad_int[] = {"0x10", "010", "+5",  " 5", "5 ", "5k", "1.5", "1e-1", "--5",
                             "0b1",  "5,0", "inf", "",   "-",  "1e", "e5",  "5.",   "1e999"};
    for (size_t i = 0; i < sizeof bad_int / sizeof *bad_int; i++) {
        tcfg c = fresh();
        char flag[64];
        snprintf(flag, sizeof flag, "--steps=%s", bad_int[i]);
        cr_assert_eq(parse(&c, NULL, NULL, 1, flag), AX_ERR_ARG, "accepted %s", flag);
        cr_assert(strstr(ax_error_msg(), "--steps"), "%s: %s", flag, ax_error_msg());
        cr_assert_eq(c.steps, 100, "%s changed the value", flag);
    }
    /* integral decimal exponents still work for counts: 1e6, 2.5e3 */
    const struct {
        const char *text;
        int64_t want;
    } good_int[] = {{"16", 16}, {"0", 0}, {"-7", -7}, {"1e6", 1000000}, {"2.5e3", 2500}};
    for (size_t i = 0; i < sizeof good_int / sizeof *good_int; i++) {
        tcfg c = fresh();
        cr_assert_eq(parse(&c, NULL, NULL, 2, "--seed", good_int[i].text), AX_OK, "%s: %s",
                     good_int[i].text, ax_error_msg());
        cr_assert_eq(c.seed, good_int[i].want, "%s", good_int[i].text);
    }
    const char *bad_float[] = {"0x1p-3", "+0.5", " 0.5", "0.5 ", "inf", "nan",
                               "1e999",  "0.5x", "00.5", ".",    "1e+", "-"};
    for (size_t i = 0; i < sizeof bad_float / sizeof *bad_float; i++) {
        tcfg c = fresh();
        char flag[64];
        snprintf(flag, sizeof flag, "--lr=%s", bad_float[i]);
        cr_assert_eq(parse(&c, NULL, NULL, 1, flag), AX_ERR_ARG, "accepted %s", flag);
        cr_assert(strstr(ax_error_msg(), "--lr"), "%s", ax_error_msg());
    }
    tcfg c = fresh();
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--lr=.5"), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(c.lr, 0.5);
    cr_assert_eq(parse(&c, NULL, NULL, 1, "--lr=1e-3"), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(c.lr, 1e-3);
    /* the same rules in config files */
    char path[256];
    tmpfile_with(path, sizeof path, "steps = 0x10\n");
    c = fresh();
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "--steps=0x10"), "%s",
              ax_error_msg());
    unlink(path);
}

Test(config, strict_number_helpers) {
    int64_t i = 0;
    cr_assert_eq(ax_parse_i64("9223372036854775807", &i), 1);
    cr_assert_eq(i, INT64_MAX);
    cr_assert_eq(ax_parse_i64("9223372036854775808", &i), -1);
    cr_assert_eq(ax_parse_i64("1e300", &i), -1);
    cr_assert_eq(ax_parse_i64("0x10", &i), 0);
    uint64_t u = 0;
    const struct {
        const char *text;
        int ok;
        uint64_t want;
    } sizes[] = {{"4096", 1, 4096}, {"64M", 1, 64u << 20},
                 {"1KiB", 1, 1024}, {"2g", 1, 2ull << 30},
                 {"3KB", 1, 3072},  {"1T", 1, 1ull << 40},
                 {"0", 1, 0},       {"0x10", 0, 0},
                 {"010", 0, 0},     {"+5", 0, 0},
                 {" 5", 0, 0},      {"5 K", 0, 0},
                 {"5Q", 0, 0},      {"-1", 0, 0},
                 {"1.5M", 0, 0},    {"", 0, 0},
                 {"K", 0, 0},       {"99999999999999T", -1, 0}};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        cr_assert_eq(ax_parse_size(sizes[k].text, &u), sizes[k].ok, "'%s'", sizes[k].text);
        if (sizes[k].ok == 1) cr_assert_eq(u, sizes[k].want, "'%s'", sizes[k].text);
    }
}

/* Config files are read whole: a NUL byte is an error naming the file and line, not the end. */
Test(config, config_file_nul_byte_is_an_error) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/axcfg-nul-%d.txt", (int)getpid());
    const char text[] = "steps = 7\nlr = 0.1\0\nsteps = 9\n";
    cr_assert_eq(ax_write_file(path, text, sizeof text - 1), AX_OK);
    tcfg c = fresh();
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, NULL), AX_ERR_ARG);
    char want[300];
    snprintf(want, sizeof want, "%s:2: NUL byte at column 9", path);
    cr_assert(strstr(ax_error_msg(), want), "%s", ax_error_msg());
    cr_assert_eq(c.steps, 100, "a line was applied from a file that is rejected");
    /* JSON config files too */
    const char js[] = "{\"steps\": 7,\n \"lr\": 0.1\0}";
    cr_assert_eq(ax_write_file(path, js, sizeof js - 1), AX_OK);
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, NULL), AX_ERR_ARG);
    snprintf(want, sizeof want, "%s:2: NUL byte", path);
    cr_assert(strstr(ax_error_msg(), want), "%s", ax_error_msg());
    unlink(path);
}

Test(config, config_file_must_be_regular_and_bounded, .timeout = 20) {
    char path[256];
    snprintf(path, sizeof path, "/tmp/axcfg-fifo-%d", (int)getpid());
    unlink(path);
    cr_assert_eq(mkfifo(path, 0600), 0);
    tcfg c = fresh();
    char flag[300];
    snprintf(flag, sizeof flag, "--config=%s", path);
    cr_assert_eq(parse(&c, NULL, NULL, 1, flag), AX_ERR_IO); /* no writer: would block forever */
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "FIFO"), "%s", ax_error_msg());
    unlink(path);
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, "/tmp", NULL), AX_ERR_IO);
    cr_assert(strstr(ax_error_msg(), "directory"), "%s", ax_error_msg());
    /* a huge (sparse) file is refused before anything is allocated */
    snprintf(path, sizeof path, "/tmp/axcfg-big-%d", (int)getpid());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    cr_assert_eq(ftruncate(fileno(f), (off_t)AX_CFG_FILE_MAX + 1), 0);
    fclose(f);
    ax_error_clear();
    cr_assert_eq(ax_cfg_load_file(&table, &c, path, NULL), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), path) && strstr(ax_error_msg(), "more than"), "%s",
              ax_error_msg());
    unlink(path);
}

/* JSON values (manifests, JSON config files) become ints only when integral and in range. */
Test(config, json_ints_must_be_integral_and_in_range) {
    const char *bad[] = {"{\"steps\": 1e30}", "{\"steps\": 2.5}", "{\"seed\": 1e19}",
                         "{\"seed\": -9.3e18}", "{\"steps\": 0}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ax_json *j;
        cr_assert_eq(ax_json_parse(bad[i], strlen(bad[i]), "m.json", &j), AX_OK);
        tcfg c = fresh();
        ax_error_clear();
        cr_assert_eq(ax_cfg_read_json(&table, &c, j, "m.json"), AX_ERR_ARG, "accepted %s", bad[i]);
        cr_assert(strstr(ax_error_msg(), "m.json"), "%s", ax_error_msg());
        cr_assert_eq(c.steps, 100);
        cr_assert_eq(c.seed, -1);
        ax_json_free(j);
    }
    ax_json *j;
    const char *ok = "{\"seed\": 1000000000000000000, \"steps\": 1e3}";
    cr_assert_eq(ax_json_parse(ok, strlen(ok), "m.json", &j), AX_OK);
    tcfg c = fresh();
    cr_assert_eq(ax_cfg_read_json(&table, &c, j, "m.json"), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(c.seed, 1000000000000000000LL);
    cr_assert_eq(c.steps, 1000);
    ax_json_free(j);
}

/* CHOICE: a fixed set of words, default first; --help lists them; other values are errors
 * that list them; JSON and files go through the same check. */
typedef struct {
    char mode[AX_CFG_STR_MAX];
    int64_t threads, seed;
    char grid[AX_CFG_STR_MAX];
} ccfg;
#define CF(field) offsetof(ccfg, field)
static const ax_cfg_entry centries[] = {
    {"mode", AX_CFG_CHOICE, CF(mode), "packed|doc|other", 1, 0, "how sequences are cut"},
    AX_CFG_THREADS_ENTRY(CF),
    AX_CFG_SEED_ENTRY(CF, "7", "seed"),
    AX_CFG_GRID_ENTRY(CF, "process grid"),
};
#undef CF
static const ax_cfg_table ctable = {"axmem x [flags]", "", centries, 4, NULL};

Test(config, choice_type) {
    ccfg c;
    memset(&c, 0x5a, sizeof c);
    cr_assert_eq(ax_cfg_set_defaults(&ctable, &c), AX_OK, "%s", ax_error_msg());
    cr_assert_str_eq(c.mode, "packed");
    cr_assert_eq(c.threads, 0);
    cr_assert_eq(c.seed, 7);
    cr_assert_str_eq(c.grid, "1x1x1x1");
    cr_assert_eq(ax_cfg_set(&ctable, &c, "mode", "doc", NULL), AX_OK, "%s", ax_error_msg());
    cr_assert_str_eq(c.mode, "doc");
    ax_error_clear();
    cr_assert_eq(ax_cfg_set(&ctable, &c, "mode", "do", NULL), AX_ERR_ARG);
    cr_assert_str_eq(c.mode, "doc", "a rejected value leaves the field alone");
    cr_assert(strstr(ax_error_msg(), "--mode 'do'"), "%s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), "packed, doc or other"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_cfg_set(&ctable, &c, "mode", "packed|doc", NULL), AX_ERR_ARG);
    ax_error_clear();
    cr_assert_eq(ax_cfg_set(&ctable, &c, "mode", "", NULL), AX_ERR_ARG);
    ax_error_clear();
    cr_assert_eq(ax_cfg_set(&ctable, &c, "threads", "5000", NULL), AX_ERR_ARG);
    ax_error_clear();
    /* --help shows the words and the default */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    ax_cfg_print_help(&ctable, f);
    fclose(f);
    cr_assert(strstr(buf, "--mode packed|doc|other"), "%s", buf);
    cr_assert(strstr(buf, "(packed, doc or other; default: packed)"), "%s", buf);
    free(buf);
    /* manifests: a string, read back through the same check */
    ax_jw w;
    ax_jw_init(&w);
    ax_cfg_write_json(&ctable, &c, &w);
    cr_assert(strstr(ax_jw_text(&w), "\"mode\":\"doc\""), "%s", ax_jw_text(&w));
    ax_jw_free(&w);
    const char *bad = "{\"mode\":\"sideways\"}";
    ax_json *j = NULL;
    cr_assert_eq(ax_json_parse(bad, strlen(bad), "m.json", &j), AX_OK);
    cr_assert_eq(ax_cfg_read_json(&ctable, &c, j, "m.json"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "m.json: --mode 'sideways'"), "%s", ax_error_msg());
    ax_json_free(j);
    ax_error_clear();
}

/* /proc files look regular (size 0) but block on read or change under the reader: a scan
 * file recording "/proc/kmsg" as its samples made `report` hang as root */
Test(config, kernel_pseudo_files_are_not_inputs) {
    int fd = -1;
    ax_error_clear();
    cr_assert_neq(ax_open_regular("/proc/self/status", NULL, &fd), AX_OK);
    cr_assert_eq(fd, -1);
    cr_assert(strstr(ax_error_msg(), "/proc/self/status") && strstr(ax_error_msg(), "pseudo-file"),
              "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_neq(ax_check_regular("/proc/self/status", NULL), AX_OK);
    char *data = NULL;
    size_t len = 0;
    ax_error_clear();
    cr_assert_neq(ax_read_file("/proc/self/status", &data, &len), AX_OK);
    cr_assert_null(data);
}
