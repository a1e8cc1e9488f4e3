/* libFuzzer target: corpus input (data/input.c) through its decompressors. Input: one byte
 * choosing the file name (x.jsonl.zst, x.jsonl.gz, x.txt.zst, x.txt.gz, x.jsonl), then the
 * file's bytes. Every piece must be readable in full, and a failure must say why. */
#include "data/input.h"
#include "fuzz_util.h"

#include <zlib.h>
#include <zstd.h>

static const char *names[] = {"x.jsonl.zst", "x.jsonl.gz", "x.txt.zst", "x.txt.gz", "x.jsonl"};

static void seed_file(const char *name, uint8_t kind, const void *data, size_t n) {
    uint8_t buf[4096];
    buf[0] = kind;
    memcpy(buf + 1, data, n);
    fz_write_seed(name, buf, 1 + n);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (fz_seed_dir()) {
        const char *text = "{\"text\": \"caf\\u00e9 one\"}\n\n{\"text\": \"two\\nlines\"}\n";
        size_t n = strlen(text);
        uint8_t z[1024];
        size_t zn = ZSTD_compress(z, sizeof z, text, n, 3);
        if (ZSTD_isError(zn)) abort();
        seed_file("zst", 0, z, zn);
        seed_file("txtzst", 2, z, zn);
        /* two frames: the stream continues across them */
        size_t zn2 = ZSTD_compress(z + zn, sizeof z - zn, text, n, 1);
        if (ZSTD_isError(zn2)) abort();
        seed_file("zst2", 0, z, zn + zn2);
        z_stream s;
        memset(&s, 0, sizeof s);
        if (deflateInit2(&s, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) abort();
        s.next_in = (Bytef *)text;
        s.avail_in = (uInt)n;
        s.next_out = z;
        s.avail_out = sizeof z;
        if (deflate(&s, Z_FINISH) != Z_STREAM_END) abort();
        size_t gn = sizeof z - s.avail_out;
        deflateEnd(&s);
        seed_file("gz", 1, z, gn);
        seed_file("txtgz", 3, z, gn);
        seed_file("plain", 4, text, n);
        exit(0);
    }
    fz_init("input");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    char path[512];
    fz_path(path, sizeof path, names[data[0] % (sizeof names / sizeof *names)]);
    fz_write(path, data + 1, size - 1);
    ax_error_clear();
    ax_input_t *in;
    const char *p0 = path;
    if (ax_input_open(&p0, 1, 0, &in) != AX_OK) abort();
    for (int guard = 0;; guard++) {
        const uint8_t *p;
        size_t n;
        int end, eof;
        ax_status st = ax_input_next(in, &p, &n, &end, &eof);
        fz_note("input", st);
        if (st != AX_OK) {
            if (!ax_error_msg()[0]) abort();
            break;
        }
        if (eof) break;
        volatile uint8_t sink = 0;
        for (size_t i = 0; i < n; i++) sink ^= p[i]; /* every byte handed out is readable */
        (void)sink;
        if (guard > 1 << 20) abort(); /* a reader that never ends */
    }
    if (ax_input_bytes_read(in) > ax_input_bytes_total(in)) abort();
    ax_input_free(in);
    ax_error_clear();
    return 0;
}
