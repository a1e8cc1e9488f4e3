/* Shared by the libFuzzer targets: a private scratch directory, writing an input to a file (for
 * readers that take a path), and a quiet, cache-free environment. */
#pragma once
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "lib/core/status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static char fz_dir[256];

static __attribute__((unused)) void fz_cleanup(void) {
    if (fz_dir[0]) ax_rm_rf(fz_dir);
}

/* Makes the scratch directory (in /dev/shm when there is one: inputs are written per run). */
static __attribute__((unused)) void fz_init(const char *name) {
    /* ax_log reads AXMEM_LOG on first use; keep libFuzzer's output readable */
    setenv("AXMEM_LOG", "error", 1);
    ax_log_set_level(AX_LOG_ERROR);
    setenv("AXMEM_CACHE_DIR", "off", 1); /* no files under ~/.cache from fuzzing */
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(fz_dir, sizeof fz_dir, "%s/axmem-fuzz-%s-XXXXXX", base, name);
    if (!mkdtemp(fz_dir)) {
        perror("mkdtemp");
        abort();
    }
    atexit(fz_cleanup);
}

static __attribute__((unused)) void fz_path(char *out, size_t size, const char *name) {
    snprintf(out, size, "%s/%s", fz_dir, name);
}

static __attribute__((unused)) void fz_write(const char *path, const uint8_t *data, size_t size) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size)) {
        perror(path);
        abort();
    }
    close(fd);
}

/* AXMEM_FUZZ_SEED_DIR=DIR makes a target write its built-in seeds to DIR and exit (used by
 * tests/fuzz/make_seeds.sh to refresh the committed corpus). */
static __attribute__((unused)) const char *fz_seed_dir(void) {
    const char *d = getenv("AXMEM_FUZZ_SEED_DIR");
    return d && *d ? d : NULL;
}

static __attribute__((unused)) void fz_write_seed(const char *name, const void *data, size_t size) {
    char p[1024];
    snprintf(p, sizeof p, "%s/%s", fz_seed_dir(), name);
    fz_write(p, data, size);
}

/* AXMEM_FUZZ_VERBOSE=1: print why each input was rejected (to check that seeds are valid). */
static __attribute__((unused)) void fz_note(const char *what, ax_status st) {
    static int verbose = -1;
    if (verbose < 0) verbose = getenv("AXMEM_FUZZ_VERBOSE") != NULL;
    if (verbose) fprintf(stderr, "%s: %s\n", what, st == AX_OK ? "ok" : ax_error_msg());
}
