/* The verdict of an MPI test driver: CHECK(cond, fmt, ...) counts a failure and prints the first
 * 20 with this rank and the line; OK(expr) checks that a status call returned AX_OK (printing
 * its message). The driver sets g_rank and reduces g_fail over the ranks at the end. */
#pragma once
#include <stdio.h>

#include "lib/core/status.h"

static int g_fail, g_rank;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond) && g_fail++ < 20) {                                                            \
            fprintf(stderr, "[r%d] FAIL %s:%d: ", g_rank, __FILE__, __LINE__);                     \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fprintf(stderr, "\n");                                                                 \
        }                                                                                          \
    } while (0)

#define OK(expr)                                                                                   \
    do {                                                                                           \
        ax_status s_ = (expr);                                                                     \
        CHECK(s_ == AX_OK, "%s -> %s: %s", #expr, ax_status_str(s_), ax_error_msg());              \
        ax_error_clear();                                                                          \
    } while (0)
