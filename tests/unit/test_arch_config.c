/* The architecture settings of `axmem train` and of checkpoints (docs/training.md
 * "Architectures"): --arch fills the flags the user did not set, the flags map onto
 * ax_model_config, checkpoint configs carry them (absent = Llama), --resume of a manifest from
 * before them is a Llama run, and --init takes them from the checkpoint. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/ckpt/ckpt.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/model/model_io.h"
#include "train/train_config.h"

static uint8_t was_set[256];

/* settings from a command line (program name first) after the preset, as train does */
static ax_status parse(ax_train_config *c, int n, const char **args) {
    char *argv[32] = {"train"};
    for (int i = 0; i < n; i++) argv[i + 1] = (char *)args[i];
    memset(was_set, 0, sizeof was_set);
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, c), AX_OK);
    int help = 0;
    AX_CHECK(ax_cfg_parse_argv(&ax_train_table, c, n + 1, argv, was_set, &help));
    return ax_train_apply_preset(c, was_set);
}

TestSuite(arch_config);

Test(arch_config, defaults_are_llama) {
    ax_train_config c;
    const char *a[] = {"--data", "x.axd"};
    cr_assert_eq(parse(&c, 2, a), AX_OK, "%s", ax_error_msg());
    c.vocab = 300;
    ax_model_config m = ax_train_model_config(&c);
    cr_assert(m.norm == AX_NORM_RMS && m.mlp == AX_MLP_SWIGLU && !m.bias && !m.parallel_residual &&
              !m.rotary_dim && m.pos == AX_POS_ROPE && !m.max_pos && m.tie_embeddings);
}

Test(arch_config, arch_neox_and_gpt2_fill_unset_flags) {
    ax_train_config c;
    const char *a[] = {"--data", "x.axd", "--arch", "neox", "--dim", "256", "--heads", "4"};
    cr_assert_eq(parse(&c, 8, a), AX_OK, "%s", ax_error_msg());
    c.vocab = 300;
    ax_model_config m = ax_train_model_config(&c);
    cr_assert(m.norm == AX_NORM_LAYER && m.mlp == AX_MLP_GELU && m.bias && m.parallel_residual &&
              m.pos == AX_POS_ROPE && !m.tie_embeddings);
    cr_assert_eq(m.rotary_dim, 16, "head 64 / 4 = 16, got %d", m.rotary_dim);
    /* a flag given wins over the group */
    const char *b[] = {"--data", "x.axd",     "--arch",          "neox", "--rotary-dim", "8",
                       "--mlp",  "gelu-tanh", "--tie-embeddings"};
    cr_assert_eq(parse(&c, 9, b), AX_OK, "%s", ax_error_msg());
    m = ax_train_model_config(&c);
    cr_assert(m.rotary_dim == 8 && m.mlp == AX_MLP_GELU_TANH && m.tie_embeddings);
    const char *g[] = {"--data", "x.axd", "--arch", "gpt2", "--seq-len", "96"};
    cr_assert_eq(parse(&c, 6, g), AX_OK, "%s", ax_error_msg());
    m = ax_train_model_config(&c);
    cr_assert(m.norm == AX_NORM_LAYER && m.mlp == AX_MLP_GELU_TANH && m.bias &&
              !m.parallel_residual && m.pos == AX_POS_LEARNED && m.max_pos == 96 && !m.rotary_dim &&
              m.tie_embeddings);
    const char *bad[] = {"--data", "x.axd", "--arch", "bloom"};
    cr_assert_eq(parse(&c, 4, bad), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--arch"), "%s", ax_error_msg());
    ax_error_clear();
}

static char dir[128];
static void mk(void) {
    snprintf(dir, sizeof dir, "/tmp/axmem-arch-config-%d", (int)getpid());
    ax_rm_rf(dir);
    cr_assert_eq(ax_mkdir_p(dir), AX_OK);
}
static void rm(void) {
    ax_rm_rf(dir);
}

/* a checkpoint holding only a manifest config (and one tiny blob) */
static ax_ckpt_t *ckpt_with(const char *config, long step) {
    float blob[4] = {0};
    ax_ckpt_blob blobs[1] = {{"params", blob, 4}};
    ax_ckpt_write_args a = {.config_json = config, .blobs = blobs, .n_blobs = 1};
    cr_assert_eq(ax_ckpt_write(dir, step, &a), AX_OK, "%s", ax_error_msg());
    char path[256];
    snprintf(path, sizeof path, "%s/step-%06ld", dir, step);
    ax_ckpt_t *ck = NULL;
    cr_assert_eq(ax_ckpt_open(path, &ck), AX_OK, "%s", ax_error_msg());
    return ck;
}

#define SHAPE "\"layers\":2,\"dim\":32,\"heads\":4,\"ffn\":48,\"vocab\":300,\"rope-theta\":10000,"

Test(arch_config, checkpoint_keys, .init = mk, .fini = rm) {
    ax_model_config m;
    ax_ckpt_t *ck = ckpt_with("{" SHAPE "\"tie-embeddings\":false,\"norm\":\"layer\",\"mlp\":"
                              "\"gelu\",\"bias\":true,\"parallel-residual\":true,\"rotary-dim\":2,"
                              "\"kv-heads\":2}",
                              1);
    cr_assert_eq(ax_model_config_from_ckpt(ck, &m), AX_OK, "%s", ax_error_msg());
    cr_assert(m.norm == AX_NORM_LAYER && m.mlp == AX_MLP_GELU && m.bias && m.parallel_residual &&
              m.rotary_dim == 2 && m.pos == AX_POS_ROPE && !m.tie_embeddings && m.n_kv_heads == 2);
    ax_ckpt_free(ck);
    ck = ckpt_with("{" SHAPE "\"tie-embeddings\":true,\"norm\":\"layer\",\"mlp\":\"gelu-tanh\","
                   "\"bias\":true,\"pos\":\"learned\",\"max-pos\":64}",
                   2);
    cr_assert_eq(ax_model_config_from_ckpt(ck, &m), AX_OK, "%s", ax_error_msg());
    cr_assert(m.mlp == AX_MLP_GELU_TANH && m.pos == AX_POS_LEARNED && m.max_pos == 64);
    ax_ckpt_free(ck);
    /* absent: Llama */
    ck = ckpt_with("{" SHAPE "\"tie-embeddings\":true}", 3);
    cr_assert_eq(ax_model_config_from_ckpt(ck, &m), AX_OK, "%s", ax_error_msg());
    cr_assert(m.norm == AX_NORM_RMS && m.mlp == AX_MLP_SWIGLU && !m.bias && m.pos == AX_POS_ROPE &&
              m.n_kv_heads == 0);
    ax_ckpt_free(ck);
    /* kv-heads that do not divide the heads: the manifest is refused, naming the flag */
    ck = ckpt_with("{" SHAPE "\"tie-embeddings\":true,\"kv-heads\":3}", 7);
    cr_assert_eq(ax_model_config_from_ckpt(ck, &m), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "kv-heads 3"), "%s", ax_error_msg());
    ax_error_clear();
    ax_ckpt_free(ck);
    /* an unknown word, or an impossible combination, names the file and the key or fault */
    ck = ckpt_with("{" SHAPE "\"tie-embeddings\":true,\"mlp\":\"relu\"}", 4);
    cr_assert_eq(ax_model_config_from_ckpt(ck, &m), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "\"mlp\"") && strstr(ax_error_msg(), "step-000004"), "%s",
              ax_error_msg());
    ax_error_clear();
    ax_ckpt_free(ck);
    ck = ckpt_with("{" SHAPE "\"tie-embeddings\":true,\"rotary-dim\":3}", 5);
    cr_assert_eq(ax_model_config_from_ckpt(ck, &m), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "rotary-dim 3"), "%s", ax_error_msg());
    ax_error_clear();
    ax_ckpt_free(ck);
}

/* --resume of a manifest from before the architecture flags: a Llama run, whatever this command
 * line's values; a flag set to something else is an error naming it */
Test(arch_config, resume_of_an_older_manifest_is_llama, .init = mk, .fini = rm) {
    ax_ckpt_t *ck = ckpt_with("{" SHAPE "\"tie-embeddings\":true}", 6);
    ax_train_config c;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    memset(was_set, 0, sizeof was_set);
    snprintf(c.norm, sizeof c.norm, "layer"); /* not marked as set: the manifest decides */
    c.bias = 1;
    cr_assert_eq(ax_train_merge_resumed(&c, was_set, ax_ckpt_config(ck), "ck", 6), AX_OK, "%s",
                 ax_error_msg());
    cr_assert(!strcmp(c.norm, "rms") && !c.bias, "norm %s bias %d", c.norm, c.bias);
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.norm, sizeof c.norm, "layer");
    was_set[ax_cfg_find(&ax_train_table, "norm") - ax_train_table.entries] = 1;
    cr_assert_eq(ax_train_merge_resumed(&c, was_set, ax_ckpt_config(ck), "ck", 6), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "--norm"), "%s", ax_error_msg());
    ax_error_clear();
    ax_ckpt_free(ck);
}

/* --init: the architecture is the checkpoint's */
Test(arch_config, init_takes_the_architecture) {
    static const char js[] = "{" SHAPE "\"tie-embeddings\":false}";
    ax_json *j = NULL;
    cr_assert_eq(ax_json_parse(js, strlen(js), "test", &j), AX_OK);
    ax_model_config shape = {.n_layers = 2,
                             .dim = 32,
                             .n_heads = 4,
                             .ffn = 48,
                             .vocab = 300,
                             .rope_theta = 10000.0f,
                             .norm_eps = 1e-5f,
                             .norm = AX_NORM_LAYER,
                             .mlp = AX_MLP_GELU,
                             .bias = 1,
                             .parallel_residual = 1,
                             .rotary_dim = 2};
    ax_train_config c;
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    memset(was_set, 0, sizeof was_set);
    cr_assert_eq(ax_train_shape_from_init(&c, was_set, &shape, j, "ck"), AX_OK, "%s",
                 ax_error_msg());
    c.vocab = 300;
    ax_model_config m = ax_train_model_config(&c);
    cr_assert(m.norm == AX_NORM_LAYER && m.mlp == AX_MLP_GELU && m.bias && m.parallel_residual &&
              m.rotary_dim == 2 && !m.tie_embeddings);
    /* a contradicting flag, or --arch, is an error naming it */
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    c.rotary_dim = 4;
    was_set[ax_cfg_find(&ax_train_table, "rotary-dim") - ax_train_table.entries] = 1;
    cr_assert_eq(ax_train_shape_from_init(&c, was_set, &shape, j, "ck"), AX_ERR_MISMATCH);
    cr_assert(strstr(ax_error_msg(), "--rotary-dim"), "%s", ax_error_msg());
    ax_error_clear();
    memset(was_set, 0, sizeof was_set);
    cr_assert_eq(ax_cfg_set_defaults(&ax_train_table, &c), AX_OK);
    snprintf(c.arch, sizeof c.arch, "gpt2");
    was_set[ax_cfg_find(&ax_train_table, "arch") - ax_train_table.entries] = 1;
    cr_assert_eq(ax_train_shape_from_init(&c, was_set, &shape, j, "ck"), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--arch"), "%s", ax_error_msg());
    ax_error_clear();
    ax_json_free(j);
}
