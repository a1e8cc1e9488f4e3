#include "lib/cliargs.h"
#include "lib/status.h"

#include <stdio.h>

#include <string.h>

int ax_cli_is_help(const char *a) {
    return !strcmp(a, "-h") || !strcmp(a, "--help");
}

int ax_cli_flag(int argc, char **argv, int *i, const char *name, const char **val) {
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0) return 0;
    if (a[n] == '=') {
        *val = a + n + 1;
        return 1;
    }
    if (a[n] != 0) return 0;
    if (*i + 1 >= argc) return -1;
    *val = argv[++*i];
    return 1;
}

int ax_cli_dispatch(const char *cmd, const char *help, const ax_cli_sub *subs, int n, int argc,
                    char **argv) {
    ax_error_clear(); /* messages are sticky: a stale one must not be reported as ours */
    if (argc < 2) {
        fputs(help, stderr);
        return 2;
    }
    const char *sub = argv[1];
    if (ax_cli_is_help(sub) || !strcmp(sub, "help")) {
        fputs(help, stdout);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(sub, subs[i].name)) return subs[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "axmem %s: unknown subcommand '%s' (", cmd, sub);
    for (int i = 0; i < n; i++) fprintf(stderr, "%s%s", i ? ", " : "", subs[i].name);
    fprintf(stderr, "); run 'axmem %s --help'\n", cmd);
    return 2;
}
