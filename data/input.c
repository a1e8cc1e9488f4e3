#include "data/input.h"
#include "data/pretok.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BLOCK (8u << 20) /* piece size for whole-file documents */

struct ax_input {
    const char *const *paths;
    int n_paths, split_lines;
    uint64_t total, done; /* bytes */
    int cur;              /* index of the open file, -1 before the first */
    FILE *f;
    int jsonl;
    uint64_t line_no;
    char *line; /* getline buffer */
    size_t line_cap;
    ax_json *doc; /* JSONL: the record whose text was last returned */
    /* whole-file mode: buf[0..len) read so far, piece handed out up to `cut` */
    uint8_t *buf;
    size_t len, cap, cut;
    int file_eof;
    char what[1100];
};

static int ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

ax_status ax_input_open(const char *const *paths, int n_paths, int split_lines, ax_input_t **out) {
    *out = NULL;
    if (n_paths <= 0) return ax_errorf(AX_ERR_ARG, "no input files; pass --input FILE...");
    uint64_t total = 0;
    for (int i = 0; i < n_paths; i++) {
        struct stat sb;
        FILE *f;
        AX_CHECK(ax_fopen_regular(paths[i], "pass text or .jsonl files", &f));
        if (fstat(fileno(f), &sb) != 0) {
            fclose(f);
            return ax_errorf(AX_ERR_IO, "%s: cannot read input: %s", paths[i], strerror(errno));
        }
        fclose(f);
        total += (uint64_t)sb.st_size;
    }
    ax_input_t *in = calloc(1, sizeof *in);
    if (!in) return ax_errorf(AX_ERR_NOMEM, "out of memory opening inputs");
    in->paths = paths;
    in->n_paths = n_paths;
    in->split_lines = split_lines;
    in->total = total;
    in->cur = -1;
    *out = in;
    return AX_OK;
}

void ax_input_free(ax_input_t *in) {
    if (!in) return;
    if (in->f) fclose(in->f);
    free(in->line);
    free(in->buf);
    ax_json_free(in->doc);
    free(in);
}

uint64_t ax_input_bytes_read(const ax_input_t *in) {
    return in->done;
}
uint64_t ax_input_bytes_total(const ax_input_t *in) {
    return in->total;
}

static ax_status open_next(ax_input_t *in) {
    in->cur++;
    const char *path = in->paths[in->cur];
    /* opened again: it may have been replaced (by a FIFO, say) since ax_input_open */
    AX_CHECK(ax_fopen_regular(path, "pass text or .jsonl files", &in->f));
    in->jsonl = ends_with(path, ".jsonl");
    in->line_no = 0;
    in->len = in->cut = 0;
    in->file_eof = 0;
    return AX_OK;
}

static ax_status read_error(ax_input_t *in) {
    return ax_errorf(AX_ERR_IO, "%s: read failed: %s", in->paths[in->cur], strerror(errno));
}

/* whole-file document: hand out pieces cut at the last safe split of each block */
static ax_status next_block(ax_input_t *in, const uint8_t **p, size_t *n, int *doc_end) {
    /* drop what was handed out last time */
    if (in->cut) memmove(in->buf, in->buf + in->cut, in->len - in->cut);
    in->len -= in->cut;
    in->cut = 0;
    for (;;) {
        if (!in->file_eof && in->len < BLOCK) {
            if (in->cap < in->len + BLOCK) {
                size_t nc = in->len + BLOCK;
                uint8_t *nb = realloc(in->buf, nc);
                if (!nb)
                    return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", in->paths[in->cur]);
                in->buf = nb;
                in->cap = nc;
            }
            size_t got = fread(in->buf + in->len, 1, BLOCK, in->f);
            if (got < BLOCK) {
                if (ferror(in->f)) return read_error(in);
                in->file_eof = 1;
            }
            in->len += got;
            in->done += got;
        }
        if (in->file_eof) {
            in->cut = in->len;
            *doc_end = 1;
            break;
        }
        size_t k = in->len;
        while (k > 1 && !ax_pretok_safe_split(in->buf, in->len, k - 1)) k--;
        if (k > 1) {
            in->cut = k - 1;
            *doc_end = 0;
            break;
        }
        /* no safe cut in the whole buffer (one giant chunk): read on */
        if (in->len >= in->cap - BLOCK / 2) {
            size_t nc = in->cap * 2;
            uint8_t *nb = realloc(in->buf, nc);
            if (!nb) return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", in->paths[in->cur]);
            in->buf = nb;
            in->cap = nc;
        }
        size_t got = fread(in->buf + in->len, 1, in->cap - in->len, in->f);
        if (got == 0) {
            if (ferror(in->f)) return read_error(in);
            in->file_eof = 1;
        }
        in->len += got;
        in->done += got;
    }
    *p = in->buf;
    *n = in->cut;
    return AX_OK;
}

static int blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n') return 0;
    return 1;
}

ax_status ax_input_next(ax_input_t *in, const uint8_t **p, size_t *n, int *doc_end, int *eof) {
    *p = NULL;
    *n = 0;
    *doc_end = 0;
    *eof = 0;
    ax_json_free(in->doc);
    in->doc = NULL;
    for (;;) {
        if (!in->f) {
            if (in->cur + 1 >= in->n_paths) {
                *eof = 1;
                return AX_OK;
            }
            AX_CHECK(open_next(in));
        }
        if (!in->jsonl && !in->split_lines) {
            if (in->file_eof && in->cut == in->len) { /* document finished */
                fclose(in->f);
                in->f = NULL;
                continue;
            }
            return next_block(in, p, n, doc_end);
        }
        errno = 0;
        ssize_t got = getline(&in->line, &in->line_cap, in->f);
        if (got < 0) {
            if (ferror(in->f)) return read_error(in);
            fclose(in->f);
            in->f = NULL;
            continue;
        }
        in->done += (uint64_t)got;
        in->line_no++;
        size_t len = (size_t)got;
        if (len && in->line[len - 1] == '\n') len--;
        if (!in->jsonl) {
            if (len == 0) continue;
            *p = (const uint8_t *)in->line;
            *n = len;
            *doc_end = 1;
            return AX_OK;
        }
        if (blank(in->line, len)) continue;
        snprintf(in->what, sizeof in->what, "%s:%llu", in->paths[in->cur],
                 (unsigned long long)in->line_no);
        AX_CHECK(ax_json_parse(in->line, len, in->what, &in->doc));
        const ax_json *text = ax_json_get(in->doc, "text");
        if (in->doc->type != AX_JSON_OBJ || !text || text->type != AX_JSON_STR)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: expected a JSON object with a \"text\" string (one document "
                             "per line); fix that line or convert the file",
                             in->what);
        *p = (const uint8_t *)text->str;
        *n = text->str_len;
        *doc_end = 1;
        return AX_OK;
    }
}
