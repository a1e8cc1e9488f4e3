/* `axmem help --markdown`: the command reference, docs/cli.md. Each page is the command's own
 * --help, printed while lib/core/config.c writes Markdown, so every flag, default, range and
 * summary comes from the command's config table; help written by hand (the subcommand lists,
 * `model`, `version`, the scans' --all-steps) is kept as text. scripts/cli_doc.sh writes the
 * file, and scripts/test.sh fails while it is stale. */
#include "cli/commands.h"
#include "lib/core/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the words after "axmem", in the reference's order: a new command or subcommand goes here */
static const char *const pages[] = {
    "data",
    "data tokenizer-train",
    "data encode",
    "data import-megatron",
    "data decode",
    "data info",
    "data split",
    "data canaries",
    "data dedup",
    "train",
    "goldfish",
    "goldfish show",
    "goldfish stats",
    "memscan",
    "memscan index",
    "memscan lookup",
    "memscan info",
    "memscan probe",
    "memscan generate",
    "memscan mia",
    "memscan exposure",
    "model",
    "report",
    "dp",
    "plan",
    "study",
    "demo",
    "version",
};
enum { n_pages = sizeof pages / sizeof pages[0] };

/* what `axmem WORDS --help` prints (run: the dispatcher, argv[0] the command), or NULL */
static char *capture(const char *words, int (*run)(int, char **)) {
    char buf[128], help[] = "--help", *argv[8];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", words);
    for (char *w = strtok(buf, " "); w && argc < 6; w = strtok(NULL, " ")) argv[argc++] = w;
    argv[argc++] = help;
    argv[argc] = NULL;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len), *out = stdout;
    if (!m) return NULL;
    fflush(stdout);
    stdout = m; /* glibc's stdout is a plain variable: the command prints its help into m */
    int rc = run(argc, argv);
    stdout = out;
    fclose(m);
    if (rc != 0) {
        fprintf(stderr, "axmem help --markdown: 'axmem %s --help' exited %d\n", words, rc);
        free(text);
        return NULL;
    }
    return text;
}

/* "## axmem WORDS", then the Markdown a config table gave, then any other text fenced */
static void page(const char *words, const char *text) {
    printf("\n## axmem%s%s\n\n", *words ? " " : "", words);
    const char *rest = text;
    if (!strncmp(text, "```", 3)) { /* ax_cfg_print_help's Markdown ends with its last table row */
        for (const char *p = strstr(text, "\n|"); p; p = strstr(p + 1, "\n|")) rest = p + 1;
        rest += strcspn(rest, "\n");
        fwrite(text, 1, (size_t)(rest - text), stdout);
        fputc('\n', stdout);
    }
    rest += strspn(rest, "\n");
    int n = (int)strlen(rest);
    while (n > 0 && rest[n - 1] == '\n') n--;
    if (n > 0) printf("%s```text\n%.*s\n```\n", rest == text ? "" : "\n", n, rest);
}

/* 1 if the command has a page (its subcommands are listed by hand after it) */
static int has_page(const char *name) {
    for (int i = 0; i < n_pages; i++)
        if (!strcmp(pages[i], name)) return 1;
    return 0;
}

int ax_cli_help_markdown(void (*usage)(FILE *), int (*run)(int, char **),
                         const char *const *commands, int n_commands) {
    for (int i = 0; i < n_commands; i++)
        if (!has_page(commands[i])) {
            fprintf(stderr,
                    "axmem help --markdown: command '%s' has no page; add it to pages[] "
                    "in cli/help_markdown.c\n",
                    commands[i]);
            return 1;
        }
    ax_cfg_help_markdown(1);
    printf("# Command reference\n\n"
           "Generated from the commands' config tables by `axmem help --markdown`; do not edit:\n"
           "run `bash scripts/cli_doc.sh` after changing a command (`scripts/test.sh` fails while\n"
           "this file is stale). Every command also prints its page with `--help`.\n\n"
           "- [axmem](#axmem)");
    for (int i = 0; i < n_pages; i++) { /* a line per command, its subcommands after it */
        char anchor[128];
        snprintf(anchor, sizeof anchor, "axmem-%s", pages[i]);
        for (char *c = anchor; *c; c++)
            if (*c == ' ') *c = '-';
        const char *sub = strchr(pages[i], ' ');
        int first_sub = sub && !strchr(pages[i - 1], ' ');
        printf("%s[%s](#%s)",
               !sub        ? "\n- "
               : first_sub ? ": "
                           : " · ",
               sub ? sub + 1 : pages[i], anchor);
    }
    printf("\n");
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    if (!m) return 1;
    usage(m);
    fclose(m);
    page("", text);
    free(text);
    for (int i = 0; i < n_pages; i++) {
        if (!(text = capture(pages[i], run))) return 1;
        page(pages[i], text);
        free(text);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
