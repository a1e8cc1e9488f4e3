#include "lib/core/status.h"
#include "lib/core/log.h"

#include <stdio.h>

static _Thread_local char g_msg[1024];
static _Thread_local int g_has_msg;

const char *ax_status_str(ax_status s) {
    switch (s) {
    case AX_OK:
        return "ok";
    case AX_ERR_ARG:
        return "invalid argument";
    case AX_ERR_IO:
        return "I/O error";
    case AX_ERR_CORRUPT:
        return "corrupt or truncated file";
    case AX_ERR_MISMATCH:
        return "mismatched inputs";
    case AX_ERR_NOMEM:
        return "out of memory";
    case AX_ERR_UNSUPPORTED:
        return "unsupported";
    case AX_ERR_MPI:
        return "MPI error";
    case AX_ERR_INTERRUPTED:
        return "interrupted";
    case AX_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

ax_status ax_errorf(ax_status s, const char *fmt, ...) {
    if (!g_has_msg) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(g_msg, sizeof g_msg, fmt, ap);
        va_end(ap);
        g_has_msg = 1;
    }
    return s;
}

const char *ax_error_msg(void) {
    return g_has_msg ? g_msg : "";
}

void ax_error_clear(void) {
    g_has_msg = 0;
    g_msg[0] = 0;
}

void ax_trace(const char *file, int line, const char *expr, ax_status s) {
    ax_log(AX_LOG_DEBUG, "%s:%d: %s -> %s", file, line, expr, ax_status_str(s));
}
