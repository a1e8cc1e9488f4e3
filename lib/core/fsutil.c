/* File-system helpers: durable writes (fsync file, then directory) and tree removal. */
#include "lib/core/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

ax_status ax_mkdir_p(const char *path) {
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) return ax_errorf(AX_ERR_NOMEM, "out of memory creating directory %s", path);
    memcpy(p, path, n + 1);
    ax_status st = AX_OK;
    /* create each prefix ending at a '/', then the whole path */
    for (size_t i = 1; i <= n && st == AX_OK; i++) {
        if (p[i] != '/' && p[i] != 0) continue;
        char save = p[i];
        p[i] = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            st = ax_errorf(AX_ERR_IO,
                           "cannot create directory %s: %s; check the path and permissions", p,
                           strerror(errno));
        p[i] = save;
    }
    struct stat sb;
    if (st == AX_OK && (stat(path, &sb) != 0 || !S_ISDIR(sb.st_mode)))
        st = ax_errorf(AX_ERR_IO, "%s exists and is not a directory; choose another path", path);
    free(p);
    return st;
}

ax_status ax_read_file(const char *path, char **data, size_t *len) {
    return ax_read_file_max(path, SIZE_MAX - 4096, data, len);
}

ax_status ax_write_all(int fd, const void *buf, size_t len, const char *path) {
    const char *p = buf;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0)
            return ax_errorf(AX_ERR_IO, "cannot write %s: %s; check free disk space", path,
                             strerror(errno));
        p += w;
        len -= (size_t)w;
    }
    return AX_OK;
}

/* writes all of data to fd, fsyncs and closes it (closed on failure too) */
static ax_status write_sync_close(int fd, const void *data, size_t len, const char *path) {
    ax_status st = ax_write_all(fd, data, len, path);
    if (st == AX_OK && fsync(fd) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot fsync %s: %s", path, strerror(errno));
    if (close(fd) != 0 && st == AX_OK)
        st = ax_errorf(AX_ERR_IO, "cannot close %s: %s", path, strerror(errno));
    return st;
}

ax_status ax_write_file(const char *path, const void *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return ax_errorf(AX_ERR_IO, "cannot create %s: %s; check the path and permissions", path,
                         strerror(errno));
    return write_sync_close(fd, data, len, path);
}

ax_status ax_fsync_dir(const char *path) {
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return ax_errorf(AX_ERR_IO, "cannot open directory %s: %s", path, strerror(errno));
    ax_status st = AX_OK;
    if (fsync(fd) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot fsync directory %s: %s", path, strerror(errno));
    close(fd);
    return st;
}

static _Thread_local int g_rm_errno;
static _Thread_local char g_rm_path[512];

static int rm_one(const char *p, const struct stat *sb, int type, struct FTW *ftw) {
    (void)sb;
    (void)ftw;
    int r = (type == FTW_DP) ? rmdir(p) : unlink(p);
    if (r != 0 && errno != ENOENT && !g_rm_errno) {
        g_rm_errno = errno;
        snprintf(g_rm_path, sizeof g_rm_path, "%s", p);
    }
    return 0; /* keep going: remove as much as we can */
}

ax_status ax_rm_rf(const char *path) {
    struct stat sb;
    if (lstat(path, &sb) != 0) return AX_OK;
    g_rm_errno = 0;
    if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0 && !g_rm_errno) {
        g_rm_errno = errno;
        snprintf(g_rm_path, sizeof g_rm_path, "%s", path);
    }
    if (g_rm_errno)
        return ax_errorf(AX_ERR_IO, "cannot remove %s: %s; remove it by hand", g_rm_path,
                         strerror(g_rm_errno));
    return AX_OK;
}

ax_status ax_rename_durable(const char *from, const char *to) {
    if (rename(from, to) != 0)
        return ax_errorf(AX_ERR_IO, "cannot rename %s to %s: %s", from, to, strerror(errno));
    /* the directory entry is what makes the rename durable */
    size_t n = strlen(to);
    char *dir = malloc(n + 2);
    if (!dir) return ax_errorf(AX_ERR_NOMEM, "out of memory");
    memcpy(dir, to, n + 1);
    while (n > 1 && dir[n - 1] == '/') dir[--n] = 0;
    char *slash = strrchr(dir, '/');
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = 0;
    else
        *slash = 0;
    ax_status st = ax_fsync_dir(dir);
    free(dir);
    return st;
}

int ax_path_exists(const char *path) {
    struct stat sb;
    return lstat(path, &sb) == 0;
}

static ax_status open_private(const char *path, int access_mode, int *fd) {
    *fd = open(path, access_mode | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (*fd < 0)
        return ax_errorf(AX_ERR_IO, "cannot create %s: %s; check the path and permissions", path,
                         strerror(errno));
    if (fchmod(*fd, 0600) != 0) { /* an existing file keeps its old mode under O_CREAT */
        int e = errno;
        close(*fd);
        *fd = -1;
        return ax_errorf(AX_ERR_IO, "cannot make %s private (mode 0600): %s", path, strerror(e));
    }
    return AX_OK;
}

ax_status ax_open_private(const char *path, int *fd) {
    return open_private(path, O_WRONLY, fd);
}

ax_status ax_open_private_rw(const char *path, int *fd) {
    return open_private(path, O_RDWR, fd);
}

ax_status ax_write_file_private(const char *path, const void *data, size_t len) {
    int fd;
    AX_CHECK(ax_open_private(path, &fd));
    return write_sync_close(fd, data, len, path);
}

FILE *ax_fopen_private(const char *path) {
    int fd;
    if (ax_open_private(path, &fd) != AX_OK) return NULL;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        ax_errorf(AX_ERR_IO, "cannot write %s: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}

void ax_dirname(const char *path, char *dir, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, n, ".");
    else if (slash == path)
        snprintf(dir, n, "/");
    else
        snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

ax_status ax_create_temp(const char *path, int private_mode, char *tmp, size_t n, int *fd) {
    static _Atomic unsigned counter;
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    int dir_len = slash ? (int)(slash - path + 1) : 0;
    for (int attempt = 0; attempt < 100; attempt++) {
        int len =
            snprintf(tmp, n, "%.*s.%s.tmp-%ld-%u", dir_len, path, base, (long)getpid(), counter++);
        if (len < 0 || (size_t)len >= n) return ax_errorf(AX_ERR_ARG, "path %s is too long", path);
        *fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, private_mode ? 0600 : 0666);
        if (*fd >= 0) return AX_OK;
        if (errno != EEXIST) break;
    }
    return ax_errorf(AX_ERR_IO,
                     "cannot create a temporary file beside %s: %s; check the folder "
                     "exists and is writable",
                     path, strerror(errno));
}

ax_status ax_write_text_atomic(const char *path, const char *text, int private_mode) {
    char tmp[4200];
    int fd;
    AX_CHECK(ax_create_temp(path, private_mode, tmp, sizeof tmp, &fd));
    ax_status st = ax_write_all(fd, text, strlen(text), tmp);
    if (st == AX_OK)
        st = write_sync_close(fd, "\n", 1, tmp);
    else
        close(fd);
    if (st == AX_OK) st = ax_rename_durable(tmp, path);
    if (st != AX_OK) unlink(tmp);
    return st;
}

/* ---------------------------------------------------------------- regular-file inputs */

static const char *file_kind(mode_t m) {
    if (S_ISDIR(m)) return "a directory";
    if (S_ISFIFO(m)) return "a FIFO (named pipe)";
    if (S_ISSOCK(m)) return "a socket";
    if (S_ISCHR(m)) return "a character device";
    if (S_ISBLK(m)) return "a block device";
    return "not a regular file";
}

static ax_status not_regular(const char *path, mode_t m) {
    return ax_errorf(AX_ERR_IO,
                     "%s is %s, not a regular file; axmem reads its inputs only from regular files "
                     "(save the data to a file and pass that)",
                     path, file_kind(m));
}

/* procfs and sysfs show "regular" files of size 0 that block on read (/proc/kmsg) or change
 * under the reader: never data a user meant to pass */
#define AX_PROC_SUPER_MAGIC 0x9fa0
#define AX_SYSFS_MAGIC 0x62656572
static int on_pseudo_fs(const struct statfs *fs) {
    return fs->f_type == AX_PROC_SUPER_MAGIC || fs->f_type == AX_SYSFS_MAGIC;
}

static ax_status pseudo_file(const char *path) {
    return ax_errorf(AX_ERR_IO,
                     "%s is a kernel pseudo-file (/proc or /sys), not a data file; axmem reads "
                     "its inputs only from regular files",
                     path);
}

ax_status ax_open_regular(const char *path, const char *hint, int *fd) {
    *fd = -1;
    /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer forever */
    int f = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (f < 0)
        return ax_errorf(AX_ERR_IO, "cannot open %s: %s; %s", path, strerror(errno),
                         hint ? hint : "check the path");
    struct stat sb;
    if (fstat(f, &sb) != 0) {
        int e = errno;
        close(f);
        return ax_errorf(AX_ERR_IO, "cannot stat %s: %s", path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(f);
        return not_regular(path, sb.st_mode);
    }
    struct statfs fs;
    if (fstatfs(f, &fs) == 0 && on_pseudo_fs(&fs)) {
        close(f);
        return pseudo_file(path);
    }
    int fl = fcntl(f, F_GETFL);
    if (fl < 0 || fcntl(f, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        int e = errno;
        close(f);
        return ax_errorf(AX_ERR_IO, "cannot read %s: %s", path, strerror(e));
    }
    *fd = f;
    return AX_OK;
}

ax_status ax_fopen_regular(const char *path, const char *hint, FILE **out) {
    *out = NULL;
    int fd;
    AX_CHECK(ax_open_regular(path, hint, &fd));
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        int e = errno;
        close(fd);
        return ax_errorf(AX_ERR_IO, "cannot read %s: %s", path, strerror(e));
    }
    *out = f;
    return AX_OK;
}

ax_status ax_check_regular(const char *path, const char *hint) {
    struct stat sb;
    if (stat(path, &sb) != 0)
        return ax_errorf(AX_ERR_IO, "cannot open %s: %s; %s", path, strerror(errno),
                         hint ? hint : "check the path");
    if (!S_ISREG(sb.st_mode)) return not_regular(path, sb.st_mode);
    struct statfs fs;
    if (statfs(path, &fs) == 0 && on_pseudo_fs(&fs)) return pseudo_file(path);
    return AX_OK;
}

ax_status ax_read_file_max(const char *path, size_t max_bytes, char **data, size_t *len) {
    *data = NULL;
    *len = 0;
    int fd;
    AX_CHECK(ax_open_regular(path, NULL, &fd));
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        return ax_errorf(AX_ERR_IO, "cannot stat %s: %s", path, strerror(e));
    }
    if ((uint64_t)sb.st_size > (uint64_t)max_bytes) {
        close(fd);
        return ax_errorf(AX_ERR_ARG,
                         "%s is %lld bytes, more than the %zu this kind of file may hold; pass the "
                         "right file",
                         path, (long long)sb.st_size, max_bytes);
    }
    size_t cap = (size_t)sb.st_size, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) {
        close(fd);
        return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s (%zu bytes)", path, cap);
    }
    for (;;) {
        if (n == cap) { /* the file grew while we read it: keep going, up to the bound */
            if (cap >= max_bytes) {
                char extra;
                ssize_t r = read(fd, &extra, 1);
                if (r < 0 && errno == EINTR) continue;
                if (r == 0) break;
                free(buf);
                close(fd);
                return r < 0 ? ax_errorf(AX_ERR_IO, "cannot read %s: %s", path, strerror(errno))
                             : ax_errorf(AX_ERR_ARG,
                                         "%s grew past the %zu bytes this kind of file may hold "
                                         "while it was read; pass the right file",
                                         path, max_bytes);
            }
            size_t nc = cap > max_bytes / 2 ? max_bytes : cap * 2 + 4096;
            if (nc > max_bytes) nc = max_bytes;
            char *nb = realloc(buf, nc + 1);
            if (!nb) {
                free(buf);
                close(fd);
                return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", path);
            }
            buf = nb;
            cap = nc;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return ax_errorf(AX_ERR_IO, "cannot read %s: %s", path, strerror(e));
        }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *data = buf;
    *len = n;
    return AX_OK;
}
