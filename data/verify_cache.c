/* The verified-file cache: one file per (file version, digest) key. See verify_cache.h. */
#include "data/verify_cache.h"
#include "lib/core/fsutil.h"
#include "lib/core/log.h"
#include "lib/core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

static uint64_t g_min_bytes = (uint64_t)64 << 20;

void ax_verify_cache_set_min_bytes(uint64_t n) {
    g_min_bytes = n;
}

static int cache_off(void) {
    const char *d = getenv("AXMEM_CACHE_DIR");
    return d && !strcmp(d, "off");
}

/* the cache directory into out; 0 when there is none (no HOME) or it does not fit */
static int cache_dir(char *out, size_t size) {
    const char *d = getenv("AXMEM_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    int n;
    if (cache_off())
        return 0;
    else if (d && *d)
        n = snprintf(out, size, "%s", d);
    else if (x && *x == '/')
        n = snprintf(out, size, "%s/axmem/verified", x);
    else if (h && *h == '/')
        n = snprintf(out, size, "%s/.cache/axmem/verified", h);
    else
        return 0;
    return n > 0 && (size_t)n < size;
}

uint64_t ax_verify_cache_key(const struct stat *sb, uint64_t digest) {
    if (cache_off() || (uint64_t)sb->st_size < g_min_bytes) return 0;
    uint64_t f[9] = {(uint64_t)sb->st_dev,          (uint64_t)sb->st_ino,
                     (uint64_t)sb->st_size,         (uint64_t)sb->st_mtim.tv_sec,
                     (uint64_t)sb->st_mtim.tv_nsec, (uint64_t)sb->st_ctim.tv_sec,
                     (uint64_t)sb->st_ctim.tv_nsec, digest,
                     0x61786d656d763100ull /* "axmemv1": change to drop every entry */};
    uint64_t k = XXH3_64bits(f, sizeof f);
    return k ? k : 1;
}

static int entry_path(uint64_t key, char *out, size_t size, char *dir, size_t dsize) {
    if (!key || !cache_dir(dir, dsize)) return 0;
    int n = snprintf(out, size, "%s/%016llx", dir, (unsigned long long)key);
    return n > 0 && (size_t)n < size;
}

int ax_verify_cache_has(uint64_t key) {
    char dir[4096], p[4200];
    if (!entry_path(key, p, sizeof p, dir, sizeof dir)) return 0;
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

void ax_verify_cache_put(uint64_t key, const char *path) {
    char dir[4096], p[4200];
    if (!entry_path(key, p, sizeof p, dir, sizeof dir)) return;
    int had_msg = ax_error_msg()[0] != 0;
    if (ax_mkdir_p(dir) != AX_OK) {
        AX_DEBUG("verify cache %s unavailable: %s", dir, ax_error_msg());
        /* not an error for the caller: it verified, it just cannot record it */
        if (!had_msg) ax_error_clear();
        return;
    }
    /* the name is the record; O_EXCL: a concurrent writer of the same key already made it */
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        if (errno != EEXIST) AX_DEBUG("verify cache %s: %s", p, strerror(errno));
        return;
    }
    char line[4200];
    int n = snprintf(line, sizeof line, "%s\n", path);
    if (n > 0) (void)!write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
    close(fd);
}

int ax_verify_cache_settled(const struct stat *sb) {
    struct timespec now;
    if (clock_gettime(CLOCK_REALTIME, &now) != 0) return 0;
    /* ctime moves with every change (mtime included) and cannot be set back */
    long long age_ns = ((long long)now.tv_sec - (long long)sb->st_ctim.tv_sec) * 1000000000LL +
                       (now.tv_nsec - sb->st_ctim.tv_nsec);
    return age_ns >= 1000000000LL;
}
