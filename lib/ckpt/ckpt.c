/* Checkpoint directories: streaming zstd shards with XXH3 of the raw bytes, a JSON manifest,
 * and the write-to-.partial / fsync / rename protocol that keeps the last good step intact. */
#include "lib/ckpt/ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#include "lib/core/fsutil.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoints store raw little-endian floats; add byte swapping for this target"
#endif

#define CKPT_FORMAT "axmem-ckpt"
#define CKPT_VERSION 1
#define DAMAGED "the checkpoint is damaged; resume from an earlier one or retrain"
/* bounds on what a manifest may make a reader hold (a real one is kilobytes) */
#define CKPT_MANIFEST_MAX ((size_t)64 << 20)
#define CKPT_MAX_ENTRIES (1 << 20)

static size_t g_shard_bytes = (size_t)256 << 20;

void ax_ckpt_set_shard_bytes(size_t bytes) {
    bytes -= bytes % sizeof(float);
    g_shard_bytes = bytes ? bytes : (size_t)256 << 20;
}

/* ---------------------------------------------------------------- finite values */

/* Every float in a checkpoint is finite: a NaN or infinity comes from a run that diverged or
 * from damage, and a model holding one gives every scan a meaningless answer. So writing and
 * reading both refuse one. The test looks at the exponent bits (all ones), which the compiler
 * vectorises and no floating-point flag can change: one cheap pass beside zstd and XXH3. */
static int64_t count_nonfinite(const float *p, int64_t n) {
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, p + i, sizeof u);
        bad += (u & 0x7f800000u) == 0x7f800000u;
    }
    return bad;
}

static int64_t first_nonfinite(const float *p, int64_t n) {
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(p[i])) return i;
    return -1;
}

/* The tensor holding value `at` of a parameter-layout blob, or NULL (a blob of another layout). */
static const ax_tensor_info *tensor_at(const ax_tensor_info *ts, int n, int64_t at) {
    for (int i = 0; i < n; i++)
        if (at >= ts[i].offset && at - ts[i].offset < ts[i].numel) return &ts[i];
    return NULL;
}

/* AX_OK, or AX_ERR_CORRUPT naming the blob, the first bad value's tensor and what to do.
 * data holds blob[offset, offset + n); `where` and `advice` open and close the message. */
static ax_status check_finite(const char *where, const char *blob, const float *data,
                              int64_t offset, int64_t n, const ax_tensor_info *ts, int n_ts,
                              const char *advice) {
    int64_t bad = count_nonfinite(data, n);
    if (!bad) return AX_OK;
    int64_t i = first_nonfinite(data, n), at = offset + i;
    const ax_tensor_info *t = tensor_at(ts, n_ts, at);
    char in[160] = "";
    if (t)
        snprintf(in, sizeof in, " in tensor %s (its value %lld)", t->name,
                 (long long)(at - t->offset));
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s: blob \"%s\" holds %lld non-finite value%s (the first is %g, value %lld "
                     "of the blob%s); %s",
                     where, blob, (long long)bad, bad == 1 ? "" : "s", (double)data[i],
                     (long long)at, in, advice);
}

/* ---------------------------------------------------------------- writing */

typedef struct {
    int blob;
    char file[96];
    int64_t offset, count;
    uint64_t zbytes, xxh;
} shard_rec;

/* blob names become file names: keep them to a safe alphabet */
static int safe_name(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-'))
            return 0;
    }
    return 1;
}

static ax_status write_shard(ZSTD_CCtx *cz, const char *path, const float *data, int64_t count,
                             shard_rec *r) {
    size_t bytes = (size_t)count * sizeof(float);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        return ax_errorf(AX_ERR_IO, "cannot create %s: %s; check the path and permissions", path,
                         strerror(errno));
    size_t cap = ZSTD_CStreamOutSize();
    char *out = malloc(cap);
    ax_status st = out ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", path);
    ZSTD_CCtx_reset(cz, ZSTD_reset_session_only);
    ZSTD_CCtx_setPledgedSrcSize(cz, bytes);
    ZSTD_inBuffer in = {data, bytes, 0};
    uint64_t z = 0;
    while (st == AX_OK) {
        ZSTD_outBuffer ob = {out, cap, 0};
        size_t rem = ZSTD_compressStream2(cz, &ob, &in, ZSTD_e_end);
        if (ZSTD_isError(rem)) {
            st = ax_errorf(AX_ERR_INTERNAL, "zstd failed compressing %s: %s", path,
                           ZSTD_getErrorName(rem));
            break;
        }
        st = ax_write_all(fd, out, ob.pos, path);
        z += ob.pos;
        if (rem == 0) break;
    }
    if (st == AX_OK && fsync(fd) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot fsync %s: %s; check the disk", path, strerror(errno));
    if (close(fd) != 0 && st == AX_OK)
        st = ax_errorf(AX_ERR_IO, "cannot close %s: %s", path, strerror(errno));
    free(out);
    r->count = count;
    r->zbytes = z;
    r->xxh = XXH3_64bits(data, bytes);
    return st;
}

static ax_status check_args(const char *dir, long step, const ax_ckpt_write_args *a) {
    if (step < 0)
        return ax_errorf(AX_ERR_ARG, "checkpoint step %ld is negative; steps start at 0", step);
    for (int i = 0; i < a->n_blobs; i++) {
        const ax_ckpt_blob *b = &a->blobs[i];
        if (!b->name || !safe_name(b->name))
            return ax_errorf(AX_ERR_ARG,
                             "checkpoint blob name \"%s\" is not 1-64 characters of [A-Za-z0-9_-]",
                             b->name ? b->name : "(null)");
        if (b->count < 0 || (b->count > 0 && !b->data))
            return ax_errorf(AX_ERR_ARG, "checkpoint blob %s has count %lld and data %p", b->name,
                             (long long)b->count, (const void *)b->data);
        for (int j = 0; j < i; j++)
            if (!strcmp(a->blobs[j].name, b->name))
                return ax_errorf(AX_ERR_ARG, "checkpoint blob %s is given twice", b->name);
        char where[4200];
        snprintf(where, sizeof where, "refusing to write checkpoint step %ld into %s", step, dir);
        AX_CHECK(check_finite(where, b->name, b->data, 0, b->count, a->tensors,
                              a->tensors ? a->n_tensors : 0,
                              "a checkpoint is never written from a non-finite state (a run "
                              "that diverged, or a model with damaged weights)"));
    }
    for (int i = 0; i < a->n_tensors; i++) {
        const ax_tensor_info *t = &a->tensors[i];
        if (t->ndim < 0 || t->ndim > 4 || strnlen(t->name, sizeof t->name) == sizeof t->name)
            return ax_errorf(AX_ERR_ARG, "checkpoint tensor %d has ndim %d or an unterminated name",
                             i, t->ndim);
    }
    const char *objs[2] = {a->config_json, a->state_json}, *names[2] = {"config", "state"};
    for (int i = 0; i < 2; i++) {
        if (!objs[i]) continue;
        ax_json *j;
        AX_CHECK(ax_json_parse_advice(objs[i], strlen(objs[i]), names[i],
                                      "this is a bug in the caller of ax_ckpt_write", &j));
        int ok = j->type == AX_JSON_OBJ;
        ax_json_free(j);
        if (!ok)
            return ax_errorf(AX_ERR_ARG, "checkpoint %s must be a JSON object (writing into %s)",
                             names[i], dir);
    }
    return AX_OK;
}

static void write_manifest_json(ax_jw *w, long step, const ax_ckpt_write_args *a,
                                const shard_rec *sh, int nsh) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "format"), ax_jw_str(w, CKPT_FORMAT);
    ax_jw_key(w, "version"), ax_jw_int(w, CKPT_VERSION);
    ax_jw_key(w, "step"), ax_jw_int(w, step);
    ax_jw_key(w, "grid"), ax_jw_str(w, a->grid ? a->grid : "1x1x1x1");
    ax_jw_key(w, "config"), ax_jw_raw(w, a->config_json ? a->config_json : "{}");
    ax_jw_key(w, "state"), ax_jw_raw(w, a->state_json ? a->state_json : "{}");
    ax_jw_key(w, "tensors");
    ax_jw_arr_begin(w);
    for (int i = 0; i < a->n_tensors; i++) {
        const ax_tensor_info *t = &a->tensors[i];
        ax_jw_obj_begin(w);
        ax_jw_key(w, "name"), ax_jw_str(w, t->name);
        ax_jw_key(w, "shape");
        ax_jw_arr_begin(w);
        for (int d = 0; d < t->ndim; d++) ax_jw_int(w, t->shape[d]);
        ax_jw_arr_end(w);
        ax_jw_key(w, "offset"), ax_jw_int(w, t->offset);
        ax_jw_key(w, "numel"), ax_jw_int(w, t->numel);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    ax_jw_key(w, "shards");
    ax_jw_arr_begin(w);
    for (int i = 0; i < nsh; i++) {
        char hex[24];
        snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)sh[i].xxh);
        ax_jw_obj_begin(w);
        ax_jw_key(w, "blob"), ax_jw_str(w, a->blobs[sh[i].blob].name);
        ax_jw_key(w, "file"), ax_jw_str(w, sh[i].file);
        ax_jw_key(w, "offset"), ax_jw_int(w, sh[i].offset);
        ax_jw_key(w, "count"), ax_jw_int(w, sh[i].count);
        ax_jw_key(w, "bytes"), ax_jw_int(w, sh[i].count * (int64_t)sizeof(float));
        ax_jw_key(w, "zbytes"), ax_jw_uint(w, sh[i].zbytes);
        ax_jw_key(w, "xxh3"), ax_jw_str(w, hex);
        ax_jw_obj_end(w);
    }
    ax_jw_arr_end(w);
    ax_jw_obj_end(w);
}

ax_status ax_ckpt_write(const char *ckpt_dir, long step, const ax_ckpt_write_args *a) {
    AX_CHECK(check_args(ckpt_dir, step, a));
    AX_CHECK(ax_mkdir_p(ckpt_dir));
    size_t plen = strlen(ckpt_dir) + 128;
    char *final = malloc(plen), *partial = malloc(plen), *path = malloc(plen);
    shard_rec *sh = NULL;
    ZSTD_CCtx *cz = NULL;
    ax_jw w;
    ax_jw_init(&w);
    ax_status st = AX_OK;
    int made_partial = 0;
    if (!final || !partial || !path) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory writing a checkpoint");
        goto done;
    }
    snprintf(final, plen, "%s/step-%06ld", ckpt_dir, step);
    snprintf(partial, plen, "%s.partial", final);
    if (ax_path_exists(final)) {
        st = ax_errorf(AX_ERR_ARG,
                       "checkpoint %s already exists; refusing to overwrite it: use another "
                       "checkpoint directory or remove that step",
                       final);
        goto done;
    }
    AX_CHECK_GOTO(ax_rm_rf(partial), done); /* left over from a crash at this step */
    if (mkdir(partial, 0777) != 0) {
        st = ax_errorf(AX_ERR_IO, "cannot create %s: %s; check the path and permissions", partial,
                       strerror(errno));
        goto done;
    }
    made_partial = 1;

    size_t per = g_shard_bytes / sizeof(float); /* floats per shard */
    int nsh = 0;
    for (int b = 0; b < a->n_blobs; b++)
        nsh += a->blobs[b].count ? (int)((a->blobs[b].count + (int64_t)per - 1) / (int64_t)per) : 1;
    sh = calloc((size_t)nsh ? (size_t)nsh : 1, sizeof *sh);
    cz = ZSTD_createCCtx();
    if (!sh || !cz) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory writing checkpoint %s", final);
        goto done;
    }
    ZSTD_CCtx_setParameter(cz, ZSTD_c_compressionLevel, a->zstd_level ? a->zstd_level : 3);
    ZSTD_CCtx_setParameter(cz, ZSTD_c_checksumFlag, 1);
    int k = 0;
    for (int b = 0; b < a->n_blobs; b++) {
        const ax_ckpt_blob *bl = &a->blobs[b];
        int64_t off = 0;
        int idx = 0;
        do { /* an empty blob still gets one (empty) shard so readers know it exists */
            int64_t cnt = bl->count - off < (int64_t)per ? bl->count - off : (int64_t)per;
            shard_rec *r = &sh[k++];
            r->blob = b;
            r->offset = off;
            snprintf(r->file, sizeof r->file, "%s.%03d.zst", bl->name, idx++);
            snprintf(path, plen, "%s/%s", partial, r->file);
            AX_CHECK_GOTO(write_shard(cz, path, bl->data ? bl->data + off : NULL, cnt, r), done);
            off += cnt;
        } while (off < bl->count);
    }
    write_manifest_json(&w, step, a, sh, nsh);
    if (!ax_jw_text(&w)) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory writing the manifest of %s", final);
        goto done;
    }
    snprintf(path, plen, "%s/manifest.json", partial);
    AX_CHECK_GOTO(ax_write_file(path, w.buf, w.len), done);
    AX_CHECK_GOTO(ax_fsync_dir(partial), done);
    AX_CHECK_GOTO(ax_rename_durable(partial, final), done);
    made_partial = 0;
done:
    if (st != AX_OK && made_partial) ax_rm_rf(partial); /* best effort; the next write retries */
    ax_jw_free(&w);
    ZSTD_freeCCtx(cz);
    free(sh);
    free(final);
    free(partial);
    free(path);
    return st;
}

/* ---------------------------------------------------------------- finding */

/* step number for "step-<digits>", else -1 */
static long parse_step_name(const char *s) {
    if (strncmp(s, "step-", 5) != 0 || !s[5]) return -1;
    long v = 0;
    for (const char *p = s + 5; *p; p++) {
        if (*p < '0' || *p > '9' || v > 100000000000L) return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

ax_status ax_ckpt_find_latest(const char *ckpt_dir, char *out, size_t out_size) {
    DIR *d = opendir(ckpt_dir);
    if (!d)
        return ax_errorf(AX_ERR_IO,
                         "no checkpoint directory %s (%s); check the path or train first", ckpt_dir,
                         strerror(errno));
    long best = -1;
    char mpath[4096];
    struct dirent *e;
    while ((e = readdir(d))) {
        long s = parse_step_name(e->d_name);
        if (s <= best) continue;
        /* renamed dirs are complete by construction; the manifest check skips stray copies */
        snprintf(mpath, sizeof mpath, "%s/%s/manifest.json", ckpt_dir, e->d_name);
        if (ax_path_exists(mpath)) best = s;
    }
    closedir(d);
    if (best < 0)
        return ax_errorf(AX_ERR_IO,
                         "no complete checkpoint (step-NNNNNN/ with manifest.json) in %s; train "
                         "first or pass the right checkpoint directory",
                         ckpt_dir);
    if ((size_t)snprintf(out, out_size, "%s/step-%06ld", ckpt_dir, best) >= out_size)
        return ax_errorf(AX_ERR_ARG, "checkpoint path under %s does not fit in %zu bytes", ckpt_dir,
                         out_size);
    return AX_OK;
}

/* ---------------------------------------------------------------- naming a checkpoint */

static int cmp_names(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* What dir holds, for a message: its first names in order (directories with a '/'), "and N
 * more", or "nothing"; *partial set when one is an unfinished step-NNNNNN.partial. */
static void describe_dir(const char *dir, char *out, size_t n, int *partial) {
    enum { SHOWN = 6, CAP = 4096 };
    char *names[CAP];
    int k = 0, total = 0;
    DIR *d = opendir(dir);
    snprintf(out, n, "nothing");
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        total++;
        if (!strncmp(e->d_name, "step-", 5) && strstr(e->d_name, ".partial")) *partial = 1;
        if (k < CAP && (names[k] = strdup(e->d_name))) k++;
    }
    closedir(d);
    qsort(names, (size_t)k, sizeof *names, cmp_names);
    size_t o = 0;
    char path[4096];
    for (int i = 0; i < k && i < SHOWN && o < n; i++) {
        struct stat sb;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        int is_dir = stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
        o += (size_t)snprintf(out + o, n - o, "%s%s%s", i ? ", " : "", names[i], is_dir ? "/" : "");
    }
    if (total > SHOWN && o < n) snprintf(out + o, n - o, " and %d more", total - SHOWN);
    for (int i = 0; i < k; i++) free(names[i]);
}

/* the newest complete step in dir, quietly: 0 when there is none */
static int latest_in(const char *dir, char *out, size_t out_size) {
    if (ax_ckpt_find_latest(dir, out, out_size) == AX_OK) return 1;
    ax_error_clear();
    return 0;
}

#define CKPT_FORMS                                                                                 \
    "pass a training run's directory (train --out), a checkpoint directory (model import "         \
    "--out) or one of their step-NNNNNN directories"

ax_status ax_ckpt_resolve(const char *dir, const char *flag, char *out, size_t out_size) {
    char path[4096], held[1024] = "", sub_held[1100] = "";
    struct stat sb;
    if (stat(dir, &sb) != 0)
        return ax_errorf(AX_ERR_IO, "%s %s: %s; " CKPT_FORMS, flag, dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return ax_errorf(AX_ERR_IO, "%s %s is not a directory; " CKPT_FORMS, flag, dir);
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    if (ax_path_exists(path)) { /* a step directory */
        if ((size_t)snprintf(out, out_size, "%s", dir) >= out_size)
            return ax_errorf(AX_ERR_ARG, "%s %s: the path is too long", flag, dir);
        return AX_OK;
    }
    snprintf(path, sizeof path, "%s/ckpt", dir);
    if (latest_in(path, out, out_size) || latest_in(dir, out, out_size)) return AX_OK;
    char cfg[4096], st[4096], idx[4096];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    if (ax_path_exists(cfg) && (ax_path_exists(st) || ax_path_exists(idx)))
        return ax_errorf(AX_ERR_ARG,
                         "%s %s is a Hugging Face model directory (config.json and "
                         "safetensors), not an axmem checkpoint; import it first: axmem "
                         "model import --hf %s --out CKPT_DIR, then pass CKPT_DIR",
                         flag, dir, dir);
    int partial = 0;
    describe_dir(dir, held, sizeof held, &partial);
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char in_sub[1024];
        describe_dir(path, in_sub, sizeof in_sub, &partial);
        snprintf(sub_held, sizeof sub_held, "; its ckpt/ holds %s", in_sub);
    }
    return ax_errorf(AX_ERR_IO,
                     "%s %s holds no finished checkpoint: no manifest.json, and no "
                     "step-NNNNNN/ with one in it or in its ckpt/ (it holds %s%s)%s; " CKPT_FORMS,
                     flag, dir, held, sub_held,
                     partial ? "; a step-NNNNNN.partial is a checkpoint whose writing never "
                               "finished (the run stopped before it was complete)"
                             : "");
}

/* ---------------------------------------------------------------- reading */

typedef struct {
    const char *blob; /* points into the manifest DOM */
    char *path;
    int64_t offset, count;
    uint64_t zbytes, xxh;
} shard_info;

struct ax_ckpt {
    char *path;
    long step;
    ax_json *root;
    const ax_json *config, *state;
    const char *grid;
    ax_tensor_info *tensors;
    int n_tensors;
    shard_info *shards;
    int n_shards;
};

/* manifest field helpers: every message names the manifest and says the checkpoint is damaged */
static const ax_json *mget(const ax_json *o, const char *key, ax_json_type t, const char *mpath,
                           ax_status *st) {
    const ax_json *v = ax_json_get(o, key);
    if (*st != AX_OK) return NULL;
    if (!v || v->type != t) {
        *st = ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" is %s; %s", mpath, key,
                        v ? "of the wrong type" : "missing", DAMAGED);
        return NULL;
    }
    return v;
}

/* counts and offsets: integers in [0, 2^53], converted only once known to be in range */
#define CKPT_COUNT_MAX ((int64_t)1 << 53)

static int64_t mget_int(const ax_json *o, const char *key, const char *mpath, ax_status *st) {
    const ax_json *v = mget(o, key, AX_JSON_NUM, mpath, st);
    if (!v) return 0;
    int64_t x;
    if (!ax_json_int_in(v, 0, CKPT_COUNT_MAX, &x)) {
        *st = ax_errorf(AX_ERR_CORRUPT, "%s: \"%s\" = %g is not a count; %s", mpath, key, v->num,
                        DAMAGED);
        return 0;
    }
    return x;
}

/* A zeroed record of `size` bytes for each of at most CKPT_MAX_ENTRIES entries of arr, which
 * the manifest calls `what` ("tensors") */
static ax_status alloc_entries(const ax_json *arr, const char *what, size_t size, const char *mp,
                               void **out) {
    if (arr->n > CKPT_MAX_ENTRIES)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %zu %s is more than %d; %s", mp, arr->n, what,
                         CKPT_MAX_ENTRIES, DAMAGED);
    *out = calloc(arr->n ? arr->n : 1, size);
    return *out ? AX_OK : ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", mp);
}

/* entry i of arr when it is an object; else AX_ERR_CORRUPT naming it */
static ax_status entry_object(const ax_json *arr, const char *what, size_t i, const char *mp) {
    if (arr->items[i]->type == AX_JSON_OBJ) return AX_OK;
    return ax_errorf(AX_ERR_CORRUPT, "%s: %s[%zu] is not an object; %s", mp, what, i, DAMAGED);
}

static ax_status parse_tensors(ax_ckpt_t *c, const ax_json *arr, const char *mp) {
    AX_CHECK(alloc_entries(arr, "tensors", sizeof *c->tensors, mp, (void **)&c->tensors));
    c->n_tensors = (int)arr->n;
    ax_status st = AX_OK;
    for (size_t i = 0; i < arr->n && st == AX_OK; i++) {
        const ax_json *o = arr->items[i];
        ax_tensor_info *t = &c->tensors[i];
        AX_CHECK(entry_object(arr, "tensors", i, mp));
        const ax_json *name = mget(o, "name", AX_JSON_STR, mp, &st);
        const ax_json *shape = mget(o, "shape", AX_JSON_ARR, mp, &st);
        t->offset = mget_int(o, "offset", mp, &st);
        t->numel = mget_int(o, "numel", mp, &st);
        if (st != AX_OK) return st;
        if (name->str_len >= sizeof t->name || shape->n > 4)
            return ax_errorf(AX_ERR_CORRUPT, "%s: tensors[%zu] has a name or shape too long; %s",
                             mp, i, DAMAGED);
        memcpy(t->name, name->str, name->str_len + 1);
        t->ndim = (int)shape->n;
        /* the product is bounded at every step, so [2^32, 2^32, 2^32] cannot overflow */
        int64_t prod = 1;
        for (size_t d = 0; d < shape->n; d++) {
            if (!ax_json_int_in(shape->items[d], 0, CKPT_COUNT_MAX, &t->shape[d]))
                return ax_errorf(AX_ERR_CORRUPT, "%s: tensor %s has a bad shape; %s", mp, t->name,
                                 DAMAGED);
            if (t->shape[d] && prod > CKPT_COUNT_MAX / t->shape[d])
                return ax_errorf(AX_ERR_CORRUPT, "%s: tensor %s has an impossibly large shape; %s",
                                 mp, t->name, DAMAGED);
            prod *= t->shape[d];
        }
        if (t->offset > CKPT_COUNT_MAX - t->numel)
            return ax_errorf(AX_ERR_CORRUPT, "%s: tensor %s ends past 2^53 values; %s", mp, t->name,
                             DAMAGED);
        if (prod != t->numel)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: tensor %s has numel %lld but shape gives %lld; %s", mp, t->name,
                             (long long)t->numel, (long long)prod, DAMAGED);
    }
    return st;
}

static int plain_file_name(const char *s) {
    return *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static ax_status parse_shards(ax_ckpt_t *c, const ax_json *arr, const char *mp) {
    AX_CHECK(alloc_entries(arr, "shards", sizeof *c->shards, mp, (void **)&c->shards));
    for (size_t i = 0; i < arr->n; i++) {
        const ax_json *o = arr->items[i];
        shard_info *s = &c->shards[i];
        ax_status st = AX_OK;
        AX_CHECK(entry_object(arr, "shards", i, mp));
        const ax_json *blob = mget(o, "blob", AX_JSON_STR, mp, &st);
        const ax_json *file = mget(o, "file", AX_JSON_STR, mp, &st);
        s->offset = mget_int(o, "offset", mp, &st);
        s->count = mget_int(o, "count", mp, &st);
        int64_t bytes = mget_int(o, "bytes", mp, &st);
        s->zbytes = (uint64_t)mget_int(o, "zbytes", mp, &st);
        if (st != AX_OK) return st;
        if (ax_json_get_hex64(o, "xxh3", mp, &s->xxh) != AX_OK) return AX_ERR_CORRUPT;
        if (!plain_file_name(file->str) || strlen(file->str) != file->str_len ||
            strlen(blob->str) != blob->str_len || s->count > CKPT_COUNT_MAX / 4 ||
            bytes != s->count * (int64_t)sizeof(float) || s->offset > CKPT_COUNT_MAX - s->count)
            return ax_errorf(AX_ERR_CORRUPT, "%s: shard \"%s\" has a bad file name or size; %s", mp,
                             file->str, DAMAGED);
        s->blob = blob->str;
        size_t n = strlen(c->path) + strlen(file->str) + 2;
        if (!(s->path = malloc(n))) return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", mp);
        snprintf(s->path, n, "%s/%s", c->path, file->str);
        c->n_shards = (int)i + 1;
        /* a blob's shards are listed in order and tile it from 0 without gaps */
        const shard_info *prev = NULL;
        for (size_t j = i; j-- > 0;)
            if (!strcmp(c->shards[j].blob, s->blob)) {
                prev = &c->shards[j];
                break;
            }
        int64_t want = prev ? prev->offset + prev->count : 0;
        if (s->offset != want || (prev && prev != &c->shards[i - 1]))
            return ax_errorf(AX_ERR_CORRUPT, "%s: shard %s starts at %lld, expected %lld; %s", mp,
                             s->path, (long long)s->offset, (long long)want, DAMAGED);
        struct stat sb;
        if (stat(s->path, &sb) != 0)
            return ax_errorf(AX_ERR_CORRUPT, "checkpoint shard %s is missing (%s); %s", s->path,
                             strerror(errno), DAMAGED);
        if (!S_ISREG(sb.st_mode)) /* a FIFO here would block the read forever */
            return ax_errorf(AX_ERR_CORRUPT, "checkpoint shard %s is not a regular file; %s",
                             s->path, DAMAGED);
        if ((uint64_t)sb.st_size != s->zbytes)
            return ax_errorf(AX_ERR_CORRUPT,
                             "checkpoint shard %s is %lld bytes, the manifest says %llu "
                             "(truncated?); %s",
                             s->path, (long long)sb.st_size, (unsigned long long)s->zbytes,
                             DAMAGED);
    }
    return AX_OK;
}

/* A step-NNNNNN folder holds the manifest of step NNNNNN: a manifest edited to another step
 * would make a resumed run skip or replay steps. Folders named otherwise (a copy kept under
 * another name) are not checked. */
static ax_status check_step_folder(const ax_ckpt_t *c, const char *mp) {
    const char *base = strrchr(c->path, '/');
    long named = parse_step_name(base ? base + 1 : c->path);
    if (named < 0 || named == c->step) return AX_OK;
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s: \"step\" is %ld but the folder is step-%06ld; the manifest was edited or "
                     "the folder renamed: restore it, or move %s aside and resume from the "
                     "checkpoint before it",
                     mp, c->step, named, c->path);
}

static ax_status open_manifest(ax_ckpt_t *c) {
    size_t n = strlen(c->path) + 32;
    char *mp = malloc(n);
    if (!mp) return ax_errorf(AX_ERR_NOMEM, "out of memory opening %s", c->path);
    snprintf(mp, n, "%s/manifest.json", c->path);
    ax_status st = AX_OK;
    char *text = NULL;
    size_t len = 0;
    struct stat sb;
    if (stat(c->path, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        st = ax_errorf(AX_ERR_IO,
                       "checkpoint %s not found; check the path (see the step-NNNNNN "
                       "directories in the checkpoint directory)",
                       c->path);
        goto done;
    }
    if (stat(mp, &sb) != 0) {
        st = ax_errorf(AX_ERR_IO, "%s is missing: not a finished checkpoint; %s", mp, DAMAGED);
        goto done;
    }
    AX_CHECK_GOTO(ax_read_file_max(mp, CKPT_MANIFEST_MAX, &text, &len), done);
    AX_CHECK_GOTO(ax_json_parse_advice(text, len, mp, DAMAGED, &c->root), done);
    const ax_json *r = c->root;
    if (r->type != AX_JSON_OBJ) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s is not a JSON object; %s", mp, DAMAGED);
        goto done;
    }
    const ax_json *fmt = mget(r, "format", AX_JSON_STR, mp, &st);
    if (st == AX_OK && strcmp(fmt->str, CKPT_FORMAT) != 0) {
        st = ax_errorf(AX_ERR_CORRUPT, "%s: format is \"%s\", not \"%s\": not an axmem checkpoint",
                       mp, fmt->str, CKPT_FORMAT);
        goto done;
    }
    int64_t ver = mget_int(r, "version", mp, &st);
    if (st == AX_OK && ver != CKPT_VERSION) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: checkpoint version %lld, this axmem reads version %d; use the axmem "
                       "that wrote it",
                       mp, (long long)ver, CKPT_VERSION);
        goto done;
    }
    c->step = (long)mget_int(r, "step", mp, &st);
    AX_CHECK_GOTO(st, done);
    AX_CHECK_GOTO(check_step_folder(c, mp), done);
    const ax_json *grid = mget(r, "grid", AX_JSON_STR, mp, &st);
    c->config = mget(r, "config", AX_JSON_OBJ, mp, &st);
    c->state = mget(r, "state", AX_JSON_OBJ, mp, &st);
    const ax_json *tensors = mget(r, "tensors", AX_JSON_ARR, mp, &st);
    const ax_json *shards = mget(r, "shards", AX_JSON_ARR, mp, &st);
    if (st != AX_OK) goto done;
    c->grid = grid->str;
    AX_CHECK_GOTO(parse_tensors(c, tensors, mp), done);
    AX_CHECK_GOTO(parse_shards(c, shards, mp), done);
done:
    free(text);
    free(mp);
    return st;
}

ax_status ax_ckpt_open(const char *step_dir, ax_ckpt_t **out) {
    *out = NULL;
    ax_ckpt_t *c = calloc(1, sizeof *c);
    if (!c || !(c->path = strdup(step_dir))) {
        free(c);
        return ax_errorf(AX_ERR_NOMEM, "out of memory opening checkpoint %s", step_dir);
    }
    size_t n = strlen(c->path);
    while (n > 1 && c->path[n - 1] == '/') c->path[--n] = 0;
    ax_status st = open_manifest(c);
    if (st != AX_OK) {
        ax_ckpt_free(c);
        return st;
    }
    *out = c;
    return AX_OK;
}

void ax_ckpt_free(ax_ckpt_t *c) {
    if (!c) return;
    for (int i = 0; i < c->n_shards; i++) free(c->shards[i].path);
    free(c->shards);
    free(c->tensors);
    ax_json_free(c->root);
    free(c->path);
    free(c);
}

long ax_ckpt_step(const ax_ckpt_t *c) {
    return c->step;
}
const char *ax_ckpt_path(const ax_ckpt_t *c) {
    return c->path;
}
const ax_json *ax_ckpt_config(const ax_ckpt_t *c) {
    return c->config;
}
const ax_json *ax_ckpt_state(const ax_ckpt_t *c) {
    return c->state;
}
const char *ax_ckpt_grid(const ax_ckpt_t *c) {
    return c->grid;
}
int ax_ckpt_n_tensors(const ax_ckpt_t *c) {
    return c->n_tensors;
}
const ax_tensor_info *ax_ckpt_tensor(const ax_ckpt_t *c, int i) {
    return i >= 0 && i < c->n_tensors ? &c->tensors[i] : NULL;
}

int64_t ax_ckpt_blob_count(const ax_ckpt_t *c, const char *blob) {
    int64_t n = -1;
    for (int i = 0; i < c->n_shards; i++)
        if (!strcmp(c->shards[i].blob, blob)) n = c->shards[i].offset + c->shards[i].count;
    return n;
}

/* Streams one shard through zstd and XXH3, copying raw bytes [lo, hi) to dst. The whole shard
 * is decoded even for a small range: the checksum covers all of it. */
static ax_status read_shard(ZSTD_DCtx *dz, const shard_info *s, size_t lo, size_t hi, char *dst) {
    ax_status st = AX_OK;
    size_t bytes = (size_t)s->count * sizeof(float);
    size_t icap = ZSTD_DStreamInSize(), ocap = ZSTD_DStreamOutSize();
    char *ib = malloc(icap), *ob = malloc(ocap);
    XXH3_state_t *h = XXH3_createState();
    int fd = -1;
    if (!ib || !ob || !h) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", s->path);
        goto done;
    }
    AX_CHECK_GOTO(ax_open_regular(s->path, DAMAGED, &fd), done);
    XXH3_64bits_reset(h);
    ZSTD_DCtx_reset(dz, ZSTD_reset_session_only);
    size_t pos = 0, last = 1;
    uint64_t zin = 0;
    int ended = 0;
    for (;;) {
        ssize_t r = read(fd, ib, icap);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            st = ax_errorf(AX_ERR_IO, "cannot read checkpoint shard %s: %s; %s", s->path,
                           strerror(errno), DAMAGED);
            goto done;
        }
        if (r == 0) break;
        zin += (uint64_t)r;
        ZSTD_inBuffer in = {ib, (size_t)r, 0};
        for (;;) {
            if (ended && in.pos < in.size) {
                st = ax_errorf(AX_ERR_CORRUPT, "checkpoint shard %s has data after its end; %s",
                               s->path, DAMAGED);
                goto done;
            }
            ZSTD_outBuffer out = {ob, ocap, 0};
            last = ZSTD_decompressStream(dz, &out, &in);
            if (ZSTD_isError(last)) {
                st = ax_errorf(AX_ERR_CORRUPT, "checkpoint shard %s does not decompress (%s); %s",
                               s->path, ZSTD_getErrorName(last), DAMAGED);
                goto done;
            }
            if (pos + out.pos > bytes) {
                st = ax_errorf(AX_ERR_CORRUPT, "checkpoint shard %s holds more than %zu bytes; %s",
                               s->path, bytes, DAMAGED);
                goto done;
            }
            XXH3_64bits_update(h, ob, out.pos);
            size_t a = pos > lo ? pos : lo, b = pos + out.pos < hi ? pos + out.pos : hi;
            if (a < b) memcpy(dst + (a - lo), ob + (a - pos), b - a);
            pos += out.pos;
            if (last == 0) ended = 1;
            /* a full output buffer may hide more output: call again before reading more */
            if (in.pos == in.size && out.pos < ocap) break;
        }
    }
    if (!ended || pos != bytes || zin != s->zbytes) {
        st = ax_errorf(AX_ERR_CORRUPT,
                       "checkpoint shard %s is truncated (%zu of %zu bytes decoded); %s", s->path,
                       pos, bytes, DAMAGED);
        goto done;
    }
    uint64_t got = XXH3_64bits_digest(h);
    if (got != s->xxh)
        st = ax_errorf(AX_ERR_CORRUPT,
                       "checkpoint shard %s fails its checksum (XXH3 0x%016llx, manifest "
                       "0x%016llx); %s",
                       s->path, (unsigned long long)got, (unsigned long long)s->xxh, DAMAGED);
done:
    if (fd >= 0) close(fd);
    XXH3_freeState(h);
    free(ib);
    free(ob);
    return st;
}

ax_status ax_ckpt_read_blob(const ax_ckpt_t *c, const char *blob, int64_t offset, int64_t count,
                            float *dst) {
    int64_t total = ax_ckpt_blob_count(c, blob);
    if (total < 0)
        return ax_errorf(AX_ERR_MISMATCH,
                         "checkpoint %s has no blob \"%s\"; it was written by a different setup "
                         "(optimizer or model); start from a matching checkpoint",
                         c->path, blob);
    if (offset < 0 || count < 0 || offset > total || count > total - offset)
        return ax_errorf(AX_ERR_ARG,
                         "reading %lld floats from %lld of blob \"%s\" in %s, which holds %lld "
                         "floats (a bug in the caller)",
                         (long long)count, (long long)offset, blob, c->path, (long long)total);
    ZSTD_DCtx *dz = ZSTD_createDCtx();
    if (!dz) return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", c->path);
    ax_status st = AX_OK;
    int64_t end = offset + count;
    for (int i = 0; i < c->n_shards && st == AX_OK; i++) {
        const shard_info *s = &c->shards[i];
        if (strcmp(s->blob, blob) != 0) continue;
        int64_t a = s->offset > offset ? s->offset : offset;
        int64_t b = s->offset + s->count < end ? s->offset + s->count : end;
        if (a >= b) continue;
        st = read_shard(dz, s, (size_t)(a - s->offset) * sizeof(float),
                        (size_t)(b - s->offset) * sizeof(float), (char *)(dst + (a - offset)));
    }
    ZSTD_freeDCtx(dz);
    if (st != AX_OK) return st;
    /* the shards' checksums say the bytes are the ones written, not that they are numbers */
    char where[4200];
    snprintf(where, sizeof where, "checkpoint %s", c->path);
    return check_finite(where, blob, dst, offset, count, c->tensors, c->n_tensors,
                        "it cannot be used (the run diverged, or it was damaged before its "
                        "checksums were taken): use an earlier checkpoint");
}
