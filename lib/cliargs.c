#include "lib/cliargs.h"

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
