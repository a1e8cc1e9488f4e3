#include "memscan/scan_out.h"
#include "lib/core/fsutil.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

void ax_ms_scan_header(ax_jw *w, const char *kind, const ax_ckpt_t *ck, const char *ds_path,
                       uint64_t ds_checksum, uint64_t docs, uint64_t tokens) {
    const ax_json *gf = ax_json_get(ax_ckpt_config(ck), "goldfish");
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ds_checksum);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "schema"), ax_jw_str(w, "axmem-scan");
    ax_jw_key(w, "version"), ax_jw_int(w, 1);
    ax_jw_key(w, "kind"), ax_jw_str(w, kind);
    ax_jw_key(w, "checkpoint");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, ax_ckpt_path(ck));
    ax_jw_key(w, "step"), ax_jw_int(w, ax_ckpt_step(ck));
    ax_jw_key(w, "goldfish"), ax_jw_str(w, gf && gf->type == AX_JSON_STR ? gf->str : "none");
    ax_jw_obj_end(w);
    ax_jw_key(w, "dataset");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, ds_path);
    ax_jw_key(w, "xxh3"), ax_jw_str(w, hex);
    ax_jw_key(w, "docs"), ax_jw_uint(w, docs);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, tokens);
    ax_jw_obj_end(w);
}

void ax_ms_text_field(ax_jw *w, const char *key, const ax_tokenizer_t *tok, const int32_t *ids,
                      size_t n) {
    uint8_t *bytes = NULL;
    size_t len = 0, off = 0;
    if (!tok || ax_tokenizer_decode(tok, ids, n, &bytes, &len) != AX_OK) return;
    len = ax_utf8_clip((const char *)bytes, len, &off);
    ax_jw_key(w, key), ax_jw_strn(w, (const char *)bytes + off, len);
    free(bytes);
}

void ax_ms_json_ids(ax_jw *w, const char *key, const int32_t *ids, size_t n) {
    ax_jw_key(w, key);
    ax_jw_arr_begin(w);
    for (size_t i = 0; i < n; i++) ax_jw_int(w, ids[i]);
    ax_jw_arr_end(w);
}

void ax_ms_json_pair(ax_jw *w, const char *key, double a, double b) {
    if (key) ax_jw_key(w, key);
    ax_jw_arr_begin(w);
    ax_jw_num(w, a), ax_jw_num(w, b);
    ax_jw_arr_end(w);
}

void ax_ms_samples_path(const char *explicit_path, const char *out, char *dst, size_t n) {
    if (explicit_path[0]) {
        snprintf(dst, n, "%s", explicit_path);
        return;
    }
    size_t len = strlen(out);
    if (len > 5 && !strcmp(out + len - 5, ".json")) len -= 5;
    snprintf(dst, n, "%.*s.samples.jsonl", (int)len, out);
}

/* ---------------------------------------------------------------- the atomic writer */

static ax_status too_long(const char *flag, const char *path) {
    return ax_errorf(AX_ERR_ARG, "%s %s: path is too long", flag, path);
}

/* the samples file's name as the scan JSON records it (see samples_name in the header) */
static ax_status record_name(ax_ms_scan_out *so) {
    char sd[AX_MS_PATH_MAX], dd[AX_MS_PATH_MAX], real[PATH_MAX];
    const char *slash = strrchr(so->samples, '/'), *base = slash ? slash + 1 : so->samples;
    ax_dirname(so->scan, sd, sizeof sd);
    ax_dirname(so->samples, dd, sizeof dd);
    int len;
    if (!strcmp(sd, dd))
        len = snprintf(so->samples_name, sizeof so->samples_name, "%s", base);
    else if (so->samples[0] == '/')
        len = snprintf(so->samples_name, sizeof so->samples_name, "%s", so->samples);
    else if (realpath(dd, real))
        len = snprintf(so->samples_name, sizeof so->samples_name, "%s/%s", real, base);
    else
        return ax_errorf(AX_ERR_IO, "--samples-out %s: cannot resolve its folder: %s", so->samples,
                         strerror(errno));
    return len < (int)sizeof so->samples_name ? AX_OK : too_long("--samples-out", so->samples);
}

ax_status ax_ms_scan_out_prepare(const char *out, const char *samples_out) {
    char samples[AX_MS_PATH_MAX], dir[AX_MS_PATH_MAX];
    if (strlen(out) >= sizeof samples) return too_long("--out", out);
    ax_ms_samples_path(samples_out, out, samples, sizeof samples);
    if (strlen(samples) + 1 >= sizeof samples) return too_long("--samples-out", samples);
    ax_dirname(out, dir, sizeof dir);
    AX_CHECK(ax_mkdir_p(dir));
    ax_dirname(samples, dir, sizeof dir);
    return ax_mkdir_p(dir);
}

ax_status ax_ms_scan_out_open(ax_ms_scan_out *so, const char *out, const char *samples_out) {
    memset(so, 0, sizeof *so);
    AX_CHECK(ax_ms_scan_out_prepare(out, samples_out));
    if (strlen(out) >= sizeof so->scan) return too_long("--out", out);
    snprintf(so->scan, sizeof so->scan, "%s", out);
    ax_ms_samples_path(samples_out, out, so->samples, sizeof so->samples);
    if (strlen(so->samples) + 1 >= sizeof so->samples)
        return too_long("--samples-out", so->samples);
    if (!strcmp(so->samples, so->scan))
        return ax_errorf(AX_ERR_ARG,
                         "--samples-out %s is the same file as --out; give it its own "
                         "name",
                         so->samples);
    AX_CHECK(record_name(so));
    int fd;
    AX_CHECK(ax_create_temp(so->samples, 1, so->samples_tmp, sizeof so->samples_tmp, &fd));
    so->f = fdopen(fd, "w");
    so->hash = XXH3_createState();
    if (!so->f || !so->hash) {
        if (!so->f) close(fd);
        ax_ms_scan_out_close(so);
        return ax_errorf(AX_ERR_NOMEM, "out of memory opening %s", so->samples);
    }
    XXH3_64bits_reset(so->hash);
    return AX_OK;
}

ax_status ax_ms_scan_out_line(ax_ms_scan_out *so, const ax_jw *row) {
    const char *text = ax_jw_text(row);
    if (!text) return ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", so->samples);
    size_t n = strlen(text);
    if (fwrite(text, 1, n, so->f) != n || fputc('\n', so->f) == EOF)
        return ax_errorf(AX_ERR_IO, "cannot write %s: %s; check free disk space", so->samples,
                         strerror(errno));
    XXH3_64bits_update(so->hash, text, n);
    XXH3_64bits_update(so->hash, "\n", 1);
    so->bytes += n + 1, so->lines++;
    return AX_OK;
}

void ax_ms_scan_out_record(const ax_ms_scan_out *so, ax_jw *w) {
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)XXH3_64bits_digest(so->hash));
    ax_jw_key(w, "samples");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "file"), ax_jw_str(w, so->samples_name);
    ax_jw_key(w, "bytes"), ax_jw_uint(w, so->bytes);
    ax_jw_key(w, "lines"), ax_jw_uint(w, so->lines);
    ax_jw_key(w, "xxh3"), ax_jw_str(w, hex);
    ax_jw_obj_end(w);
}

/* flushes, fsyncs and closes the samples temporary */
static ax_status finish_samples(ax_ms_scan_out *so) {
    FILE *f = so->f;
    so->f = NULL;
    int ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    int e = errno;
    if (fclose(f) != 0 && ok) ok = 0, e = errno;
    return ok ? AX_OK
              : ax_errorf(AX_ERR_IO, "cannot write %s: %s; check free disk space", so->samples,
                          strerror(e));
}

ax_status ax_ms_scan_out_commit(ax_ms_scan_out *so, const ax_jw *scan) {
    const char *text = ax_jw_text(scan);
    if (!text) return ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", so->scan);
    AX_CHECK(finish_samples(so));
    int fd;
    AX_CHECK(ax_create_temp(so->scan, 0, so->scan_tmp, sizeof so->scan_tmp, &fd));
    ax_status st = ax_write_all(fd, text, strlen(text), so->scan);
    if (st == AX_OK) st = ax_write_all(fd, "\n", 1, so->scan);
    if (st == AX_OK && fsync(fd) != 0)
        st = ax_errorf(AX_ERR_IO, "cannot fsync %s: %s", so->scan, strerror(errno));
    if (close(fd) != 0 && st == AX_OK)
        st = ax_errorf(AX_ERR_IO, "cannot write %s: %s", so->scan, strerror(errno));
    AX_CHECK(st);
    /* both files are on disk: retire the old scan first, so no moment shows an old scan JSON
     * beside new samples; the new scan JSON appears last, once its samples are in place */
    char dir[AX_MS_PATH_MAX];
    ax_dirname(so->scan, dir, sizeof dir);
    if (unlink(so->scan) != 0 && errno != ENOENT)
        return ax_errorf(AX_ERR_IO, "cannot replace %s: %s", so->scan, strerror(errno));
    AX_CHECK(ax_fsync_dir(dir));
    AX_CHECK(ax_rename_durable(so->samples_tmp, so->samples));
    so->samples_tmp[0] = 0;
    AX_CHECK(ax_rename_durable(so->scan_tmp, so->scan));
    so->scan_tmp[0] = 0;
    return AX_OK;
}

ax_status ax_ms_scan_out_open_in(ax_ms_scan_out *so, const char *dir, const char *name) {
    char scan[AX_MS_PATH_MAX], samples[AX_MS_PATH_MAX];
    memset(so, 0, sizeof *so);
    AX_CHECK(ax_mkdir_p(dir));
    snprintf(scan, sizeof scan, "%s/%s.json", dir, name);
    snprintf(samples, sizeof samples, "%s/%s.samples.jsonl", dir, name);
    return ax_ms_scan_out_open(so, scan, samples);
}

ax_status ax_ms_scan_out_finish(ax_ms_scan_out *so, ax_jw *w, ax_status st, int *written,
                                char *scan, char *samples) {
    if (st == AX_OK) ax_ms_scan_out_record(so, w);
    ax_jw_obj_end(w);
    if (st == AX_OK) st = ax_ms_scan_out_commit(so, w);
    if (st == AX_OK) {
        *written = 1;
        snprintf(scan, AX_MS_PATH_MAX, "%s", so->scan);
        snprintf(samples, AX_MS_PATH_MAX, "%s", so->samples);
    }
    ax_ms_scan_out_close(so);
    ax_jw_free(w);
    return st;
}

void ax_ms_scan_out_close(ax_ms_scan_out *so) {
    if (so->f) fclose(so->f);
    if (so->samples_tmp[0]) unlink(so->samples_tmp);
    if (so->scan_tmp[0]) unlink(so->scan_tmp);
    if (so->hash) XXH3_freeState(so->hash);
    so->f = NULL, so->hash = NULL, so->samples_tmp[0] = so->scan_tmp[0] = 0;
}
