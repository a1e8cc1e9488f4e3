/* Shared helpers for the data tests (tokenizer, axd, loader, CLI). */
#pragma once
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/input.h"

/* Criterion forks each test, so the pid makes the name unique per test. */
static inline void td_tmp(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/axmem_test_%d_%s", (int)getpid(), name);
}

static inline int td_write(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    size_t put = fwrite(data, 1, n, f);
    return fclose(f) == 0 && put == n;
}

static inline uint8_t *td_read(const char *path, size_t *n) {
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)sz + 1);
    *n = fread(b, 1, (size_t)sz, f);
    fclose(f);
    return b;
}

/* The bundled corpus, found from the working directory or from this file's location. */
static inline const char *td_kjv_path(void) {
    static char buf[4096];
    const char *cands[] = {"data/corpus/kjv.jsonl", "../data/corpus/kjv.jsonl",
                           "../../data/corpus/kjv.jsonl"};
    for (size_t i = 0; i < sizeof cands / sizeof *cands; i++)
        if (access(cands[i], R_OK) == 0) return cands[i];
    snprintf(buf, sizeof buf, "%s", __FILE__);
    char *slash = strrchr(buf, '/');
    if (slash) {
        snprintf(slash, sizeof buf - (size_t)(slash - buf), "/../../data/corpus/kjv.jsonl");
        if (access(buf, R_OK) == 0) return buf;
    }
    return NULL;
}

/* All KJV documents' text concatenated (malloc'd), optionally capped at max bytes. */
static inline uint8_t *td_kjv_text(size_t max, size_t *n) {
    const char *path = td_kjv_path();
    *n = 0;
    if (!path) return NULL;
    ax_input_t *in;
    if (ax_input_open(&path, 1, 0, &in) != 0) return NULL;
    size_t cap = 1 << 22, len = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        const uint8_t *p;
        size_t k;
        int end, eof;
        if (ax_input_next(in, &p, &k, &end, &eof) != 0 || eof) break;
        if (max && len + k > max) k = max - len;
        if (len + k > cap) {
            while (len + k > cap) cap *= 2;
            b = realloc(b, cap);
        }
        memcpy(b + len, p, k);
        len += k;
        if (max && len >= max) break;
    }
    ax_input_free(in);
    *n = len;
    return b;
}

#include "lib/core/log.h"
/* suite init: keep info-level progress lines out of the test log */
static inline void td_quiet(void) {
    ax_log_set_level(AX_LOG_WARN);
}
