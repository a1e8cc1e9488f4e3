/* The samples file a scan JSON records (memscan/scan_out.h): its name, size, line count and
 * XXH3. A samples file that another scan overwrote, or that a full disk cut short, does not
 * match and is refused with a message naming both files. */
#include "lib/core/fsutil.h"
#include "reports/model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

ax_status ax_rep_samples_rec_read(ax_arena *a, const ax_json *scan, const char *scan_path,
                                  ax_rep_samples_rec *rec) {
    memset(rec, 0, sizeof *rec);
    const ax_json *o = ax_json_get(scan, "samples");
    if (!o) return AX_OK; /* written before scans recorded their samples */
    if (o->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: samples is not an object", scan_path);
    const char *file;
    AX_CHECK(ax_json_get_str(o, "file", scan_path, &file));
    if (!file[0] || strlen(file) != ax_json_get(o, "file")->str_len)
        return ax_errorf(AX_ERR_CORRUPT, "%s: samples.file is not a file name", scan_path);
    AX_CHECK(ax_rep_check_int(ax_json_get(o, "bytes"), 0, AX_REP_MAX_COUNT, scan_path,
                              "samples.bytes", &rec->bytes));
    AX_CHECK(ax_rep_check_int(ax_json_get(o, "lines"), 0, rec->bytes, scan_path, "samples.lines",
                              &rec->lines));
    AX_CHECK(ax_json_get_hex64(o, "xxh3", scan_path, &rec->xxh3));
    /* a relative name is relative to the scan JSON's folder */
    char dir[4096];
    ax_dirname(scan_path, dir, sizeof dir);
    rec->path =
        ax_arena_printf(a, "%s%s%s", file[0] == '/' ? "" : dir, file[0] == '/' ? "" : "/", file);
    return AX_OK;
}

ax_status ax_rep_samples_rec_verify(const ax_rep_samples_rec *rec, const char *scan_path) {
    struct stat sb;
    if (stat(rec->path, &sb) != 0)
        return ax_errorf(AX_ERR_IO,
                         "%s: its samples file %s cannot be read (%s); restore it next to the "
                         "scan, or rerun the scan",
                         scan_path, rec->path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return ax_errorf(AX_ERR_IO, "%s: its samples file %s is not a regular file", scan_path,
                         rec->path);
    uint64_t h = 0, lines = 0, bytes = (uint64_t)sb.st_size;
    if (bytes == (uint64_t)rec->bytes) { /* only then is hashing worth it */
        FILE *f = fopen(rec->path, "r");
        XXH3_state_t *x = XXH3_createState();
        char buf[1 << 16];
        size_t got;
        if (!f || !x) {
            if (f) fclose(f);
            XXH3_freeState(x);
            return ax_errorf(AX_ERR_IO, "cannot read %s", rec->path);
        }
        XXH3_64bits_reset(x);
        bytes = 0;
        while ((got = fread(buf, 1, sizeof buf, f)) > 0) {
            XXH3_64bits_update(x, buf, got);
            for (size_t i = 0; i < got; i++) lines += buf[i] == '\n';
            bytes += got;
        }
        int err = ferror(f);
        fclose(f);
        h = XXH3_64bits_digest(x);
        XXH3_freeState(x);
        if (err) return ax_errorf(AX_ERR_IO, "read error in %s", rec->path);
        if (bytes == (uint64_t)rec->bytes && lines == (uint64_t)rec->lines && h == rec->xxh3)
            return AX_OK;
    }
    return ax_errorf(AX_ERR_MISMATCH,
                     "%s does not belong to %s: the scan recorded %lld bytes, %lld lines, xxh3 "
                     "0x%016llx, the file has %llu bytes%s; another scan overwrote it or a write "
                     "was cut short: rerun the scan",
                     rec->path, scan_path, (long long)rec->bytes, (long long)rec->lines,
                     (unsigned long long)rec->xxh3, (unsigned long long)bytes,
                     bytes == (uint64_t)rec->bytes ? " and other content" : "");
}
