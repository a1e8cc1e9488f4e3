#include "data/input.h"
#include "data/pretok.h"
#include "lib/core/fsutil.h"
#include "lib/core/grow.h"
#include "lib/core/json.h"
#include "lib/core/status.h"
#include "lib/core/utf8.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zlib.h>
#include <zstd.h>

#define BLOCK (8u << 20)   /* piece size for whole-file documents */
#define ZIN (128u << 10)   /* compressed bytes read at a time */
#define LINE0 (256u << 10) /* first size of the line buffer (grows to the longest line) */
#define REDO "download or compress it again"

typedef enum { SRC_PLAIN, SRC_ZSTD, SRC_GZIP } src_kind;

/* What the text check has seen of the current file's (decompressed) bytes: input is refused
 * when it holds a NUL byte, starts like a known binary format, or is not UTF-8 beyond a small
 * tolerance (TEXT_BAD_MIN ill-formed bytes and more than one in TEXT_BAD_PER) */
#define TEXT_BAD_MIN 8
#define TEXT_BAD_PER 1000
#define TEXT_JUDGE_EARLY (1u << 20) /* judge the share of bad bytes from here on */
typedef struct {
    uint64_t seen, bad, first_bad; /* bytes, ill-formed UTF-8 bytes, where the first was */
    uint8_t need, lo, hi;          /* continuation bytes the open sequence still needs */
    int head_done, ended;
} text_check;

struct ax_input {
    const char *const *paths;
    int n_paths, split_lines;
    uint64_t total, done; /* file bytes (compressed bytes for .zst/.gz) */
    int cur;              /* index of the open file, -1 before the first */
    FILE *f;
    int jsonl;
    src_kind kind;
    /* decompression: zin[zpos..zlen) read from the file, not yet consumed */
    uint8_t *zin;
    size_t zpos, zlen;
    int zin_eof;       /* the file is read to its end */
    uint64_t file_off; /* bytes read from this file */
    ZSTD_DCtx *zd;
    z_stream gz;
    int gz_ready; /* inflateInit2 done */
    int gz_done;  /* the current gzip member ended */
    int mid;      /* inside a zstd frame or gzip member (its end not seen yet) */
    int src_eof;  /* the decompressed stream is finished */
    text_check tc;
    /* line reader over the (decompressed) stream: lb[lstart..llen) buffered, the first
     * lscan bytes of it known to hold no newline */
    uint64_t line_no;
    uint8_t *lb;
    size_t lstart, llen, lcap, lscan;
    ax_json *doc; /* JSONL: the record whose text was last returned */
    /* whole-file mode: buf[0..len) read so far, piece handed out up to `cut` */
    uint8_t *buf;
    size_t len, cap, cut;
    int file_eof;
    char what[1100];
};

static int ends_with_n(const char *s, size_t a, const char *suf) {
    size_t b = strlen(suf);
    return a >= b && !memcmp(s + a - b, suf, b);
}

ax_status ax_input_open(const char *const *paths, int n_paths, int split_lines, ax_input_t **out) {
    *out = NULL;
    if (n_paths <= 0) return ax_errorf(AX_ERR_ARG, "no input files; pass --input FILE...");
    uint64_t total = 0;
    for (int i = 0; i < n_paths; i++) {
        struct stat sb;
        FILE *f;
        AX_CHECK(ax_fopen_regular(paths[i], "pass text or .jsonl files (or .zst/.gz of them)", &f));
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

static void close_file(ax_input_t *in) {
    if (in->f) fclose(in->f);
    in->f = NULL;
    if (in->gz_ready) inflateEnd(&in->gz);
    in->gz_ready = 0;
}

void ax_input_free(ax_input_t *in) {
    if (!in) return;
    close_file(in);
    ZSTD_freeDCtx(in->zd);
    free(in->zin);
    free(in->lb);
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
    AX_CHECK(ax_fopen_regular(path, "pass text or .jsonl files (or .zst/.gz of them)", &in->f));
    size_t n = strlen(path);
    in->kind = SRC_PLAIN;
    if (ends_with_n(path, n, ".zst")) {
        in->kind = SRC_ZSTD;
        n -= 4;
    } else if (ends_with_n(path, n, ".gz")) {
        in->kind = SRC_GZIP;
        n -= 3;
    }
    in->jsonl = ends_with_n(path, n, ".jsonl"); /* judged on the name without the suffix */
    in->line_no = 0;
    in->len = in->cut = 0;
    in->file_eof = 0;
    in->lstart = in->llen = in->lscan = 0;
    in->zpos = in->zlen = 0;
    in->zin_eof = in->mid = in->src_eof = in->gz_done = 0;
    in->file_off = 0;
    memset(&in->tc, 0, sizeof in->tc);
    if (in->kind != SRC_PLAIN && !in->zin && !(in->zin = malloc(ZIN)))
        return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", path);
    if (in->kind == SRC_ZSTD) {
        if (!in->zd && !(in->zd = ZSTD_createDCtx()))
            return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", path);
        ZSTD_DCtx_reset(in->zd, ZSTD_reset_session_only);
    } else if (in->kind == SRC_GZIP) {
        memset(&in->gz, 0, sizeof in->gz);
        /* 15 + 16: gzip wrapper only (a .gz file), the largest window */
        if (inflateInit2(&in->gz, 15 + 16) != Z_OK)
            return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", path);
        in->gz_ready = 1;
    }
    return AX_OK;
}

static ax_status read_error(ax_input_t *in) {
    return ax_errorf(AX_ERR_IO, "%s: read failed: %s", in->paths[in->cur], strerror(errno));
}

/* compressed bytes consumed so far: where a decoding error was found */
static uint64_t z_offset(const ax_input_t *in) {
    return in->file_off - (uint64_t)(in->zlen - in->zpos);
}

/* refills zin when it is used up and the file has more */
static ax_status z_fill(ax_input_t *in) {
    if (in->zpos < in->zlen || in->zin_eof) return AX_OK;
    size_t got = fread(in->zin, 1, ZIN, in->f);
    if (got < ZIN) {
        if (ferror(in->f)) return read_error(in);
        in->zin_eof = 1;
    }
    in->zpos = 0;
    in->zlen = got;
    in->file_off += got;
    in->done += got;
    return AX_OK;
}

/* Up to cap bytes of the decompressed stream into dst; *got = 0 only at its end. Concatenated
 * zstd frames and gzip members are one stream, as `zstd -d` and `gzip -d` treat them. */
static ax_status src_read_raw(ax_input_t *in, uint8_t *dst, size_t cap, size_t *got) {
    *got = 0;
    const char *path = in->paths[in->cur];
    if (in->kind == SRC_PLAIN) {
        size_t k = fread(dst, 1, cap, in->f);
        if (k < cap && ferror(in->f)) return read_error(in);
        in->done += k;
        *got = k;
        return AX_OK;
    }
    for (;;) {
        AX_CHECK(z_fill(in));
        size_t out = 0, zpos0 = in->zpos;
        if (in->kind == SRC_ZSTD) {
            ZSTD_inBuffer ib = {in->zin, in->zlen, in->zpos};
            ZSTD_outBuffer ob = {dst, cap, 0};
            size_t r = ZSTD_decompressStream(in->zd, &ob, &ib);
            in->zpos = ib.pos;
            if (ZSTD_isError(r))
                return ax_errorf(AX_ERR_CORRUPT,
                                 "%s: corrupt zstd data, detected at compressed byte %" PRIu64
                                 " (%s): the file is damaged; " REDO,
                                 path, z_offset(in), ZSTD_getErrorName(r));
            /* 0: a frame ended and was flushed. A call with no input left and nothing to flush
             * returns the size of the next frame's header: no news, so mid stays. */
            if (ib.pos > zpos0 || ob.pos) in->mid = r != 0;
            out = ob.pos;
        } else {
            if (in->gz_done && in->zpos < in->zlen) { /* another member follows */
                if (inflateReset(&in->gz) != Z_OK)
                    return ax_errorf(AX_ERR_CORRUPT, "%s: cannot restart inflate", path);
                in->gz_done = 0;
            }
            if (!in->gz_done && in->zpos < in->zlen) {
                in->gz.next_in = in->zin + in->zpos;
                in->gz.avail_in = (uInt)(in->zlen - in->zpos);
                in->gz.next_out = dst;
                in->gz.avail_out = (uInt)(cap > UINT32_MAX ? UINT32_MAX : cap);
                uInt before = in->gz.avail_out;
                int r = inflate(&in->gz, Z_NO_FLUSH);
                in->zpos = in->zlen - in->gz.avail_in;
                out = before - in->gz.avail_out;
                if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
                    return ax_errorf(AX_ERR_CORRUPT,
                                     "%s: corrupt gzip data, detected at compressed byte %" PRIu64
                                     " (%s): the file is damaged; " REDO,
                                     path, z_offset(in),
                                     in->gz.msg ? in->gz.msg : "inflate failed");
                in->gz_done = r == Z_STREAM_END;
                in->mid = !in->gz_done;
            }
        }
        if (out) {
            *got = out;
            return AX_OK;
        }
        if (in->zpos == zpos0 && in->zpos < in->zlen) /* never expected: no spinning on it */
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: the decoder is stuck at compressed byte %" PRIu64
                             ": the file is damaged; " REDO,
                             path, z_offset(in));
        if (in->zpos == in->zlen && in->zin_eof) {
            if (in->mid)
                return ax_errorf(
                    AX_ERR_CORRUPT,
                    "%s: truncated %s stream: the file ends inside a %s at byte %" PRIu64
                    "; the file is incomplete; " REDO,
                    path, in->kind == SRC_ZSTD ? "zstd" : "gzip",
                    in->kind == SRC_ZSTD ? "frame" : "member", in->file_off);
            return AX_OK; /* the end */
        }
    }
}

/* ---- the text check: binary files are refused, not encoded as one document ---- */

static const char *const NOT_TEXT = "pass text or .jsonl files (or .zst/.gz of them)";

/* Known binary formats by their first bytes: what the file is and what to do with it. */
static ax_status check_head(const ax_input_t *in, const uint8_t *p, size_t n) {
    static const struct {
        const char *magic;
        size_t len;
        int compressed_name; /* only a problem without the .zst/.gz suffix */
        const char *what;
    } known[] = {
        {"AXMEMAXD", 8, 0,
         "an axmem dataset (.axd), already encoded: train on it with --data, or see its text "
         "with `axmem data decode`"},
        {"AXMEMIDX", 8, 0, "a memscan index"},
        {"AXMEMTOK", 8, 0, "an axmem tokenizer file"},
        {"MMIDIDX\0\0", 9, 0,
         "a Megatron dataset index: convert PATH.bin + PATH.idx with `axmem data "
         "import-megatron`"},
        {"\x28\xb5\x2f\xfd", 4, 1, "zstd-compressed: name it with a .zst suffix"},
        {"\x1f\x8b", 2, 1, "gzip-compressed: name it with a .gz suffix"},
        {"\177ELF", 4, 0, "an executable"},
        {"PK\x03\x04", 4, 0, "a zip archive: extract its text files first"},
        {"%PDF-", 5, 0, "a PDF document: extract its text first"},
    };
    for (size_t i = 0; i < sizeof known / sizeof *known; i++) {
        if (n < known[i].len || memcmp(p, known[i].magic, known[i].len)) continue;
        if (known[i].compressed_name && in->kind != SRC_PLAIN) continue;
        return ax_errorf(AX_ERR_CORRUPT, "%s is not text: it is %s; %s", in->paths[in->cur],
                         known[i].what, NOT_TEXT);
    }
    return AX_OK;
}

/* Counts the ill-formed UTF-8 bytes of p[0..n) (Unicode's well-formed sequences: no overlong
 * forms, surrogates or values past U+10FFFF), carrying an open sequence across calls. */
static void utf8_scan(text_check *t, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        while (!t->need && i + 8 <= n) { /* ASCII eight bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (w & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i == n) break;
        uint8_t c = p[i];
        if (t->need) {
            if (c >= t->lo && c <= t->hi) {
                t->need--, t->lo = 0x80, t->hi = 0xbf;
                continue;
            }
            t->need = 0; /* the sequence broke off: its lead is bad, c is judged afresh */
            if (!t->bad++) t->first_bad = t->seen + i;
        }
        int need = ax_utf8_lead(c, &t->lo, &t->hi);
        if (need > 0)
            t->need = (uint8_t)need;
        else if (need < 0 && !t->bad++)
            t->first_bad = t->seen + i;
    }
    t->seen += n;
}

static ax_status judge_utf8(const ax_input_t *in) {
    const text_check *t = &in->tc;
    if (t->bad <= TEXT_BAD_MIN || t->bad * TEXT_BAD_PER <= t->seen) return AX_OK;
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s is not UTF-8 text: %" PRIu64 " of its first %" PRIu64
                     " bytes are not valid UTF-8 (the first at byte %" PRIu64
                     "); convert it to UTF-8 (e.g. iconv -f latin1 -t utf-8), or %s",
                     in->paths[in->cur], t->bad, t->seen, t->first_bad, NOT_TEXT);
}

/* The check of each piece read: the head, NUL bytes, and UTF-8 (judged from 1 MiB on, and at
 * the end); got = 0 is the end of the file's stream. */
static ax_status check_text(ax_input_t *in, const uint8_t *p, size_t got) {
    text_check *t = &in->tc;
    if (!got) {
        if (t->ended) return AX_OK;
        t->ended = 1;
        if (t->need && !t->bad++) t->first_bad = t->seen; /* cut inside a character */
        t->need = 0;
        return judge_utf8(in);
    }
    if (!t->head_done) {
        t->head_done = 1;
        AX_CHECK(check_head(in, p, got));
    }
    const uint8_t *z = memchr(p, 0, got);
    if (z)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s is not text: byte %" PRIu64
                         " is a NUL (a binary file, or text in UTF-16?); %s",
                         in->paths[in->cur], t->seen + (uint64_t)(z - p), NOT_TEXT);
    utf8_scan(t, p, got);
    return t->seen >= TEXT_JUDGE_EARLY ? judge_utf8(in) : AX_OK;
}

static ax_status src_read(ax_input_t *in, uint8_t *dst, size_t cap, size_t *got) {
    AX_CHECK(src_read_raw(in, dst, cap, got));
    return check_text(in, dst, *got);
}

/* fills dst with want bytes unless the stream ends first (*eof = 1 then) */
static ax_status src_read_full(ax_input_t *in, uint8_t *dst, size_t want, size_t *got, int *eof) {
    *got = 0;
    *eof = 0;
    while (*got < want) {
        size_t k;
        AX_CHECK(src_read(in, dst + *got, want - *got, &k));
        if (!k) {
            *eof = 1;
            break;
        }
        *got += k;
    }
    return AX_OK;
}

/* The next line (without its newline) into line and len, valid until the next call; *none = 1 at
 * the end of the stream. The buffer grows to the longest line, as getline's would. */
static ax_status next_line(ax_input_t *in, const char **line, size_t *len, int *none) {
    *none = 0;
    *line = NULL;
    *len = 0;
    if (!in->lb) {
        if (!(in->lb = malloc(LINE0)))
            return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", in->paths[in->cur]);
        in->lcap = LINE0;
    }
    for (;;) {
        uint8_t *s = in->lb + in->lstart;
        size_t avail = in->llen - in->lstart;
        uint8_t *nl = avail > in->lscan ? memchr(s + in->lscan, '\n', avail - in->lscan) : NULL;
        if (nl) {
            *line = (const char *)s;
            *len = (size_t)(nl - s);
            in->lstart += *len + 1;
            in->lscan = 0;
            return AX_OK;
        }
        in->lscan = avail;
        if (in->src_eof) {
            if (!avail) {
                *none = 1;
                return AX_OK;
            }
            *line = (const char *)s; /* a last line without a newline */
            *len = avail;
            in->lstart = in->llen;
            in->lscan = 0;
            return AX_OK;
        }
        if (in->lstart) { /* drop the lines handed out */
            memmove(in->lb, s, avail);
            in->llen = avail;
            in->lstart = 0;
        }
        if (!ax_grow(&in->lb, &in->lcap, in->llen + 1, 1, LINE0))
            return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", in->paths[in->cur]);
        size_t got;
        AX_CHECK(src_read(in, in->lb + in->llen, in->lcap - in->llen, &got));
        if (!got) in->src_eof = 1;
        in->llen += got;
    }
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
            size_t got;
            AX_CHECK(src_read_full(in, in->buf + in->len, BLOCK, &got, &in->file_eof));
            in->len += got;
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
        if (in->len >= in->cap - BLOCK / 2 && !ax_grow(&in->buf, &in->cap, in->cap + 1, 1, 0))
            return ax_errorf(AX_ERR_NOMEM, "out of memory reading %s", in->paths[in->cur]);
        size_t got;
        AX_CHECK(src_read_full(in, in->buf + in->len, in->cap - in->len, &got, &in->file_eof));
        in->len += got;
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
                close_file(in);
                continue;
            }
            return next_block(in, p, n, doc_end);
        }
        const char *line;
        size_t len;
        int none;
        AX_CHECK(next_line(in, &line, &len, &none));
        if (none) {
            close_file(in);
            continue;
        }
        in->line_no++;
        if (!in->jsonl) {
            if (len == 0) continue;
            *p = (const uint8_t *)line;
            *n = len;
            *doc_end = 1;
            return AX_OK;
        }
        if (blank(line, len)) continue;
        snprintf(in->what, sizeof in->what, "%s:%llu", in->paths[in->cur],
                 (unsigned long long)in->line_no);
        AX_CHECK(ax_json_parse(line, len, in->what, &in->doc));
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
