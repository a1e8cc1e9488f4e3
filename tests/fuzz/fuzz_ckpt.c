/* libFuzzer target: checkpoint manifests (lib/ckpt/ckpt.c's parsing), the model shape read from
 * their config (lib/model/model_io.c) and the config table's JSON read (lib/core/config.c). The
 * input is manifest.json of a checkpoint whose shards (small, written at start-up) are real, so
 * inputs close to the seed get past the shard checks and read blobs. */
#include "fuzz_util.h"
#include "lib/ckpt/ckpt.h"
#include "lib/core/config.h"
#include "lib/model/model_io.h"

#define N 600
static char step_dir[512], manifest[600];

typedef struct {
    int64_t layers, dim, steps;
    double lr, theta;
    char goldfish[AX_CFG_STR_MAX];
    int tie;
    ax_cfg_strlist extra;
} cfg;

static const ax_cfg_entry entries[] = {
    {"layers", AX_CFG_INT, offsetof(cfg, layers), "2", 1, 1024, ""},
    {"dim", AX_CFG_INT, offsetof(cfg, dim), "16", 2, 65536, ""},
    {"steps", AX_CFG_INT, offsetof(cfg, steps), "10", 1, 1e12, ""},
    {"lr", AX_CFG_FLOAT, offsetof(cfg, lr), "0.001", 0, 1, ""},
    {"rope-theta", AX_CFG_FLOAT, offsetof(cfg, theta), "10000", 1, 1e12, ""},
    {"goldfish", AX_CFG_STR, offsetof(cfg, goldfish), "none", 1, 0, ""},
    {"tie-embeddings", AX_CFG_BOOL, offsetof(cfg, tie), "true", 1, 0, ""},
    {"val-data", AX_CFG_STRLIST, offsetof(cfg, extra), "", 1, 0, ""},
};
static const ax_cfg_table table = {"axmem fuzz", "", entries, 8, NULL};

/* a small real checkpoint: tensors index "params"; the blob contents are a fixed pattern */
static void make_checkpoint(const char *dir) {
    static float p[N], m[N];
    for (int i = 0; i < N; i++) p[i] = (float)i * 0.5f - 3.0f, m[i] = 1.0f / (float)(i + 1);
    static const ax_tensor_info tensors[3] = {{"wte", 2, {20, 16, 0, 0}, 0, 320},
                                              {"ln.w", 1, {16, 0, 0, 0}, 320, 16},
                                              {"blocks.0.w", 3, {2, 4, 33, 0}, 336, 264}};
    ax_ckpt_blob blobs[3] = {{"params", p, N}, {"adam_m", m, N}, {"empty", NULL, 0}};
    ax_ckpt_write_args a = {
        .grid = "1x1x1x1",
        .config_json = "{\"layers\":2,\"dim\":16,\"heads\":2,\"ffn\":32,\"vocab\":300,"
                       "\"tie-embeddings\":true,\"rope-theta\":10000,\"steps\":10,\"lr\":0.001,"
                       "\"goldfish\":\"hash:k=4,h=13\",\"val-data\":[\"a.axd\",\"b.axd\"]}",
        .state_json = "{\"step\":1,\"tokens\":128,\"loader\":{\"epoch\":0,\"pos\":64}}",
        .tensors = tensors,
        .n_tensors = 3,
        .blobs = blobs,
        .n_blobs = 3,
    };
    ax_ckpt_set_shard_bytes(256 * sizeof(float)); /* several shards per blob */
    if (ax_ckpt_write(dir, 1, &a) != AX_OK) {
        fprintf(stderr, "%s\n", ax_error_msg());
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fz_init("ckpt");
    char ck[512];
    fz_path(ck, sizeof ck, "ckpt");
    make_checkpoint(ck);
    snprintf(step_dir, sizeof step_dir, "%s/step-000001", ck);
    snprintf(manifest, sizeof manifest, "%s/manifest.json", step_dir);
    if (fz_seed_dir()) {
        char *text;
        size_t len;
        if (ax_read_file(manifest, &text, &len) != AX_OK) abort();
        fz_write_seed("manifest.json", text, len);
        free(text);
        exit(0);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fz_write(manifest, data, size);
    ax_ckpt_t *c = NULL;
    ax_error_clear();
    ax_status st = ax_ckpt_open(step_dir, &c);
    fz_note("ckpt", st);
    if (st != AX_OK) {
        if (c) abort();
        return 0;
    }
    ax_model_config mc;
    fz_note("model config", ax_model_config_from_ckpt(c, &mc));
    cfg f;
    if (ax_cfg_set_defaults(&table, &f) != AX_OK) abort();
    fz_note("config", ax_cfg_read_json(&table, &f, ax_ckpt_config(c), "fuzz manifest"));
    ax_cfg_free(&table, &f);
    (void)ax_ckpt_step(c), (void)ax_ckpt_grid(c), (void)ax_ckpt_state(c);
    for (int i = 0; i < ax_ckpt_n_tensors(c); i++) {
        const ax_tensor_info *t = ax_ckpt_tensor(c, i);
        if (!t || t->ndim < 0 || t->ndim > 4 || t->numel < 0 || t->offset < 0) abort();
    }
    const char *blobs[] = {"params", "adam_m", "empty", "nope"};
    for (int b = 0; b < 4; b++) {
        int64_t n = ax_ckpt_blob_count(c, blobs[b]);
        if (n < -1) abort();
        if (n > 4 * N) n = 4 * N; /* the manifest may claim any size; read at most this */
        if (n > 0) {
            float *dst = malloc((size_t)n * sizeof *dst);
            fz_note(blobs[b], ax_ckpt_read_blob(c, blobs[b], 0, n, dst));
            free(dst);
        }
    }
    ax_ckpt_free(c);
    ax_error_clear();
    return 0;
}
