/* `axmem goldfish`: show which tokens a spec drops from a text, and measure the dropped fraction
 * over a dataset. Each subcommand's flags are a config table (lib/core/config.h); usage errors exit
 * 2, runtime failures 1, each with one line on stderr. */
#include "lib/core/cliargs.h"
#include "lib/core/config.h"
#include "cli/commands.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "goldfish/goldfish.h"
#include "goldfish/goldfish_run.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *TOP_HELP =
    "usage: axmem goldfish SUBCOMMAND [flags]   (axmem goldfish SUBCOMMAND --help)\n\n"
    "Goldfish loss masks (Hans et al. 2024): training drops a pseudo-random 1 in k targets\n"
    "from the loss, chosen by a hash of the h preceding tokens, so the model is never\n"
    "supervised on a whole passage, however often it repeats. `axmem train --goldfish SPEC`\n"
    "uses them.\n\n"
    "subcommands:\n"
    "  show   print a text with the tokens a spec drops marked\n"
    "  stats  the fraction of a .axd dataset's targets a spec drops\n\n"
    "SPEC: none | static:k=K | hash:k=K,h=H[,seed=S]   (defaults k=4, h=13, seed=0)\n"
    "  static  drops every k-th target of each training sequence, by position\n"
    "  hash    drops target i iff XXH3_64(tokens[i-h..i-1], seed) < 2^64/k; the first h\n"
    "          targets of each document are kept. Depends only on the text: every copy of a\n"
    "          passage, on every rank and in every epoch, loses the same tokens.\n";

/* ---- flag tables (lib/core/config.h): the same syntax, errors and --help as every command ---- */

typedef struct {
    char tokenizer[AX_CFG_STR_MAX], spec[AX_CFG_STR_MAX], file[AX_CFG_STR_MAX];
    char color[AX_CFG_STR_MAX];
    int json;
    ax_cfg_strlist text;
} show_flags;

#define F(field) offsetof(show_flags, field)
static const ax_cfg_entry show_entries[] = {
    AX_CFG_TOKENIZER_ENTRY(F, "tokenizer file from `axmem data tokenizer-train` (required)"),
    {"spec", AX_CFG_STR, F(spec), "hash", 1, 0, "goldfish spec (hash means hash:k=4,h=13,seed=0)"},
    {"file", AX_CFG_STR, F(file), "", 1, 0,
     "read the text from F ('-' = stdin) instead of the arguments"},
    {"color", AX_CFG_CHOICE, F(color), "auto|always|never", 1, 0,
     "colour the dropped tokens (auto: when stdout is a terminal and NO_COLOR is unset)"},
    AX_CFG_JSON_ENTRY(
        F, "print {\"spec\", \"targets\", \"dropped\", \"dropped_frac\", \"tokens\": [{\"id\", "
           "\"text\", "
           "\"dropped\"}]} instead (\"hex\" holds a token's bytes when they are not valid UTF-8 by "
           "themselves)"),
};
#undef F
static const ax_cfg_positional show_text = {
    "TEXT", offsetof(show_flags, text), 1, 0,
    "the text, arguments joined with single spaces; '--' ends the flags"};
static const ax_cfg_table show_table = {
    .usage = "axmem goldfish show --tokenizer TOK [flags]",
    .summary =
        "Tokenizes the text (TEXT... or --file F) as one document (its first token is the\n"
        "document's first) and prints it with the targets the spec drops marked: the model is\n"
        "never trained to predict them. Then a summary line: targets, dropped, fraction, longest\n"
        "supervised run, spec. Marks: red strikethrough on a colour terminal, else [[dropped]]. A\n"
        "character split over several tokens is marked if any of its pieces is dropped (--json\n"
        "is exact).",
    .entries = show_entries,
    .n = (int)(sizeof show_entries / sizeof show_entries[0]),
    .positional = &show_text,
};

typedef struct {
    char data[AX_CFG_STR_MAX], spec[AX_CFG_STR_MAX];
    int64_t seq_len;
    int verify, json;
} stats_flags;

#define F(field) offsetof(stats_flags, field)
static const ax_cfg_entry stats_entries[] = {
    AX_CFG_DATA_ENTRY(F, "dataset from `axmem data encode` (required)"),
    {"spec", AX_CFG_STR, F(spec), "hash", 1, 0, "goldfish spec (hash means hash:k=4,h=13,seed=0)"},
    {"seq-len", AX_CFG_INT, F(seq_len), "1024", 1, 1 << 24,
     "training sequence length; static masks restart every N targets (hash does not depend on "
     "it)"},
    {"verify", AX_CFG_BOOL, F(verify), "true", 1, 0,
     "check the payload unless verified before (--no-verify skips it)"},
    AX_CFG_JSON_ENTRY(F, "print one JSON object instead of text"),
};
#undef F
static const ax_cfg_table stats_table = {
    .usage = "axmem goldfish stats --data FILE.axd [flags]",
    .summary =
        "Applies the spec to a dataset's token stream (documents from its offsets; every token\n"
        "after the first is a target, as in training) and reports the dropped fraction, the\n"
        "targets kept because they open a document, and the longest run of supervised targets\n"
        "inside one document (the longest passage the model is trained on verbatim).",
    .entries = stats_entries,
    .n = (int)(sizeof stats_entries / sizeof stats_entries[0]),
};

/* failures as every command's, but a spec error names this command's flag, --spec */
static int fail(const char *cmd, ax_status st) {
    const char *m = ax_error_msg();
    if (strncmp(m, "--goldfish ", 11)) return ax_cli_fail(cmd, st);
    fprintf(stderr, "axmem %s: --spec %s\n", cmd, m + 11);
    return 2;
}

/* ---------------------------------------------------------------- show */

/* one token's text for JSON: the bytes when valid UTF-8, else U+FFFD for each bad byte
 * (and *lossy = 1, so the caller adds the exact bytes as hex) */
static void json_token_text(ax_jw *w, const uint8_t *b, size_t n, int *lossy) {
    char *tmp = malloc(3 * n + 1), *o = tmp;
    *lossy = 0;
    if (!tmp) {
        ax_jw_str(w, "");
        return;
    }
    for (size_t i = 0, l; i < n;) {
        if (ax_utf8_next((const char *)b + i, n - i, &l)) {
            memcpy(o, b + i, l);
            o += l, i += l;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3, i++, *lossy = 1;
        }
    }
    ax_jw_strn(w, tmp, (size_t)(o - tmp));
    free(tmp);
}

#define MARK_ON "\033[9;31m" /* strikethrough, red */
#define MARK_OFF "\033[0m"

/* The marked text. Tokens are grouped into units that end on a character boundary (the next
 * token does not start with a UTF-8 continuation byte) so markers never split a character. */
static void print_marked(FILE *f, const ax_tokenizer_t *tok, const int32_t *ids,
                         const uint8_t *keep, size_t n, int color) {
    int last = '\n';
    for (size_t j = 0; j < n;) {
        size_t e = j + 1;
        int dropped = !keep[j];
        for (;;) {
            if (e >= n) break;
            size_t len;
            const uint8_t *b = ax_tokenizer_token_bytes(tok, ids[e], &len);
            if (!len || (b[0] & 0xC0) != 0x80) break;
            dropped |= !keep[e];
            e++;
        }
        if (dropped) fputs(color ? MARK_ON : "[[", f);
        for (size_t t = j; t < e; t++) {
            size_t len;
            const uint8_t *b = ax_tokenizer_token_bytes(tok, ids[t], &len);
            for (size_t q = 0; q < len; q++) {
                /* end the style at a newline: pagers and terminals drop it across lines */
                if (dropped && color && b[q] == '\n')
                    fputs(MARK_OFF "\n" MARK_ON, f);
                else
                    fputc(b[q], f);
                last = b[q];
            }
        }
        if (dropped) {
            fputs(color ? MARK_OFF : "]]", f);
            last = ']';
        }
        j = e;
    }
    if (last != '\n') fputc('\n', f);
}

/* TEXT arguments joined with single spaces */
static char *join_text(const ax_cfg_strlist *l, size_t *len) {
    size_t n = 1;
    for (int i = 0; i < l->n; i++) n += strlen(l->v[i]) + 1;
    char *text = malloc(n), *p = text;
    if (!text) return NULL;
    for (int i = 0; i < l->n; i++) {
        if (i) *p++ = ' ';
        size_t k = strlen(l->v[i]);
        memcpy(p, l->v[i], k);
        p += k;
    }
    *p = 0;
    *len = (size_t)(p - text);
    return text;
}

/* the text from stdin into *text (grown as needed) */
static ax_status read_stdin(char **text, size_t *text_len) {
    size_t got, cap = 0;
    char buf[1 << 16];
    while ((got = fread(buf, 1, sizeof buf, stdin)) > 0) {
        if (*text_len + got + 1 > cap) {
            size_t nc = cap ? 2 * cap : 1 << 16;
            while (nc < *text_len + got + 1) nc *= 2;
            char *nt = realloc(*text, nc);
            if (!nt) return ax_errorf(AX_ERR_NOMEM, "out of memory reading stdin");
            *text = nt;
            cap = nc;
        }
        memcpy(*text + *text_len, buf, got);
        *text_len += got;
    }
    return ferror(stdin) ? ax_errorf(AX_ERR_IO, "cannot read the text from stdin") : AX_OK;
}

static ax_status show_json(const char *canon, const ax_tokenizer_t *tok,
                           const ax_goldfish_shown *sh) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "spec"), ax_jw_str(&w, canon);
    ax_jw_key(&w, "targets"), ax_jw_uint(&w, sh->n);
    ax_jw_key(&w, "dropped"), ax_jw_int(&w, sh->dropped);
    ax_jw_key(&w, "dropped_frac"), ax_jw_num(&w, sh->n ? (double)sh->dropped / (double)sh->n : 0.0);
    ax_jw_key(&w, "longest_run"), ax_jw_uint(&w, sh->longest);
    ax_jw_key(&w, "tokens");
    ax_jw_arr_begin(&w);
    for (size_t i = 0; i < sh->n; i++) {
        size_t len;
        const uint8_t *b = ax_tokenizer_token_bytes(tok, sh->ids[i], &len);
        int lossy;
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "id"), ax_jw_int(&w, sh->ids[i]);
        ax_jw_key(&w, "text");
        json_token_text(&w, b, len, &lossy);
        if (lossy) {
            char hex[2 * 64 + 1];
            size_t m = len < 64 ? len : 64;
            for (size_t q = 0; q < m; q++) snprintf(hex + 2 * q, 3, "%02x", b[q]);
            hex[2 * m] = 0;
            ax_jw_key(&w, "hex"), ax_jw_str(&w, hex);
        }
        ax_jw_key(&w, "dropped"), ax_jw_bool(&w, !sh->keep[i]);
        ax_jw_obj_end(&w);
    }
    ax_jw_arr_end(&w);
    ax_jw_obj_end(&w);
    const char *out_text = ax_jw_text(&w);
    if (out_text) printf("%s\n", out_text);
    ax_jw_free(&w);
    return out_text ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory writing JSON");
}

static int cmd_show(int argc, char **argv) {
    static const char *CMD = "goldfish show";
    show_flags fl;
    char *text = NULL;
    size_t text_len = 0;
    ax_tokenizer_t *tok = NULL;
    ax_goldfish_shown sh = {0};
    int rc = ax_cli_parse(CMD, &show_table, &fl, argc, argv, NULL);
    if (rc >= 0) goto out;
    const char *file = fl.file[0] ? fl.file : NULL;
    int have_text = fl.text.n > 0;
    const char *const need[][2] = {{fl.tokenizer, "--tokenizer TOK"}};
    if (have_text && !(text = join_text(&fl.text, &text_len)))
        rc = ax_cli_usage(CMD, "%s", "out of memory");
    else if (ax_cli_require(CMD, need, 1))
        rc = 2;
    else if (have_text && file)
        rc = ax_cli_usage(CMD, "%s", "give the text as arguments or with --file, not both");
    else if (!have_text && !file)
        rc = ax_cli_usage(CMD, "%s", "no text: give it as arguments or with --file F");
    if (rc >= 0) goto out;
    int color = !strcmp(fl.color, "always");
    if (!strcmp(fl.color, "auto")) {
        const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
        color = isatty(STDOUT_FILENO) && !(nc && nc[0]) && !(term && !strcmp(term, "dumb"));
    }
    ax_goldfish g;
    ax_status st = ax_goldfish_parse(fl.spec, &g);
    if (st == AX_OK && file)
        st =
            strcmp(file, "-") ? ax_read_file(file, &text, &text_len) : read_stdin(&text, &text_len);
    if (st == AX_OK) st = ax_tokenizer_load(fl.tokenizer, &tok);
    if (st == AX_OK) st = ax_goldfish_show(&g, tok, text, text_len, &sh);
    char canon[AX_GOLDFISH_SPEC_MAX];
    if (st == AX_OK) ax_goldfish_format(&g, canon, sizeof canon);
    if (st == AX_OK && fl.json) {
        st = show_json(canon, tok, &sh);
    } else if (st == AX_OK) {
        print_marked(stdout, tok, sh.ids, sh.keep, sh.n, color);
        printf("goldfish %s: %zu targets, %ld dropped (%.2f%%), longest supervised run %" PRIu64
               " tokens\n",
               canon, sh.n, sh.dropped, sh.n ? 100.0 * (double)sh.dropped / (double)sh.n : 0.0,
               sh.longest);
    }
    if (st == AX_OK && fflush(stdout) != 0) st = ax_errorf(AX_ERR_IO, "cannot write to stdout");
    rc = st == AX_OK ? 0 : fail(CMD, st);
out:
    ax_goldfish_shown_free(&sh);
    free(text);
    ax_tokenizer_free(tok);
    ax_cfg_free(&show_table, &fl);
    return rc;
}

/* ---------------------------------------------------------------- stats */

static int cmd_stats(int argc, char **argv) {
    static const char *CMD = "goldfish stats";
    stats_flags fl;
    ax_axd_t *d = NULL;
    ax_status st = AX_OK;
    int rc = ax_cli_parse(CMD, &stats_table, &fl, argc, argv, NULL);
    if (rc >= 0) goto out;
    rc = 0;
    const char *data_path = fl.data;
    uint64_t seq_len = (uint64_t)fl.seq_len;
    const char *const need[][2] = {{data_path, "--data FILE.axd"}};
    if ((rc = ax_cli_require(CMD, need, 1))) goto out;
    ax_goldfish g;
    ax_goldfish_stats s;
    AX_CHECK_GOTO(ax_goldfish_parse(fl.spec, &g), fail);
    AX_CHECK_GOTO(ax_axd_open(data_path, fl.verify ? AX_AXD_VERIFY : AX_AXD_HEADER_ONLY, &d), fail);
    AX_CHECK_GOTO(ax_goldfish_stats_compute(&g, d, seq_len, &s), fail);
    char canon[AX_GOLDFISH_SPEC_MAX];
    ax_goldfish_format(&g, canon, sizeof canon);
    if (fl.json) {
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "data"), ax_jw_str(&w, data_path);
        ax_jw_key(&w, "docs"), ax_jw_uint(&w, s.docs);
        ax_jw_key(&w, "tokens"), ax_jw_uint(&w, s.tokens);
        ax_jw_key(&w, "spec"), ax_jw_str(&w, canon);
        if (g.strategy == AX_GOLDFISH_STATIC) {
            ax_jw_key(&w, "seq_len"), ax_jw_uint(&w, seq_len);
        }
        ax_jw_key(&w, "targets"), ax_jw_uint(&w, s.targets);
        ax_jw_key(&w, "dropped"), ax_jw_uint(&w, s.dropped);
        ax_jw_key(&w, "dropped_frac"), ax_jw_num(&w, s.dropped_frac);
        ax_jw_key(&w, "expected_frac"), ax_jw_num(&w, s.expected_frac);
        if (g.strategy == AX_GOLDFISH_HASH) {
            ax_jw_key(&w, "prefix_kept"), ax_jw_uint(&w, s.prefix_kept);
            ax_jw_key(&w, "dropped_frac_after_prefix"), ax_jw_num(&w, s.dropped_frac_after_prefix);
        }
        ax_jw_key(&w, "longest_run"), ax_jw_uint(&w, s.longest_run);
        if (s.run_located) {
            ax_jw_key(&w, "longest_run_doc"), ax_jw_uint(&w, s.longest_run_doc);
            ax_jw_key(&w, "longest_run_start"), ax_jw_uint(&w, s.longest_run_start);
        }
        ax_jw_key(&w, "seconds"), ax_jw_num(&w, s.seconds);
        ax_jw_obj_end(&w);
        const char *t = ax_jw_text(&w);
        if (t) printf("%s\n", t);
        ax_jw_free(&w);
        if (!t) {
            st = ax_errorf(AX_ERR_NOMEM, "out of memory writing JSON");
            goto fail;
        }
    } else {
        printf("dataset   %s: %" PRIu64 " docs, %" PRIu64 " tokens\n", data_path, s.docs, s.tokens);
        printf("spec      %s", canon);
        if (g.strategy == AX_GOLDFISH_STATIC) printf(" (sequences of %" PRIu64 ")", seq_len);
        printf("\ntargets   %" PRIu64 " (every token after the first)\n", s.targets);
        printf("dropped   %" PRIu64 " (%.3f%% of targets; 1/k = %.3f%%)\n", s.dropped,
               100.0 * s.dropped_frac, 100.0 * s.expected_frac);
        if (g.strategy == AX_GOLDFISH_HASH)
            printf("prefix    %" PRIu64 " targets kept as the first h=%d of a document; %.3f%% of "
                   "the others dropped\n",
                   s.prefix_kept, ax_goldfish_context(&g), 100.0 * s.dropped_frac_after_prefix);
        if (g.strategy == AX_GOLDFISH_STATIC)
            printf("longest supervised run  %" PRIu64 " tokens\n", s.longest_run);
        else if (s.run_located)
            printf("longest supervised run  %" PRIu64 " tokens (doc %" PRIu64 ", tokens %" PRIu64
                   "..%" PRIu64 ")\n",
                   s.longest_run, s.longest_run_doc, s.longest_run_start,
                   s.longest_run_start + s.longest_run - 1);
    }
    if (fflush(stdout) != 0) {
        st = ax_errorf(AX_ERR_IO, "cannot write to stdout");
        goto fail;
    }
    goto out;
fail:
    rc = fail(CMD, st);
out:
    ax_axd_free(d);
    return rc;
}

/* ---------------------------------------------------------------- dispatch */

int ax_cmd_goldfish(int argc, char **argv) {
    static const ax_cli_sub subs[] = {{"show", cmd_show}, {"stats", cmd_stats}};
    return ax_cli_dispatch("goldfish", TOP_HELP, subs, (int)(sizeof subs / sizeof subs[0]), argc,
                           argv);
}
