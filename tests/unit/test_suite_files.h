/* Suite hooks shared by the tests that write files named /tmp/axmem_test_<pid>_*: Criterion
 * runs each test in its own process, so the pid names one test's files. */
#pragma once
#include <glob.h>
#include <stdio.h>
#include <unistd.h>

#include "lib/core/log.h"

/* init: keep info-level progress lines out of the test log */
static inline void ts_quiet(void) {
    ax_log_set_level(AX_LOG_WARN);
}

/* fini: remove the files this test's process made */
static inline void ts_cleanup(void) {
    char pat[64];
    snprintf(pat, sizeof pat, "/tmp/axmem_test_%d_*", (int)getpid());
    glob_t g;
    if (glob(pat, 0, NULL, &g) == 0)
        for (size_t i = 0; i < g.gl_pathc; i++) unlink(g.gl_pathv[i]);
    globfree(&g);
}
