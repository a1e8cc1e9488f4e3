#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/ckpt/ckpt.h"
#include "lib/core/fsutil.h"
#include "lib/model/model_io.h"
#include "test_ckpt_poison.h"

#define N 1000

static char g_dir[64];
static float g_p[N], g_m[N];

static void setup(void) {
    snprintf(g_dir, sizeof g_dir, "/tmp/axckpt-XXXXXX");
    cr_assert_not_null(mkdtemp(g_dir));
    for (int i = 0; i < N; i++) {
        g_p[i] = (float)i * 0.25f - 7.0f;
        g_m[i] = 1.0f / (float)(i + 1);
    }
    ax_ckpt_set_shard_bytes(100 * sizeof(float)); /* 10 shards per blob */
    ax_error_clear();
}

static void teardown(void) {
    ax_rm_rf(g_dir);
}

static const ax_tensor_info g_tensors[2] = {
    {"wte", 2, {25, 20, 0, 0}, 0, 500},
    {"ln.w", 1, {500, 0, 0, 0}, 500, 500},
};

static ax_status write_step(long step) {
    ax_ckpt_blob blobs[3] = {{"params", g_p, N}, {"adam_m", g_m, N}, {"empty", NULL, 0}};
    ax_ckpt_write_args a = {.grid = "2x1x1x1",
                            .config_json = "{\"lr\":0.001,\"name\":\"x\"}",
                            .state_json = "{\"step\":3,\"tokens\":123}",
                            .tensors = g_tensors,
                            .n_tensors = 2,
                            .blobs = blobs,
                            .n_blobs = 3,
                            .zstd_level = 0};
    return ax_ckpt_write(g_dir, step, &a);
}

static void step_path(char *out, size_t size, long step, const char *file) {
    snprintf(out, size, "%s/step-%06ld%s%s", g_dir, step, file ? "/" : "", file ? file : "");
}

/* the text of step's manifest (its path into p[256]) */
static char *read_manifest(long step, char *p, size_t *len) {
    char *text;
    step_path(p, 256, step, "manifest.json");
    cr_assert_eq(ax_read_file(p, &text, len), AX_OK);
    return text;
}

static ax_ckpt_t *open_ok(long step) {
    char p[256];
    step_path(p, sizeof p, step, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(p, &c), AX_OK, "%s", ax_error_msg());
    return c;
}

/* replaces the first `from` in step's manifest with `to` */
static void edit_manifest(long step, const char *from, const char *to) {
    char p[256];
    size_t len;
    char *text = read_manifest(step, p, &len), *at = strstr(text, from);
    cr_assert_not_null(at, "%s not in manifest", from);
    char *out = malloc(len + strlen(to) + 1);
    size_t pre = (size_t)(at - text);
    memcpy(out, text, pre);
    strcpy(out + pre, to);
    strcat(out, at + strlen(from));
    cr_assert_eq(ax_write_file(p, out, strlen(out)), AX_OK);
    free(out);
    free(text);
}

static void expect_msg(const char *a, const char *b) {
    const char *m = ax_error_msg();
    cr_assert(strstr(m, a), "want \"%s\" in: %s", a, m);
    if (b) cr_assert(strstr(m, b), "want \"%s\" in: %s", b, m);
}

TestSuite(ckpt, .init = setup, .fini = teardown);

Test(ckpt, round_trip_and_ranges) {
    cr_assert_eq(write_step(42), AX_OK, "%s", ax_error_msg());
    char p[256];
    step_path(p, sizeof p, 42, "params.009.zst");
    cr_assert(ax_path_exists(p));
    step_path(p, sizeof p, 42, "params.010.zst");
    cr_assert(!ax_path_exists(p));
    step_path(p, sizeof p, 42, "empty.000.zst");
    cr_assert(ax_path_exists(p));
    cr_assert(!ax_path_exists(strcat(strcpy(p, g_dir), "/step-000042.partial")));

    ax_ckpt_t *c = open_ok(42);
    cr_assert_eq(ax_ckpt_step(c), 42);
    cr_assert_str_eq(ax_ckpt_grid(c), "2x1x1x1");
    step_path(p, sizeof p, 42, NULL);
    cr_assert_str_eq(ax_ckpt_path(c), p);
    double lr;
    int64_t tok;
    cr_assert_eq(ax_json_get_num(ax_ckpt_config(c), "lr", "c", &lr), AX_OK);
    cr_assert_eq(lr, 0.001);
    cr_assert_eq(ax_json_get_i64(ax_ckpt_state(c), "tokens", "s", &tok), AX_OK);
    cr_assert_eq(tok, 123);
    cr_assert_eq(ax_ckpt_n_tensors(c), 2);
    const ax_tensor_info *t = ax_ckpt_tensor(c, 0);
    cr_assert_str_eq(t->name, "wte");
    cr_assert_eq(t->ndim, 2);
    cr_assert_eq(t->shape[0], 25);
    cr_assert_eq(t->shape[1], 20);
    cr_assert_eq(t->numel, 500);
    cr_assert_eq(ax_ckpt_tensor(c, 1)->offset, 500);
    cr_assert_null(ax_ckpt_tensor(c, 2));
    cr_assert_eq(ax_ckpt_blob_count(c, "params"), N);
    cr_assert_eq(ax_ckpt_blob_count(c, "empty"), 0);
    cr_assert_eq(ax_ckpt_blob_count(c, "nope"), -1);

    float *buf = malloc(N * sizeof(float));
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, N, buf), AX_OK, "%s", ax_error_msg());
    cr_assert(memcmp(buf, g_p, sizeof g_p) == 0);
    cr_assert_eq(ax_ckpt_read_blob(c, "adam_m", 0, N, buf), AX_OK, "%s", ax_error_msg());
    cr_assert(memcmp(buf, g_m, sizeof g_m) == 0);
    /* ranges crossing shard boundaries, inside one shard, at the end, and empty */
    int64_t ranges[][2] = {{95, 333}, {10, 10}, {100, 100}, {999, 1}, {0, 0}, {199, 2}};
    for (size_t r = 0; r < sizeof ranges / sizeof *ranges; r++) {
        memset(buf, 0xff, N * sizeof(float));
        int64_t o = ranges[r][0], n = ranges[r][1];
        cr_assert_eq(ax_ckpt_read_blob(c, "params", o, n, buf), AX_OK, "%s", ax_error_msg());
        cr_assert(memcmp(buf, g_p + o, (size_t)n * sizeof(float)) == 0, "range %lld+%lld",
                  (long long)o, (long long)n);
        uint32_t guard;
        memcpy(&guard, buf + n, 4);
        cr_assert_eq(guard, 0xffffffffu, "wrote past the range");
    }
    cr_assert_eq(ax_ckpt_read_blob(c, "empty", 0, 0, buf), AX_OK);

    ax_error_clear();
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 990, 11, buf), AX_ERR_ARG);
    expect_msg("params", NULL);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_read_blob(c, "adam_v", 0, 1, buf), AX_ERR_MISMATCH);
    expect_msg("adam_v", NULL);
    free(buf);
    ax_ckpt_free(c);
    ax_ckpt_free(NULL);
}

Test(ckpt, manifest_fields) {
    cr_assert_eq(write_step(1), AX_OK, "%s", ax_error_msg());
    char p[256];
    size_t len;
    char *text = read_manifest(1, p, &len);
    ax_json *m;
    cr_assert_eq(ax_json_parse(text, len, p, &m), AX_OK);
    const char *fmt;
    int64_t ver;
    cr_assert_eq(ax_json_get_str(m, "format", p, &fmt), AX_OK);
    cr_assert_str_eq(fmt, "axmem-ckpt");
    cr_assert_eq(ax_json_get_i64(m, "version", p, &ver), AX_OK);
    cr_assert_eq(ver, 1);
    const ax_json *sh = ax_json_get(m, "shards");
    cr_assert_eq(sh->n, 21);
    const char *x;
    cr_assert_eq(ax_json_get_str(sh->items[0], "xxh3", p, &x), AX_OK);
    cr_assert_eq(strlen(x), 18);
    cr_assert(!strncmp(x, "0x", 2));
    ax_json_free(m);
    free(text);
}

Test(ckpt, default_shard_size_is_one_file) {
    ax_ckpt_set_shard_bytes(0);
    cr_assert_eq(write_step(2), AX_OK, "%s", ax_error_msg());
    char p[256];
    step_path(p, sizeof p, 2, "params.001.zst");
    cr_assert(!ax_path_exists(p));
    ax_ckpt_t *c = open_ok(2);
    float buf[N];
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, N, buf), AX_OK);
    cr_assert(memcmp(buf, g_p, sizeof buf) == 0);
    ax_ckpt_free(c);
}

Test(ckpt, find_latest_ignores_partial_and_junk) {
    char out[256], p[256];
    cr_assert_eq(ax_ckpt_find_latest(g_dir, out, sizeof out), AX_ERR_IO);
    expect_msg(g_dir, "no complete checkpoint");
    cr_assert_eq(write_step(5), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(write_step(100), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(write_step(20), AX_OK, "%s", ax_error_msg());
    const char *junk_dirs[] = {"step-000200.partial", "step-000300x", "step-", "notes",
                               "step-000500"}; /* the last has no manifest */
    for (size_t i = 0; i < sizeof junk_dirs / sizeof *junk_dirs; i++) {
        snprintf(p, sizeof p, "%s/%s", g_dir, junk_dirs[i]);
        cr_assert_eq(mkdir(p, 0777), 0);
    }
    snprintf(p, sizeof p, "%s/step-000200.partial/manifest.json", g_dir);
    cr_assert_eq(ax_write_file(p, "{}", 2), AX_OK);
    cr_assert_eq(ax_ckpt_find_latest(g_dir, out, sizeof out), AX_OK, "%s", ax_error_msg());
    step_path(p, sizeof p, 100, NULL);
    cr_assert_str_eq(out, p);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_find_latest(g_dir, out, 8), AX_ERR_ARG);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_find_latest("/tmp/axckpt-no-such-dir", out, sizeof out), AX_ERR_IO);
    expect_msg("/tmp/axckpt-no-such-dir", NULL);
}

Test(ckpt, refuses_overwrite) {
    cr_assert_eq(write_step(5), AX_OK, "%s", ax_error_msg());
    g_p[0] = 1234.0f;
    cr_assert_eq(write_step(5), AX_ERR_ARG);
    expect_msg("step-000005", "already exists");
    ax_ckpt_t *c = open_ok(5);
    float v;
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, 1, &v), AX_OK);
    cr_assert_eq(v, -7.0f); /* the first write is intact */
    ax_ckpt_free(c);
}

Test(ckpt, leftover_partial_is_replaced) {
    char p[256];
    snprintf(p, sizeof p, "%s/step-000007.partial", g_dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    strcat(p, "/params.000.zst");
    cr_assert_eq(ax_write_file(p, "junk", 4), AX_OK);
    cr_assert_eq(write_step(7), AX_OK, "%s", ax_error_msg());
    snprintf(p, sizeof p, "%s/step-000007.partial", g_dir);
    cr_assert(!ax_path_exists(p));
    ax_ckpt_t *c = open_ok(7);
    float buf[N];
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, N, buf), AX_OK, "%s", ax_error_msg());
    cr_assert(memcmp(buf, g_p, sizeof buf) == 0);
    ax_ckpt_free(c);
}

Test(ckpt, rejects_bad_blob_names) {
    ax_ckpt_blob blobs[1] = {{"../x", g_p, N}};
    ax_ckpt_write_args a = {.blobs = blobs, .n_blobs = 1};
    cr_assert_eq(ax_ckpt_write(g_dir, 1, &a), AX_ERR_ARG);
    expect_msg("../x", NULL);
    ax_error_clear();
    ax_ckpt_blob twice[2] = {{"p", g_p, N}, {"p", g_m, N}};
    a.blobs = twice;
    a.n_blobs = 2;
    cr_assert_eq(ax_ckpt_write(g_dir, 1, &a), AX_ERR_ARG);
    ax_error_clear();
    a.n_blobs = 1;
    a.config_json = "[1]";
    cr_assert_eq(ax_ckpt_write(g_dir, 1, &a), AX_ERR_ARG);
}

Test(ckpt, rejects_truncated_shard) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    char p[256];
    step_path(p, sizeof p, 3, "params.004.zst");
    struct stat sb;
    cr_assert_eq(stat(p, &sb), 0);
    /* caught at open by the size in the manifest ... */
    cr_assert_eq(truncate(p, sb.st_size - 5), 0);
    char d[256];
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT);
    cr_assert_null(c);
    expect_msg(p, "the checkpoint is damaged; resume from an earlier one or retrain");
    /* ... and at read time if it shrinks after the open */
    cr_assert_eq(truncate(p, sb.st_size), 0); /* zero-filled tail: same size, bad frame */
    c = open_ok(3);
    cr_assert_eq(truncate(p, sb.st_size - 5), 0);
    float buf[N];
    ax_error_clear();
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 350, 200, buf), AX_ERR_CORRUPT);
    expect_msg(p, "damaged");
    ax_error_clear();
    /* shards outside the range are not touched */
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, 400, buf), AX_OK, "%s", ax_error_msg());
    ax_ckpt_free(c);
}

Test(ckpt, rejects_flipped_byte) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    char p[256];
    step_path(p, sizeof p, 3, "adam_m.002.zst");
    char *data;
    size_t len;
    cr_assert_eq(ax_read_file(p, &data, &len), AX_OK);
    data[len / 2] ^= 0x10;
    cr_assert_eq(ax_write_file(p, data, len), AX_OK);
    free(data);
    ax_ckpt_t *c = open_ok(3);
    float buf[N];
    cr_assert_eq(ax_ckpt_read_blob(c, "adam_m", 250, 10, buf), AX_ERR_CORRUPT);
    expect_msg(p, "the checkpoint is damaged");
    ax_ckpt_free(c);
}

Test(ckpt, rejects_checksum_mismatch) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    /* data intact, recorded hash wrong: only our XXH3 can notice */
    char p[256];
    size_t len;
    char *text = read_manifest(3, p, &len);
    char *x = strstr(text, "\"xxh3\":\"0x") + 10;
    x[0] = x[0] == 'a' ? 'b' : 'a';
    cr_assert_eq(ax_write_file(p, text, len), AX_OK);
    free(text);
    ax_ckpt_t *c = open_ok(3);
    float buf[N];
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, 1, buf), AX_ERR_CORRUPT);
    step_path(p, sizeof p, 3, "params.000.zst");
    expect_msg(p, "checksum");
    ax_ckpt_free(c);
}

Test(ckpt, rejects_missing_shard) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    char p[256], d[256];
    step_path(p, sizeof p, 3, "adam_m.009.zst");
    cr_assert_eq(unlink(p), 0);
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT);
    expect_msg(p, "missing");
}

Test(ckpt, rejects_corrupt_manifest_json) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    char p[256], d[256];
    step_path(p, sizeof p, 3, "manifest.json");
    cr_assert_eq(ax_write_file(p, "{\"format\":\"axmem-ckpt\",\"vers", 28), AX_OK);
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT);
    expect_msg(p, "the checkpoint is damaged");
}

Test(ckpt, rejects_missing_key) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    edit_manifest(3, "\"tensors\"", "\"tensorz\"");
    char d[256];
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT);
    expect_msg("\"tensors\" is missing", "damaged");
}

Test(ckpt, rejects_wrong_format_and_version) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    edit_manifest(3, "\"version\":1", "\"version\":2");
    char d[256];
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_MISMATCH);
    expect_msg("manifest.json", "version 2");
    edit_manifest(3, "\"version\":2", "\"version\":1");
    edit_manifest(3, "axmem-ckpt", "other");
    ax_error_clear();
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT);
    expect_msg("\"other\"", "not an axmem checkpoint");
}

Test(ckpt, rejects_missing_manifest) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    char p[256], d[256];
    step_path(p, sizeof p, 3, "manifest.json");
    cr_assert_eq(unlink(p), 0);
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_IO);
    expect_msg(p, "missing");
    ax_error_clear();
    cr_assert_eq(ax_ckpt_open("/tmp/axckpt-no-such/step-000001", &c), AX_ERR_IO);
    expect_msg("/tmp/axckpt-no-such/step-000001", "not found");
}

/* Hostile numbers in the manifest: each must be a clean AX_ERR_CORRUPT, never signed overflow
 * or a float-to-int conversion out of range (the ASan/UBSan build traps both). */
Test(ckpt, rejects_hostile_shapes_and_numbers) {
    struct {
        const char *from, *to, *expect;
    } cases[] = {
        /* 2^32 cubed overflows int64: the product is bounded at every step */
        {"\"shape\":[25,20]", "\"shape\":[4294967296,4294967296,4294967296]", "large shape"},
        {"\"shape\":[25,20]", "\"shape\":[1e30,1]", "bad shape"},
        {"\"shape\":[25,20]", "\"shape\":[-25,-20]", "bad shape"},
        {"\"shape\":[25,20]", "\"shape\":[25.5,20]", "bad shape"},
        {"\"shape\":[25,20]", "\"shape\":[1,2,3,4,5]", "shape too long"},
        {"\"numel\":500", "\"numel\":1e30", "not a count"},
        {"\"offset\":500", "\"offset\":9007199254740992", "ends past"},
        {"\"step\":3", "\"step\":-1e300", "not a count"},
        {"\"version\":1", "\"version\":1e400", "number out of range"},
        {"\"count\":100", "\"count\":1e17", "not a count"},
    };
    char d[256];
    step_path(d, sizeof d, 3, NULL);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ax_rm_rf(d);
        cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
        edit_manifest(3, cases[i].from, cases[i].to);
        ax_ckpt_t *c = NULL;
        ax_error_clear();
        cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT, "accepted %s", cases[i].to);
        cr_assert_null(c);
        expect_msg("manifest.json", cases[i].expect);
    }
}

Test(ckpt, model_config_numbers_are_bounded) {
    /* a manifest config written by train, then with each number made hostile */
    const char *good = "{\"layers\":2,\"dim\":16,\"heads\":2,\"ffn\":32,\"vocab\":300,"
                       "\"tie-embeddings\":true,\"rope-theta\":10000}";
    const char *bad[] = {"{\"layers\":1e30,", "{\"layers\":2.5,", "{\"layers\":-2,",
                         "{\"layers\":4294967298,", "{\"layers\":2,\"dim\":1e300,"};
    const char *theta_bad[] = {"\"rope-theta\":1e300", "\"rope-theta\":0.5"};
    char cfg[512];
    for (int k = -1; k < 7; k++) {
        if (k < 0) {
            snprintf(cfg, sizeof cfg, "%s", good);
        } else if (k < 5) {
            const char *rest = strchr(good + 1, ',') + 1; /* after "layers":2, */
            if (k == 4) rest = strstr(good, "\"heads\"");
            snprintf(cfg, sizeof cfg, "%s%s", bad[k], rest);
        } else {
            snprintf(cfg, sizeof cfg, "%.*s%s}", (int)(strstr(good, "\"rope") - good), good,
                     theta_bad[k - 5]);
        }
        ax_ckpt_blob blobs[1] = {{"params", g_p, N}};
        ax_ckpt_write_args a = {.config_json = cfg, .blobs = blobs, .n_blobs = 1};
        char d[256];
        step_path(d, sizeof d, 10 + k, NULL);
        cr_assert_eq(ax_ckpt_write(g_dir, 10 + k, &a), AX_OK, "%s: %s", cfg, ax_error_msg());
        ax_ckpt_t *c = NULL;
        cr_assert_eq(ax_ckpt_open(d, &c), AX_OK, "%s", ax_error_msg());
        ax_model_config mc;
        ax_error_clear();
        ax_status st = ax_model_config_from_ckpt(c, &mc);
        if (k < 0) {
            cr_assert_eq(st, AX_OK, "%s", ax_error_msg());
            cr_assert_eq(mc.n_layers, 2);
            cr_assert_eq(mc.vocab, 300);
        } else {
            cr_assert_eq(st, AX_ERR_CORRUPT, "accepted %s", cfg);
            expect_msg(d, NULL);
        }
        ax_ckpt_free(c);
    }
}

Test(ckpt, shard_that_is_a_fifo_is_refused, .timeout = 20) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    char p[256], d[256];
    step_path(p, sizeof p, 3, "adam_m.009.zst");
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkfifo(p, 0600), 0);
    step_path(d, sizeof d, 3, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_CORRUPT);
    expect_msg(p, "not a regular file");
    /* the manifest itself */
    cr_assert_eq(write_step(4), AX_OK, "%s", ax_error_msg());
    step_path(p, sizeof p, 4, "manifest.json");
    cr_assert_eq(unlink(p), 0);
    cr_assert_eq(mkfifo(p, 0600), 0);
    step_path(d, sizeof d, 4, NULL);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_open(d, &c), AX_ERR_IO);
    expect_msg(p, "FIFO");
}

Test(ckpt, read_blob_range_cannot_overflow) {
    cr_assert_eq(write_step(3), AX_OK, "%s", ax_error_msg());
    ax_ckpt_t *c = open_ok(3);
    float buf[4];
    cr_assert_eq(ax_ckpt_read_blob(c, "params", INT64_MAX - 1, 4, buf), AX_ERR_ARG);
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 2, INT64_MAX, buf), AX_ERR_ARG);
    ax_ckpt_free(c);
}

/* what --ckpt / --init name: a step directory, a run (DIR/ckpt) or a checkpoint directory,
 * the last two meaning their newest complete step; otherwise a message saying what is there */
Test(ckpt, resolve_step_run_and_checkpoint_directories) {
    char out[256], want[256], run[80], p[320];
    cr_assert_eq(write_step(2), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(write_step(4), AX_OK, "%s", ax_error_msg());
    snprintf(p, sizeof p, "%s/step-000006.partial", g_dir);
    cr_assert_eq(mkdir(p, 0777), 0);
    step_path(want, sizeof want, 4, NULL);
    cr_assert_eq(ax_ckpt_resolve(g_dir, "--ckpt", out, sizeof out), AX_OK, "%s", ax_error_msg());
    cr_assert_str_eq(out, want); /* a checkpoint directory: its newest complete step */
    step_path(p, sizeof p, 2, NULL);
    cr_assert_eq(ax_ckpt_resolve(p, "--ckpt", out, sizeof out), AX_OK, "%s", ax_error_msg());
    cr_assert_str_eq(out, p); /* a step directory: itself */
    snprintf(run, sizeof run, "%s-run", g_dir);
    cr_assert_eq(mkdir(run, 0777), 0);
    snprintf(p, sizeof p, "%s/ckpt", run);
    cr_assert_eq(symlink(g_dir, p), 0);
    cr_assert_eq(ax_ckpt_resolve(run, "--ckpt", out, sizeof out), AX_OK, "%s", ax_error_msg());
    snprintf(want, sizeof want, "%s/ckpt/step-000004", run);
    cr_assert_str_eq(out, want); /* a run: the newest step in its ckpt/ */
    unlink(p);
    /* nothing finished there: what it holds, never "damaged" */
    cr_assert_eq(ax_ckpt_resolve(run, "--init", out, sizeof out), AX_ERR_IO);
    expect_msg("--init ", "holds no finished checkpoint");
    expect_msg("(it holds nothing)", "pass a training run's directory");
    const char *names[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
    for (int i = 0; i < 8; i++) {
        snprintf(p, sizeof p, "%s/%s", run, names[i]);
        cr_assert_eq(ax_write_file(p, "x", 1), AX_OK);
    }
    snprintf(p, sizeof p, "%s/ckpt/step-000003.partial", run);
    cr_assert_eq(ax_mkdir_p(p), AX_OK);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_resolve(run, "--ckpt", out, sizeof out), AX_ERR_IO);
    expect_msg("(it holds a, b, c, ckpt/, d, e and 3 more; its ckpt/ holds step-000003.partial/)",
               "writing never finished");
    cr_assert(!strstr(ax_error_msg(), "damaged"), "%s", ax_error_msg());
    /* a Hugging Face model directory is sent to model import */
    snprintf(p, sizeof p, "%s/config.json", run);
    cr_assert_eq(ax_write_file(p, "{}", 2), AX_OK);
    snprintf(p, sizeof p, "%s/model.safetensors", run);
    cr_assert_eq(ax_write_file(p, "x", 1), AX_OK);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_resolve(run, "--ckpt", out, sizeof out), AX_ERR_ARG);
    expect_msg("is a Hugging Face model directory", "axmem model import --hf");
    /* a file, a path that is not there */
    ax_error_clear();
    cr_assert_eq(ax_ckpt_resolve(p, "--ckpt", out, sizeof out), AX_ERR_IO);
    expect_msg("is not a directory", NULL);
    ax_error_clear();
    cr_assert_eq(ax_ckpt_resolve("/tmp/axckpt-no-such-dir", "--ckpt", out, sizeof out), AX_ERR_IO);
    expect_msg("/tmp/axckpt-no-such-dir", "pass a training run's directory");
    ax_rm_rf(run);
}

/* No checkpoint holds a NaN or an infinity: writing one is refused, naming the blob and the
 * tensor, and nothing is left behind. */
Test(ckpt, write_refuses_non_finite_values) {
    float saved = g_p[612];
    g_p[612] = NAN; /* value 112 of tensor ln.w */
    cr_assert_eq(write_step(5), AX_ERR_CORRUPT);
    expect_msg("blob \"params\" holds 1 non-finite value", "tensor ln.w (its value 112)");
    g_p[612] = saved;
    ax_error_clear();
    g_m[3] = -INFINITY;
    cr_assert_eq(write_step(5), AX_ERR_CORRUPT);
    expect_msg("blob \"adam_m\"", "tensor wte (its value 3)");
    g_m[3] = 1.0f / 4.0f;
    char p[256];
    step_path(p, sizeof p, 5, NULL);
    cr_assert(!ax_path_exists(p));
    cr_assert(!ax_path_exists(strcat(p, ".partial")));
    cr_assert_eq(write_step(5), AX_OK, "%s", ax_error_msg());
}

/* A shard whose checksum is right but whose values are not numbers (a writer without the check
 * above, or damage before the checksum was taken) is refused on read, naming the checkpoint,
 * blob and tensor; ranges that do not cover the value still read. */
Test(ckpt, read_refuses_non_finite_values) {
    cr_assert_eq(write_step(7), AX_OK, "%s", ax_error_msg());
    char p[256];
    step_path(p, sizeof p, 7, NULL);
    poison_shard(p, "params.006.zst", 4, INFINITY); /* value 604: tensor ln.w, its value 104 */
    ax_ckpt_t *c = open_ok(7);
    float *buf = malloc(N * sizeof(float));
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, N, buf), AX_ERR_CORRUPT);
    expect_msg(p, "blob \"params\" holds 1 non-finite value (the first is inf, value 604");
    expect_msg("tensor ln.w (its value 104)", "use an earlier checkpoint");
    ax_error_clear();
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 0, 600, buf), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_ckpt_read_blob(c, "params", 600, 10, buf), AX_ERR_CORRUPT);
    free(buf);
    ax_ckpt_free(c);
}

/* The manifest of step-NNNNNN says step NNNNNN: an edited step (negative numbers are refused
 * as counts already) would make a resumed run skip or replay steps. A copy kept under another
 * folder name is not held to it. */
Test(ckpt, step_must_match_its_folder) {
    cr_assert_eq(write_step(60), AX_OK, "%s", ax_error_msg());
    edit_manifest(60, "\"step\":60", "\"step\":9000000000000000");
    char p[256], copy[300];
    step_path(p, sizeof p, 60, NULL);
    ax_ckpt_t *c = NULL;
    cr_assert_eq(ax_ckpt_open(p, &c), AX_ERR_CORRUPT);
    expect_msg("\"step\" is 9000000000000000 but the folder is step-000060", "move");
    ax_error_clear();
    snprintf(copy, sizeof copy, "%s/kept", g_dir);
    cr_assert_eq(rename(p, copy), 0);
    cr_assert_eq(ax_ckpt_open(copy, &c), AX_OK, "%s", ax_error_msg());
    cr_assert_eq(ax_ckpt_step(c), 9000000000000000L);
    ax_ckpt_free(c);
}
