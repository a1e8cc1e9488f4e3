/* Test helper: a checkpoint holding a value no writer would store (NaN, infinity, a negative
 * second moment). axmem refuses to write one, so the test rewrites a shard: it decompresses it,
 * sets one value, recompresses it and puts the new size and XXH3 in the manifest, so that only
 * the value checks can tell. */
#pragma once
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>
#include <zstd.h>

#include "lib/core/fsutil.h"

/* Replaces the text after `key` (up to the next ',' or '}') at or after `from` with `value`. */
static char *poison_replace_after(char *text, const char *from, const char *key,
                                  const char *value) {
    char *at = strstr(from, key);
    cr_assert_not_null(at, "no %s in the manifest", key);
    at += strlen(key);
    size_t old = strcspn(at, ",}");
    size_t pre = (size_t)(at - text), n = strlen(text) + strlen(value) + 1;
    char *out = malloc(n);
    memcpy(out, text, pre);
    snprintf(out + pre, n - pre, "%s%s", value, at + old);
    free(text);
    return out;
}

/* Sets value `index` (counted within shard `file` of step_dir) to `value`. */
static void poison_shard(const char *step_dir, const char *file, size_t index, float value) {
    char path[1024], mpath[1024];
    snprintf(path, sizeof path, "%s/%s", step_dir, file);
    snprintf(mpath, sizeof mpath, "%s/manifest.json", step_dir);
    char *z = NULL, *text = NULL;
    size_t zlen = 0, tlen = 0;
    cr_assert_eq(ax_read_file(path, &z, &zlen), AX_OK, "%s", ax_error_msg());
    unsigned long long raw = ZSTD_getFrameContentSize(z, zlen);
    cr_assert(raw != ZSTD_CONTENTSIZE_ERROR && raw != ZSTD_CONTENTSIZE_UNKNOWN);
    cr_assert(index < raw / sizeof(float), "value %zu is past shard %s", index, file);
    float *v = malloc(raw ? raw : 1);
    cr_assert_eq(ZSTD_decompress(v, raw, z, zlen), raw);
    v[index] = value;
    size_t cap = ZSTD_compressBound(raw);
    char *out = malloc(cap);
    size_t n = ZSTD_compress(out, cap, v, raw, 3);
    cr_assert(!ZSTD_isError(n));
    cr_assert_eq(ax_write_file(path, out, n), AX_OK);
    cr_assert_eq(ax_read_file(mpath, &text, &tlen), AX_OK);
    char key[256], num[32], hex[32];
    snprintf(key, sizeof key, "\"file\":\"%s\"", file);
    cr_assert_not_null(strstr(text, key), "no shard %s in %s", file, mpath);
    snprintf(num, sizeof num, "%zu", n);
    snprintf(hex, sizeof hex, "\"0x%016llx\"", (unsigned long long)XXH3_64bits(v, raw));
    size_t off = (size_t)(strstr(text, key) - text);
    text = poison_replace_after(text, text + off, "\"zbytes\":", num);
    text = poison_replace_after(text, text + off, "\"xxh3\":", hex);
    cr_assert_eq(ax_write_file(mpath, text, strlen(text)), AX_OK);
    free(text), free(out), free(v), free(z);
}
