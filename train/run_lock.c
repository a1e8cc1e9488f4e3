/* The run folder's lock (run_lock.h): an flock'd record of the holder, stale records taken
 * over on this host only. */
#include "train/run_lock.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define LOCK_NAME ".lock"
#define RECORD_MAX 8192

struct ax_run_lock {
    int fd;
    char *dir, *path;
    char *made; /* the outermost folder ax_run_lock_take created (NULL: none) */
};

/* Who holds (or held) a lock. */
typedef struct {
    char host[256];
    long long pid;
    char boot_id[64];         /* the kernel's boot id: "" where unknown */
    unsigned long long start; /* the process's start, clock ticks after boot: 0 where unknown */
    char since[64];           /* when it took the lock, local time */
    char command[1024];
} holder;

/* ---------------------------------------------------------------- this process */

static void read_line(const char *path, char *out, size_t n) {
    out[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return;
    if (!fgets(out, (int)n, f)) out[0] = 0;
    fclose(f);
    out[strcspn(out, "\n")] = 0;
}

/* Field 22 of /proc/PID/stat (after the command name, which may hold spaces and parentheses);
 * 0 when it cannot be read (no /proc, a hidden process, a PID that is gone). */
static unsigned long long proc_start(long long pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%lld/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    /* after ")": state is field 3, so start time (22) is the 20th token */
    char *save = NULL, *tok = strtok_r(p + 1, " ", &save);
    for (int field = 3; tok && field < 22; field++) tok = strtok_r(NULL, " ", &save);
    return tok ? strtoull(tok, NULL, 10) : 0;
}

/* The command line, its arguments joined by spaces (cut to fit). */
static void own_command(char *out, size_t n) {
    out[0] = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    ssize_t len = fd >= 0 ? read(fd, out, n - 1) : -1;
    if (fd >= 0) close(fd);
    if (len <= 0) {
        snprintf(out, n, "%s train", program_invocation_name);
        return;
    }
    for (ssize_t i = 0; i < len; i++)
        if (out[i] == 0) out[i] = ' ';
    while (len > 0 && out[len - 1] == ' ') len--;
    out[len] = 0;
}

static void own_holder(holder *h) {
    memset(h, 0, sizeof *h);
    if (gethostname(h->host, sizeof h->host - 1) != 0) snprintf(h->host, sizeof h->host, "?");
    h->pid = (long long)getpid();
    read_line("/proc/sys/kernel/random/boot_id", h->boot_id, sizeof h->boot_id);
    h->start = proc_start(h->pid);
    time_t now = time(NULL);
    struct tm tm;
    if (!localtime_r(&now, &tm) ||
        !strftime(h->since, sizeof h->since, "%Y-%m-%d %H:%M:%S %Z", &tm))
        snprintf(h->since, sizeof h->since, "%lld (Unix time)", (long long)now);
    own_command(h->command, sizeof h->command);
}

/* ---------------------------------------------------------------- the record */

static char *record_json(const holder *h) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "lock"), ax_jw_str(&w, "axmem train");
    ax_jw_key(&w, "host"), ax_jw_str(&w, h->host);
    ax_jw_key(&w, "pid"), ax_jw_int(&w, h->pid);
    ax_jw_key(&w, "boot_id"), ax_jw_str(&w, h->boot_id);
    ax_jw_key(&w, "proc_start"), ax_jw_uint(&w, h->start);
    ax_jw_key(&w, "since"), ax_jw_str(&w, h->since);
    ax_jw_key(&w, "command"), ax_jw_str(&w, h->command);
    ax_jw_obj_end(&w);
    char *text = ax_jw_text(&w) ? strdup(ax_jw_text(&w)) : NULL;
    ax_jw_free(&w);
    return text;
}

static void copy_str(const ax_json *o, const char *key, char *out, size_t n) {
    const ax_json *v = ax_json_get(o, key);
    snprintf(out, n, "%s", v && v->type == AX_JSON_STR ? v->str : "");
}

/* 1 when text is a lock record (host and PID at least), filling *h */
static int parse_record(const char *text, size_t len, holder *h) {
    memset(h, 0, sizeof *h);
    ax_json *j = NULL;
    int ok = ax_json_parse(text, len, LOCK_NAME, &j) == AX_OK && j->type == AX_JSON_OBJ;
    ax_error_clear(); /* the caller says what the file is and what to do */
    int64_t pid = 0, start = 0;
    ok = ok && ax_json_int_in(ax_json_get(j, "pid"), 1, INT32_MAX, &pid);
    const ax_json *host = ok ? ax_json_get(j, "host") : NULL;
    ok = ok && host && host->type == AX_JSON_STR && host->str[0];
    if (ok) {
        h->pid = pid;
        copy_str(j, "host", h->host, sizeof h->host);
        copy_str(j, "boot_id", h->boot_id, sizeof h->boot_id);
        copy_str(j, "since", h->since, sizeof h->since);
        copy_str(j, "command", h->command, sizeof h->command);
        if (ax_json_int_in(ax_json_get(j, "proc_start"), 0, INT64_MAX, &start))
            h->start = (unsigned long long)start;
    }
    ax_json_free(j);
    return ok;
}

/* The record in the file (len 0: empty). */
static ax_status read_record(int fd, const char *path, char *buf, size_t cap, size_t *len) {
    ssize_t n = pread(fd, buf, cap - 1, 0);
    if (n < 0) return ax_errorf(AX_ERR_IO, "cannot read %s: %s", path, strerror(errno));
    buf[n] = 0;
    *len = (size_t)n;
    return AX_OK;
}

static ax_status write_record(int fd, const char *path, const holder *me) {
    char *text = record_json(me);
    if (!text) return ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", path);
    ax_status st = AX_OK;
    if (ftruncate(fd, 0) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(text);
    if (st == AX_OK && pwrite(fd, text, n, 0) != (ssize_t)n)
        st = ax_errorf(AX_ERR_IO, "cannot write %s: %s; check the disk", path, strerror(errno));
    free(text);
    return st;
}

/* ---------------------------------------------------------------- deciding */

/* 1 while the recorded process (on this host) may still run */
static int holder_alive(const holder *h, const holder *me) {
    if (h->boot_id[0] && me->boot_id[0] && strcmp(h->boot_id, me->boot_id)) return 0;
    if (kill((pid_t)h->pid, 0) != 0 && errno == ESRCH) return 0;
    unsigned long long now = h->start ? proc_start(h->pid) : 0;
    return !(now && now != h->start); /* another process with that PID: the holder is gone */
}

static ax_status refuse_running(const char *dir, const char *path, const holder *h) {
    return ax_errorf(AX_ERR_IO,
                     "--out %s is in use: axmem train PID %lld on host %s has held it since %s "
                     "(%s); two runs in one folder would mix their metrics and checkpoints: "
                     "wait for it to finish or stop it (kill %lld), or choose another --out "
                     "(the lock is %s)",
                     dir, h->pid, h->host, h->since[0] ? h->since : "?",
                     h->command[0] ? h->command : "command unknown", h->pid, path);
}

static ax_status refuse_other_host(const char *dir, const char *path, const holder *h,
                                   const holder *me) {
    return ax_errorf(AX_ERR_IO,
                     "--out %s is locked by axmem train PID %lld on host %s since %s (%s); this "
                     "is host %s, which cannot tell whether that process still runs, so the "
                     "lock is kept: if you are sure no run uses %s, remove %s and start again",
                     dir, h->pid, h->host, h->since[0] ? h->since : "?",
                     h->command[0] ? h->command : "command unknown", me->host, dir, path);
}

/* The record left by an earlier holder: refuse, or take it over with a notice. */
static ax_status judge_record(const char *dir, const char *path, const char *text, size_t len,
                              const holder *me) {
    holder h;
    if (len == 0) return AX_OK;
    if (!parse_record(text, len, &h))
        return ax_errorf(AX_ERR_IO,
                         "%s is not an axmem lock record (a run's lock, damaged or edited?); if "
                         "you are sure no run uses %s, remove %s and start again",
                         path, dir, path);
    if (strcmp(h.host, me->host)) return refuse_other_host(dir, path, &h, me);
    if (h.pid == me->pid && h.start == me->start)
        return ax_errorf(AX_ERR_INTERNAL, "%s is already held by this process (a bug)", path);
    if (holder_alive(&h, me)) return refuse_running(dir, path, &h);
    AX_WARN("%s: taking over the lock of axmem train PID %lld (since %s), which no longer runs "
            "on this host",
            dir, h.pid, h.since[0] ? h.since : "?");
    return AX_OK;
}

/* the descriptor still names the file at path (a holder that left removed it) */
static int same_file(int fd, const char *path) {
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static ax_status open_lock_file(const char *path, int *fd) {
    *fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
    if (*fd < 0)
        return ax_errorf(AX_ERR_IO, "cannot create the run lock %s: %s; check the --out folder",
                         path, strerror(errno));
    struct stat sb;
    if (fstat(*fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(*fd);
        *fd = -1;
        return ax_errorf(AX_ERR_IO, "%s is not a regular file; remove it and start again", path);
    }
    return AX_OK;
}

/* One try: AX_OK with *fd holding the lock, *fd = -1 to try again, or a refusal. */
static ax_status try_take(const char *dir, const char *path, const holder *me, int *out) {
    int fd;
    *out = -1;
    AX_CHECK(open_lock_file(path, &fd));
    char text[RECORD_MAX];
    size_t len = 0;
    ax_status st = AX_OK;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        if (e == EWOULDBLOCK) { /* a live holder (here, or via a shared file system) */
            holder h;
            st = read_record(fd, path, text, sizeof text, &len);
            if (st == AX_OK && parse_record(text, len, &h))
                st = refuse_running(dir, path, &h);
            else if (st == AX_OK)
                st = ax_errorf(AX_ERR_IO,
                               "--out %s is in use by another axmem train that is starting "
                               "(%s); wait for it or choose another --out",
                               dir, path);
        } else if (e != ENOLCK && e != EOPNOTSUPP && e != ENOSYS && e != EINVAL) {
            st = ax_errorf(AX_ERR_IO, "cannot lock %s: %s", path, strerror(e));
        } /* else no flock on this file system: the record alone decides */
    }
    if (st == AX_OK && !same_file(fd, path)) { /* its holder removed it as we opened it */
        close(fd);
        return AX_OK;
    }
    if (st == AX_OK) st = read_record(fd, path, text, sizeof text, &len);
    if (st == AX_OK) st = judge_record(dir, path, text, len, me);
    if (st == AX_OK) st = write_record(fd, path, me);
    if (st != AX_OK) {
        close(fd);
        return st;
    }
    *out = fd;
    return AX_OK;
}

/* The outermost missing folder on the way to dir (dir itself when only it is missing), or NULL
 * when out of memory: what ax_mkdir_p will create, and the release may remove. */
static char *outermost_missing(const char *dir) {
    char *p = strdup(dir), *top = NULL;
    while (p && !ax_path_exists(p)) {
        free(top);
        top = strdup(p);
        char *slash = strrchr(p, '/');
        if (!slash || slash == p) break;
        *slash = 0;
    }
    free(p);
    return top;
}

ax_status ax_run_lock_take(const char *dir, int create_dir, ax_run_lock **out) {
    *out = NULL;
    int existed = ax_path_exists(dir);
    if (!existed && !create_dir) return AX_OK;
    ax_run_lock *l = calloc(1, sizeof *l);
    size_t n = strlen(dir) + sizeof LOCK_NAME + 1;
    if (l && (l->dir = strdup(dir))) { /* "a/b/" is "a/b": the folders are removed by name */
        size_t k = strlen(l->dir);
        while (k > 1 && l->dir[k - 1] == '/') l->dir[--k] = 0;
    }
    if (!l || !l->dir || !(l->path = malloc(n)) ||
        (!existed && !(l->made = outermost_missing(l->dir)))) {
        ax_run_lock_release(l);
        return ax_errorf(AX_ERR_NOMEM, "out of memory locking %s", dir);
    }
    snprintf(l->path, n, "%s/%s", dir, LOCK_NAME);
    l->fd = -1;
    if (!existed) {
        ax_status st = ax_mkdir_p(dir);
        if (st != AX_OK) {
            ax_run_lock_release(l);
            return st;
        }
    }
    holder me;
    own_holder(&me);
    ax_status st = AX_OK;
    /* a holder that leaves removes the file: a few tries find the one that stays */
    for (int i = 0; i < 8 && st == AX_OK && l->fd < 0; i++)
        st = try_take(dir, l->path, &me, &l->fd);
    if (st == AX_OK && l->fd < 0)
        st = ax_errorf(AX_ERR_IO, "cannot take the run lock %s: it keeps changing; try again",
                       l->path);
    if (st != AX_OK) {
        ax_run_lock_release(l);
        return st;
    }
    *out = l;
    return AX_OK;
}

void ax_run_lock_release(ax_run_lock *l) {
    if (!l) return;
    if (l->fd >= 0) {
        if (same_file(l->fd, l->path)) unlink(l->path); /* never another run's lock */
        close(l->fd);
    }
    /* the folders it created, while empty: a run that failed before writing anything */
    if (l->made && l->dir) {
        char *p = l->dir;
        while (rmdir(p) == 0 && strcmp(p, l->made) != 0) {
            char *slash = strrchr(p, '/');
            if (!slash || slash == p) break;
            *slash = 0;
        }
    }
    free(l->made);
    free(l->dir);
    free(l->path);
    free(l);
}
