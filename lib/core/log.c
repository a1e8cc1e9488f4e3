#include "lib/core/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ax_log_level g_level = AX_LOG_INFO;
static int g_rank = -1;

void ax_log_init(void) {
    const char *e = getenv("AXMEM_LOG");
    if (!e) return;
    if (!strcmp(e, "error"))
        g_level = AX_LOG_ERROR;
    else if (!strcmp(e, "warn"))
        g_level = AX_LOG_WARN;
    else if (!strcmp(e, "info"))
        g_level = AX_LOG_INFO;
    else if (!strcmp(e, "debug"))
        g_level = AX_LOG_DEBUG;
}

void ax_log_set_rank(int rank) {
    g_rank = rank;
}
void ax_log_set_level(ax_log_level level) {
    g_level = level;
}
ax_log_level ax_log_get_level(void) {
    return g_level;
}

void ax_log(ax_log_level level, const char *fmt, ...) {
    if (level > g_level) return;
    static const char *names[] = {"error", "warn", "info", "debug"};
    char line[2048];
    int n = 0;
    if (g_rank >= 0) n = snprintf(line, sizeof line, "[r%d] ", g_rank);
    if (level != AX_LOG_INFO) n += snprintf(line + n, sizeof line - n, "%s: ", names[level]);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof line - n, fmt, ap);
    va_end(ap);
    /* one fputs per line so concurrent ranks do not interleave mid-line */
    size_t len = strlen(line);
    if (len + 1 < sizeof line) {
        line[len] = '\n';
        line[len + 1] = 0;
    }
    fputs(line, stderr);
}
