/* Status codes and error propagation. Values are pinned: they appear in logs and tests. */
#pragma once
#include <stdarg.h>

typedef enum {
    AX_OK = 0,
    AX_ERR_ARG = 1,         /* bad flag, bad value, impossible shape */
    AX_ERR_IO = 2,          /* open/read/write/rename failed */
    AX_ERR_CORRUPT = 3,     /* bad magic, checksum, truncated file */
    AX_ERR_MISMATCH = 4,    /* files that do not belong together (vocab, config, version) */
    AX_ERR_NOMEM = 5,       /* allocation failed */
    AX_ERR_UNSUPPORTED = 6, /* valid request this build cannot do */
    AX_ERR_MPI = 7,         /* a collective failed */
    AX_ERR_INTERRUPTED = 8, /* user pressed Ctrl-C; outputs left consistent */
    AX_ERR_INTERNAL = 9,    /* a bug: an invariant did not hold */
} ax_status;

const char *ax_status_str(ax_status s);

/* Record a user-facing message for the failure in progress and return `s`.
 * The message says what was wrong and what to do; the CLI prints it as one line.
 * Semantics (per thread):
 *  - The first message recorded wins until ax_error_clear(): the deepest cause is kept, and
 *    callers that add context above it do not overwrite it.
 *  - AX_CHECK / AX_CHECK_GOTO only propagate a status; they never record or clear a message.
 *  - Whoever handles a failure instead of propagating it (falls back, retries, treats "not
 *    found" as normal) calls ax_error_clear(), so the handled message cannot be reported later
 *    as the cause of an unrelated failure.
 *  - Each command starts with a clear message: the dispatcher (cli/main.c) and the demo, which
 *    runs several steps in one process, call ax_error_clear() before each one. */
ax_status ax_errorf(ax_status s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ax_error_msg(void); /* "" when none recorded */
void ax_error_clear(void);

/* Propagate a failure, logging file:line at debug level so a failure leaves a trace. */
void ax_trace(const char *file, int line, const char *expr, ax_status s);
#define AX_CHECK(expr)                                                                             \
    do {                                                                                           \
        ax_status ax_check_s_ = (expr);                                                            \
        if (ax_check_s_ != AX_OK) {                                                                \
            ax_trace(__FILE__, __LINE__, #expr, ax_check_s_);                                      \
            return ax_check_s_;                                                                    \
        }                                                                                          \
    } while (0)

/* Same, but jumps to a cleanup label with `st` set (st must be an ax_status in scope). */
#define AX_CHECK_GOTO(expr, label)                                                                 \
    do {                                                                                           \
        st = (expr);                                                                               \
        if (st != AX_OK) {                                                                         \
            ax_trace(__FILE__, __LINE__, #expr, st);                                               \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)
