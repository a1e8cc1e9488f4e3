#include "train/train_config.h"
#include "lib/core/log.h"
#include "lib/dist/comm.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model_io.h"
#include "lib/model/optim.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(field) offsetof(ax_train_config, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_DATA_ENTRY(F, "training dataset (.axd from `axmem data encode`)"),
    AX_CFG_TOKENIZER_ENTRY(F, "tokenizer file; if given, its vocabulary must match the dataset's"),
    AX_CFG_OUT_ENTRY(F, "runs/train", "run directory: metrics.jsonl and ckpt/step-NNNNNN/"),
    {"model", AX_CFG_CHOICE, F(model), "tiny|small|gpt2-124m", 1, 0,
     "shape preset (explicit --layers/--dim/... override it)"},
    {"layers", AX_CFG_INT, F(layers), "0", 0, 1024, "transformer blocks (0 = from --model)"},
    {"dim", AX_CFG_INT, F(dim), "0", 0, 65536, "model width C (0 = from --model)"},
    {"heads", AX_CFG_INT, F(heads), "0", 0, 1024, "attention heads (0 = from --model)"},
    {"ffn", AX_CFG_INT, F(ffn), "0", 0, 262144, "SwiGLU hidden size (0 = from --model)"},
    {"vocab", AX_CFG_INT, F(vocab), "0", 0, 1 << 24,
     "vocabulary size (0 = the dataset's; larger pads the embedding)"},
    {"tie-embeddings", AX_CFG_BOOL, F(tie_embeddings), "true", 1, 0,
     "share the token embedding with the LM head"},
    {"rope-theta", AX_CFG_FLOAT, F(rope_theta), "10000", 2, 1e9, "rotary position base"},
    {"norm-eps", AX_CFG_FLOAT, F(norm_eps), AX_NORM_EPS_DEFAULT_TEXT, 1e-12, 1,
     "RMSNorm epsilon (stored in the checkpoint; older checkpoints mean 1e-5)"},
    {"arch", AX_CFG_CHOICE, F(arch), "llama|neox|gpt2", 1, 0,
     "architecture: defaults for the flags below (neox = GPT-NeoX/Pythia: --norm layer --mlp "
     "gelu --bias --parallel-residual --rotary-dim head/4 --no-tie-embeddings; gpt2: --norm layer "
     "--mlp gelu-tanh "
     "--bias --pos learned --max-pos --seq-len, tied); flags given override"},
    {"norm", AX_CFG_CHOICE, F(norm), "rms|layer", 1, 0,
     "RMSNorm, or LayerNorm (with a bias; --norm-eps is its epsilon)"},
    {"mlp", AX_CFG_CHOICE, F(mlp), "swiglu|gelu|gelu-tanh", 1, 0,
     "MLP: SwiGLU, or GELU (exact erf; gelu-tanh: GPT-2's approximation) with --ffn hidden units"},
    {"bias", AX_CFG_BOOL, F(bias), "false", 1, 0,
     "biases on the qkv, out-projection, MLP up and down layers"},
    {"parallel-residual", AX_CFG_BOOL, F(parallel_residual), "false", 1, 0,
     "x + attn(norm1 x) + mlp(norm2 x) (GPT-NeoX) instead of one branch after the other"},
    {"rotary-dim", AX_CFG_INT, F(rotary_dim), "0", 0, 65536,
     "dims of each head that rotate (even, <= head size; 0 = the whole head)"},
    {"pos", AX_CFG_CHOICE, F(pos), "rope|learned", 1, 0,
     "positions: rotary, or a learned table added to the embedding (needs --max-pos)"},
    {"max-pos", AX_CFG_INT, F(max_pos), "0", 0, 1 << 20,
     "rows of the learned position table (--pos learned; >= --seq-len)"},
    {"kv-heads", AX_CFG_INT, F(kv_heads), "0", 0, 1024,
     "grouped-query attention: K/V heads shared by groups of query heads (divides --heads; "
     "0 = one per head)"},
    {"seq-len", AX_CFG_INT, F(seq_len), "128", 2, 1 << 20, "tokens per training sequence T"},
    {"batch", AX_CFG_INT, F(batch), "16", 1, 1 << 24, "global sequences per optimizer step"},
    {"micro-batch", AX_CFG_INT, F(micro_batch), "0", 0, 1 << 24,
     "sequences per forward/backward (0 = --batch); gradients accumulate over the rest"},
    {"steps", AX_CFG_INT, F(steps), "200", 1, 1e12, "optimizer steps in the run"},
    {"lr", AX_CFG_FLOAT, F(lr), "1e-3", 0, 10, "peak learning rate"},
    {"min-lr-frac", AX_CFG_FLOAT, F(min_lr_frac), "0.1", 0, 1, "cosine schedule ends at lr x this"},
    {"warmup", AX_CFG_INT, F(warmup), "20", 0, 1e12, "linear warm-up steps"},
    {"weight-decay", AX_CFG_FLOAT, F(weight_decay), "0.1", 0, 10,
     "AdamW decoupled weight decay (matrices only)"},
    {"beta1", AX_CFG_FLOAT, F(beta1), "0.9", 0, 0.999999, "AdamW beta1"},
    {"beta2", AX_CFG_FLOAT, F(beta2), "0.95", 0, 0.999999, "AdamW beta2"},
    {"eps", AX_CFG_FLOAT, F(eps), "1e-8", 0, 1, "AdamW epsilon"},
    {"grad-clip", AX_CFG_FLOAT, F(grad_clip), "1.0", 0, 1e9,
     "clip the global gradient norm to this (0 = off)"},
    {"dp-clip", AX_CFG_FLOAT, F(dp_clip), "0", 0, 1e9,
     "DP-SGD (docs/privacy.md): clip each example's gradient over all parameters to this L2 "
     "norm, add Gaussian noise once to their sum, draw examples by Poisson sampling; needs "
     "--dp-noise or --dp-epsilon, and --dp-delta (0 = off)"},
    {"dp-noise", AX_CFG_FLOAT, F(dp_noise), "0", 0, 1e6,
     "DP-SGD noise multiplier sigma: the noise on the sum of clipped gradients is N(0, sigma^2 "
     "x dp-clip^2) per parameter (or give --dp-epsilon)"},
    {"dp-epsilon", AX_CFG_FLOAT, F(dp_epsilon), "0", 0, 1e6,
     "DP-SGD target epsilon: the noise multiplier is the least that keeps the whole run "
     "(--steps at the sampling rate) within (epsilon, --dp-delta) (Renyi DP accountant, as "
     "`axmem dp`)"},
    {"dp-delta", AX_CFG_FLOAT, F(dp_delta), "0", 0, 1,
     "DP-SGD delta of the (epsilon, delta) guarantee: below 1 / the examples in --data (one "
     "window of --seq-len tokens each, or one document with --packing doc)"},
    {"dp-sample-rate", AX_CFG_FLOAT, F(dp_sample_rate), "0", 0, 1,
     "DP-SGD Poisson sampling rate q: each example joins a step independently with this "
     "probability, so batches vary in size (0 = --batch / examples: an expected batch of "
     "--batch)"},
    AX_CFG_SEED_ENTRY(F, "1234",
                      "seed for initialisation and data order (the only source of randomness)"),
    {"ckpt-every", AX_CFG_INT, F(ckpt_every), "0", 0, 1e12,
     "write a checkpoint every N steps (0 = only at the end)"},
    {"log-every", AX_CFG_INT, F(log_every), "10", 1, 1e12, "progress line every N steps"},
    AX_CFG_THREADS_ENTRY(F),
    {"resume", AX_CFG_BOOL, F(resume), "false", 1, 0,
     "continue from the newest checkpoint in --out with the run's own settings (same losses, "
     "bit for bit, on CPU); flags given override only where safe"},
    {"init", AX_CFG_STR, F(init), "", 1, 0,
     "fine-tune: start this new run (step 0, fresh AdamW moments) from the weights of a "
     "checkpoint (a run, ckpt or step directory; trained or `axmem model import`ed); the "
     "model shape comes from it"},
    {"goldfish", AX_CFG_STR, F(goldfish), "none", 1, 0,
     "goldfish loss: none | static:k=K | hash:k=K,h=H[,seed=S] (hash = k=4,h=13): drop a "
     "text-determined 1/k of targets so no passage is learned verbatim"},
    {"packing", AX_CFG_CHOICE, F(packing), "packed|doc", 1, 0,
     "packed: windows cut from the document stream; doc: one document per sequence from its "
     "start, padded (padding is never a target)"},
    {"val-data", AX_CFG_STR, F(val_data), "", 1, 0,
     "held-out dataset (.axd, same tokenizer): val_loss in metrics.jsonl"},
    {"val-every", AX_CFG_INT, F(val_every), "0", 0, 1e12,
     "validate every N steps (0 = only at the end; needs --val-data)"},
    {"val-batches", AX_CFG_INT, F(val_batches), "4", 1, 1e6,
     "batches of --batch sequences per validation (fixed windows: comparable across runs)"},
    AX_CFG_GRID_ENTRY(
        F, "process grid DxXxYxZ: data x 3D tensor parallel (launch D*X*Y*Z ranks with mpirun)"),
    AX_CFG_DEVICE_ENTRY(F, "where the model computes (cuda needs a build with scons cuda=yes); a "
                           "run may resume on another device"),
    AX_CFG_PRECISION_ENTRY(F),
    AX_CFG_COMM_ENTRY(F),
    {"overlap", AX_CFG_BOOL, F(overlap), "true", 1, 0,
     "overlap communication with compute (AxoNN OAR/ORS/OAG) on the grid axes where it can help "
     "(an axis whose ranks share one host starts blocking; the first steps time both schedules "
     "there and keep the faster: docs/grid.md); --no-overlap: never"},
    {"force-overlap", AX_CFG_BOOL, F(force_overlap), "false", 1, 0,
     "overlap on every grid axis, even where --overlap would fall back (for measurement)"},
    {"recompute", AX_CFG_BOOL, F(recompute), "false", 1, 0,
     "activation checkpointing: keep only each layer's input and recompute the rest in the "
     "backward (about a third more compute; activation memory per layer falls ~10x for the "
     "Llama shapes; same results bit for bit). For long sequences or large micro-batches"},
    {"z-gather", AX_CFG_CHOICE, F(z_gather), "step|layer", 1, 0,
     "with Z > 1 in --grid: step gathers every layer's weights over Z once per step and keeps "
     "them; layer gathers each layer's just before its forward and its backward and keeps two "
     "(AxoNN at scale, ZeRO-3: ~L/2 less memory for more gathers, gradients reduce-scattered "
     "every micro-batch)"},
    {"grad-comm", AX_CFG_CHOICE, F(grad_comm), "fp32|bf16", 1, 0,
     "the type gradients are reduced in over the grid (Z reduce-scatters, data all-reduce): "
     "bf16 moves half the bytes, rounding each partial sum to bf16 (a relative 2^-9), as AxoNN "
     "and Megatron-LM reduce at scale; the update stays fp32. Costs bf16 staging of half the "
     "gradient blocks; nothing changes on a grid with D = Z = 1"},
    {"exit-after-steps", AX_CFG_INT, F(exit_after_steps), "0", 0, 1e12,
     "stop after N steps of this invocation with a checkpoint, exit 75 (0 = off): "
     "scheduler-sized chunks of one run; the schedule still ends at --steps"},
    {"exit-after-minutes", AX_CFG_FLOAT, F(exit_after_minutes), "0", 0, 1e9,
     "stop with a checkpoint, exit 75, before a step that would end later than M minutes "
     "after start (judged from the slowest step so far; 0 = off)"},
    {"stall-timeout", AX_CFG_FLOAT, F(stall_timeout), "600", 0, 1e9,
     "multi-rank runs: fail the job when a rank waits longer than this many seconds in one "
     "collective (another rank stalled or died; 0 = off)"},
    {"scan-every", AX_CFG_INT, F(scan_every), "0", 0, 1e12,
     "every N steps write a checkpoint and probe it for memorized training text on the "
     "training ranks; a record in metrics.jsonl, a warning when extraction rises (0 = off)"},
    {"scan-config", AX_CFG_STR, F(scan_config), "", 1, 0,
     "the probe's settings for --scan-every: `name = value` lines or a JSON object of `axmem "
     "memscan probe` flags (samples, prefix, suffix, offset, seed, batch, data, index, "
     "tokenizer); checked before training starts"},
};
#undef F

const ax_cfg_table ax_train_table = {
    .usage = "axmem train --data FILE.axd [flags]",
    .summary = "Train a decoder-only transformer (Llama by default: RMSNorm, RoPE, SwiGLU; --arch\n"
               "neox or gpt2 for GPT-NeoX/Pythia or GPT-2) with AdamW, warm-up + cosine\n"
               "learning rate and gradient clipping. Writes OUT/metrics.jsonl (one JSON object\n"
               "per step) and checkpoints OUT/ckpt/step-NNNNNN/ (atomic; never overwritten).\n"
               "Flags may also come from --config FILE (lines of `name = value`).\n"
               "Ctrl-C, SIGTERM, SIGUSR1 stop at the next step with a checkpoint (exit 128 +\n"
               "signal; --exit-after-* exit 75); `axmem train --out DIR --resume` alone\n"
               "continues a run with its own settings (the checkpoint's manifest, whose\n"
               "training state is checked first: an edited or impossible field is refused).\n"
               "One run at a time holds OUT (OUT/.lock: a second is refused naming the first;\n"
               "a lock left by a dead run on this host is taken over). A step whose loss or\n"
               "gradient norm is NaN or infinite stops the run (exit 1) naming the step; no\n"
               "checkpoint is ever written holding a NaN or an infinity. --dp-clip trains with\n"
               "DP-SGD: Poisson-sampled examples, each gradient clipped, Gaussian noise, and\n"
               "epsilon after every step in metrics.jsonl and the manifest (docs/privacy.md).",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

typedef struct {
    const char *name;
    int64_t layers, dim, heads, ffn;
} preset;

/* gpt2-124m: GPT-2 small's 12 x 768 x 12 heads; a SwiGLU of 2048 keeps the MLP at GPT-2's
 * 4.7M parameters per block (3 x 768 x 2048 vs 2 x 768 x 3072) */
static const preset presets[] = {
    {"tiny", 2, 128, 4, 352},
    {"small", 6, 384, 6, 1024},
    {"gpt2-124m", 12, 768, 12, 2048},
};

static int idx_of(const char *name) {
    const ax_cfg_entry *e = ax_cfg_find(&ax_train_table, name);
    return e ? (int)(e - ax_train_table.entries) : -1;
}

int ax_train_flag_set(const uint8_t *was_set, const char *name) {
    int i = idx_of(name);
    return was_set && i >= 0 && was_set[i];
}
#define set ax_train_flag_set

/* --arch: the group's values for the architecture flags the user did not set */
static void apply_arch(ax_train_config *c, const uint8_t *was_set) {
    int neox = !strcmp(c->arch, "neox"), gpt2 = !strcmp(c->arch, "gpt2");
    if (!neox && !gpt2) return; /* llama: the flags' own defaults */
    if (!set(was_set, "norm")) snprintf(c->norm, sizeof c->norm, "layer");
    if (!set(was_set, "mlp")) snprintf(c->mlp, sizeof c->mlp, "%s", neox ? "gelu" : "gelu-tanh");
    if (!set(was_set, "bias")) c->bias = 1;
    if (neox) {
        if (!set(was_set, "parallel-residual")) c->parallel_residual = 1;
        /* Pythia's rotary_pct 0.25, kept even */
        int64_t d = c->heads ? c->dim / c->heads : 0, rd = d / 4 / 2 * 2;
        if (!set(was_set, "rotary-dim")) c->rotary_dim = rd >= 2 ? rd : 2;
        if (!set(was_set, "tie-embeddings")) c->tie_embeddings = 0; /* Pythia's are untied */
    } else {
        if (!set(was_set, "pos")) snprintf(c->pos, sizeof c->pos, "learned");
        if (!set(was_set, "max-pos")) c->max_pos = c->seq_len;
        if (!set(was_set, "tie-embeddings")) c->tie_embeddings = 1;
    }
}

ax_status ax_train_apply_preset(ax_train_config *c, const uint8_t *was_set) {
    const preset *p = NULL;
    for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
        if (!strcmp(presets[i].name, c->model)) p = &presets[i];
    if (!p) /* the table admits only presets; a struct filled in code may hold anything */
        return ax_errorf(AX_ERR_ARG,
                         "--model '%s' is not a preset; use tiny, small or gpt2-124m "
                         "(or set --layers --dim --heads --ffn)",
                         c->model);
    if (!c->layers) c->layers = p->layers;
    if (!c->dim) c->dim = p->dim;
    if (!c->heads) c->heads = p->heads;
    if (!c->ffn) c->ffn = p->ffn;
    apply_arch(c, was_set);
    return AX_OK;
}

ax_model_config ax_train_model_config(const ax_train_config *c) {
    ax_model_config m = {
        .n_layers = (int)c->layers,
        .dim = (int)c->dim,
        .n_heads = (int)c->heads,
        .ffn = (int)c->ffn,
        .vocab = (int)c->vocab,
        .tie_embeddings = c->tie_embeddings,
        .rope_theta = (float)c->rope_theta,
        .norm_eps = (float)c->norm_eps,
        .norm = !strcmp(c->norm, "layer") ? AX_NORM_LAYER : AX_NORM_RMS,
        .mlp = !strcmp(c->mlp, "gelu")        ? AX_MLP_GELU
               : !strcmp(c->mlp, "gelu-tanh") ? AX_MLP_GELU_TANH
                                              : AX_MLP_SWIGLU,
        .bias = c->bias != 0,
        .parallel_residual = c->parallel_residual != 0,
        .rotary_dim = (int)c->rotary_dim,
        .pos = !strcmp(c->pos, "learned") ? AX_POS_LEARNED : AX_POS_ROPE,
        .max_pos = (int)c->max_pos,
        .n_kv_heads = (int)c->kv_heads,
    };
    return m;
}

ax_status ax_train_config_check(const ax_train_config *c) {
    AX_CHECK(ax_comm_check(c->comm)); /* a transport this build lacks fails before any rank */
    if (c->force_overlap && !c->overlap)
        return ax_errorf(AX_ERR_ARG, "--force-overlap contradicts --no-overlap: drop one of them");
    if (!c->data[0])
        return ax_errorf(AX_ERR_ARG, "--data is required: a .axd dataset from `axmem data encode`");
    int64_t mb = c->micro_batch ? c->micro_batch : c->batch;
    if (mb > c->batch || c->batch % mb)
        return ax_errorf(AX_ERR_ARG, "--micro-batch %lld must divide --batch %lld", (long long)mb,
                         (long long)c->batch);
    if (c->scan_every > 0 && !c->scan_config[0])
        return ax_errorf(AX_ERR_ARG,
                         "--scan-every %lld needs --scan-config FILE (the probe's "
                         "settings; see README \"Memorization over training\")",
                         (long long)c->scan_every);
    if (c->warmup > c->steps)
        return ax_errorf(AX_ERR_ARG, "--warmup %lld exceeds --steps %lld", (long long)c->warmup,
                         (long long)c->steps);
    return AX_OK;
}

int ax_train_dp_on(const ax_train_config *c) {
    return c->dp_clip > 0;
}

ax_status ax_train_dp_check(const ax_train_config *c, const uint8_t *was_set) {
    static const char *const needs_clip[] = {"dp-noise", "dp-epsilon", "dp-delta",
                                             "dp-sample-rate"};
    if (set(was_set, "dp-clip") && !(c->dp_clip > 0))
        return ax_errorf(AX_ERR_ARG, "--dp-clip must be above 0: it is the L2 norm each "
                                     "example's gradient is clipped to (drop it to train "
                                     "without DP-SGD)");
    if (!ax_train_dp_on(c)) {
        for (size_t i = 0; i < sizeof needs_clip / sizeof needs_clip[0]; i++)
            if (set(was_set, needs_clip[i]))
                return ax_errorf(AX_ERR_ARG,
                                 "--%s is a DP-SGD setting: give --dp-clip C (the per-example "
                                 "clipping norm) to train with DP-SGD, or drop --%s",
                                 needs_clip[i], needs_clip[i]);
        return AX_OK;
    }
    int noise = c->dp_noise > 0 || set(was_set, "dp-noise");
    int eps = c->dp_epsilon > 0 || set(was_set, "dp-epsilon");
    if (noise && eps)
        return ax_errorf(AX_ERR_ARG,
                         "--dp-noise and --dp-epsilon both given: give the noise multiplier, or "
                         "the target epsilon it is solved for, not both");
    if (!noise && !eps)
        return ax_errorf(AX_ERR_ARG,
                         "--dp-clip needs the noise: --dp-noise SIGMA, or --dp-epsilon EPS "
                         "--dp-delta DELTA to solve for it");
    if (noise && !(c->dp_noise > 0))
        return ax_errorf(AX_ERR_ARG,
                         "--dp-noise must be above 0: without noise there is no guarantee");
    if (eps && !(c->dp_epsilon > 0)) return ax_errorf(AX_ERR_ARG, "--dp-epsilon must be above 0");
    if (!(c->dp_delta > 0 && c->dp_delta < 1))
        return ax_errorf(AX_ERR_ARG,
                         "--dp-delta is missing: DP-SGD needs the delta of its (epsilon, delta) "
                         "guarantee, well below 1 / the number of examples (e.g. 1e-5 for "
                         "10000 examples)");
    if (set(was_set, "dp-sample-rate") && !(c->dp_sample_rate > 0))
        return ax_errorf(AX_ERR_ARG, "--dp-sample-rate must be above 0 (or drop it: --batch / "
                                     "examples)");
    if (set(was_set, "grad-clip"))
        return ax_errorf(AX_ERR_ARG,
                         "--grad-clip with --dp-clip: DP-SGD clips each example's gradient to "
                         "--dp-clip and the noised sum must not be clipped again; drop "
                         "--grad-clip");
    return AX_OK;
}

/* A float setting from the checkpoint's config: its own text when stored (so the new manifest
 * says 5150, not 5150.0000001), else the float the model read. */
static double ckpt_num(const ax_json *ckpt_config, const char *key, float model_value) {
    const ax_json *v = ax_json_get(ckpt_config, key);
    return v && v->type == AX_JSON_NUM && (float)v->num == model_value ? v->num
                                                                       : (double)model_value;
}

/* --init: the architecture is the checkpoint's; a flag set to something else is an error */
static ax_status arch_from_init(ax_train_config *c, const uint8_t *was_set,
                                const ax_model_config *mc, const char *ckpt_path) {
    static const char *const norms[] = {"rms", "layer"},
                             *const mlps[] = {"swiglu", "gelu", "gelu-tanh"},
                             *const poss[] = {"rope", "learned"};
    if (set(was_set, "arch"))
        return ax_errorf(AX_ERR_ARG,
                         "--arch %s and --init %s: a fine-tuned model has the architecture of "
                         "its checkpoint; drop --arch",
                         c->arch, ckpt_path);
    ax_train_config theirs = *c;
    snprintf(theirs.norm, sizeof theirs.norm, "%s", norms[mc->norm]);
    snprintf(theirs.mlp, sizeof theirs.mlp, "%s", mlps[mc->mlp]);
    snprintf(theirs.pos, sizeof theirs.pos, "%s", poss[mc->pos]);
    theirs.bias = mc->bias, theirs.parallel_residual = mc->parallel_residual;
    theirs.rotary_dim = mc->rotary_dim, theirs.max_pos = mc->max_pos;
    theirs.kv_heads = mc->n_kv_heads;
    static const char *const flags[] = {
        "norm", "mlp", "pos", "bias", "parallel-residual", "rotary-dim", "max-pos", "kv-heads"};
    for (size_t i = 0; i < sizeof flags / sizeof flags[0]; i++) {
        const ax_cfg_entry *e = ax_cfg_find(&ax_train_table, flags[i]);
        const char *mine = (const char *)c + e->offset, *other = (const char *)&theirs + e->offset;
        int differs = ax_cfg_is_text(e->type)  ? strcmp(mine, other) != 0
                      : e->type == AX_CFG_BOOL ? !*(const int *)mine != !*(const int *)other
                                               : *(const int64_t *)mine != *(const int64_t *)other;
        if (set(was_set, flags[i]) && differs)
            return ax_errorf(AX_ERR_MISMATCH,
                             "--%s differs from the architecture of --init %s; drop --%s (the "
                             "checkpoint decides)",
                             flags[i], ckpt_path, flags[i]);
    }
    memcpy(c->norm, theirs.norm, sizeof c->norm);
    memcpy(c->mlp, theirs.mlp, sizeof c->mlp);
    memcpy(c->pos, theirs.pos, sizeof c->pos);
    c->bias = theirs.bias, c->parallel_residual = theirs.parallel_residual;
    c->rotary_dim = theirs.rotary_dim, c->max_pos = theirs.max_pos;
    c->kv_heads = theirs.kv_heads;
    return AX_OK;
}

ax_status ax_train_shape_from_init(ax_train_config *c, const uint8_t *was_set,
                                   const ax_model_config *shape, const ax_json *ckpt_config,
                                   const char *ckpt_path) {
    ax_model_config mc = *shape;
    if (set(was_set, "model"))
        return ax_errorf(AX_ERR_ARG,
                         "--model %s and --init %s: a fine-tuned model has the shape of its "
                         "checkpoint (%d layers, dim %d); drop --model",
                         c->model, ckpt_path, mc.n_layers, mc.dim);
    struct {
        const char *flag;
        int64_t *mine;
        int64_t theirs;
    } ints[] = {{"layers", &c->layers, mc.n_layers},
                {"dim", &c->dim, mc.dim},
                {"heads", &c->heads, mc.n_heads},
                {"ffn", &c->ffn, mc.ffn},
                {"vocab", &c->vocab, mc.vocab}};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        if (set(was_set, ints[i].flag) && *ints[i].mine != ints[i].theirs)
            return ax_errorf(AX_ERR_MISMATCH,
                             "--%s %lld differs from %lld in --init %s; the model shape comes "
                             "from the checkpoint: drop --%s",
                             ints[i].flag, (long long)*ints[i].mine, (long long)ints[i].theirs,
                             ckpt_path, ints[i].flag);
        *ints[i].mine = ints[i].theirs;
    }
    if (set(was_set, "tie-embeddings") && !c->tie_embeddings != !mc.tie_embeddings)
        return ax_errorf(AX_ERR_MISMATCH,
                         "--tie-embeddings %s differs from %s in --init %s; drop it (the "
                         "checkpoint decides)",
                         c->tie_embeddings ? "true" : "false", mc.tie_embeddings ? "true" : "false",
                         ckpt_path);
    c->tie_embeddings = mc.tie_embeddings;
    struct {
        const char *flag;
        double *mine;
        float theirs;
    } fl[] = {{"rope-theta", &c->rope_theta, mc.rope_theta},
              {"norm-eps", &c->norm_eps, mc.norm_eps}};
    for (size_t i = 0; i < sizeof fl / sizeof fl[0]; i++) {
        if (set(was_set, fl[i].flag) && (float)*fl[i].mine != fl[i].theirs)
            return ax_errorf(AX_ERR_MISMATCH,
                             "--%s %g differs from %g in --init %s; drop --%s (the checkpoint "
                             "decides)",
                             fl[i].flag, *fl[i].mine, (double)fl[i].theirs, ckpt_path, fl[i].flag);
        *fl[i].mine = ckpt_num(ckpt_config, fl[i].flag, fl[i].theirs);
    }
    return arch_from_init(c, was_set, &mc, ckpt_path);
}

/* How --resume treats each flag (the rest are FIXED: the checkpoint's value, and a different
 * value on the command line is an error naming the flag). */
typedef enum {
    FIXED,      /* what the run computes: model, optimizer, data order, goldfish, validation */
    INVOCATION, /* this command only: never taken from the checkpoint */
    OVERRIDE,   /* the checkpoint's value unless given: how it runs, not what it computes */
    MOVABLE,    /* a dataset path: may point elsewhere when the contents (checksum) are equal */
    SCHEDULE,   /* --steps: may change, but the learning-rate schedule changes with it */
} resume_rule;

static const struct {
    const char *name;
    resume_rule rule;
} resume_rules[] = {
    {"out", INVOCATION},
    {"resume", INVOCATION},
    {"exit-after-steps", INVOCATION},
    {"exit-after-minutes", INVOCATION},
    {"stall-timeout", INVOCATION},
    {"threads", OVERRIDE},
    {"grid", OVERRIDE},
    {"overlap", OVERRIDE},
    {"force-overlap", OVERRIDE},
    {"recompute", OVERRIDE}, /* the same results bit for bit */
    {"z-gather", OVERRIDE},  /* where the weights wait, not what is computed */
    {"grad-comm", OVERRIDE}, /* rounding of the reduced gradients, not the model */
    {"device", OVERRIDE},
    {"precision", OVERRIDE}, /* master weights and moments are fp32 either way */
    {"comm", OVERRIDE},
    {"log-every", OVERRIDE},
    {"ckpt-every", OVERRIDE},
    {"tokenizer", OVERRIDE},
    {"scan-every", OVERRIDE}, /* scans read checkpoints, never change the training */
    {"scan-config", OVERRIDE},
    {"data", MOVABLE},
    {"val-data", MOVABLE},
    {"steps", SCHEDULE},
};

static resume_rule rule_of(const char *name) {
    for (size_t i = 0; i < sizeof resume_rules / sizeof resume_rules[0]; i++)
        if (!strcmp(resume_rules[i].name, name)) return resume_rules[i].rule;
    return FIXED;
}

static size_t field_size(const ax_cfg_entry *e) {
    switch (e->type) {
    case AX_CFG_STR:
    case AX_CFG_CHOICE:
        return AX_CFG_STR_MAX;
    case AX_CFG_INT:
        return sizeof(int64_t);
    case AX_CFG_FLOAT:
        return sizeof(double);
    case AX_CFG_BOOL:
        return sizeof(int);
    case AX_CFG_STRLIST: /* train has no list flags; pointers would never compare equal */
        return 0;
    }
    return 0;
}

/* The value of field e of c as a user would type it. */
static const char *field_text(const ax_train_config *c, const ax_cfg_entry *e, char *buf,
                              size_t n) {
    const char *p = (const char *)c + e->offset;
    switch (e->type) {
    case AX_CFG_STR:
    case AX_CFG_CHOICE:
        snprintf(buf, n, "'%s'", p);
        break;
    case AX_CFG_INT:
        snprintf(buf, n, "%lld", (long long)*(const int64_t *)p);
        break;
    case AX_CFG_FLOAT:
        snprintf(buf, n, "%g", *(const double *)p);
        break;
    case AX_CFG_BOOL:
        snprintf(buf, n, "%s", *(const int *)p ? "true" : "false");
        break;
    default:
        snprintf(buf, n, "?");
    }
    return buf;
}

/* A setting in a checkpoint's manifest that this axmem cannot accept (out of range, wrong
 * type): the manifest was edited or damaged, which the flag-style message does not say. */
static ax_status manifest_setting(ax_status st, const char *ckpt_path) {
    if (st == AX_OK) return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", ax_error_msg());
    ax_error_clear(); /* the first message wins: replace it with the fuller one */
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s (a setting in %s/manifest.json); the manifest was edited or damaged, so "
                     "no run can continue from it: move it aside (mv %s %s.bad) and --resume "
                     "from the checkpoint before it, or retrain",
                     msg, ckpt_path, ckpt_path, ckpt_path);
}

static void copy_field(ax_train_config *dst, const ax_train_config *src, const ax_cfg_entry *e) {
    memcpy((char *)dst + e->offset, (const char *)src + e->offset, field_size(e));
}

ax_status ax_train_manifest_setting(ax_status st, const char *ckpt_path) {
    return manifest_setting(st, ckpt_path);
}

ax_status ax_train_merge_resumed(ax_train_config *c, const uint8_t *was_set,
                                 const ax_json *ckpt_config, const char *ckpt_path,
                                 long ckpt_step) {
    ax_train_config merged = *c, defaults;
    /* A setting that decides what is computed but is missing from the manifest was added after
     * that run was written (norm-eps, the architecture flags: Llama, goldfish, packing,
     * validation, init): the run used its default, whatever this command line says. */
    AX_CHECK(ax_cfg_set_defaults(&ax_train_table, &defaults));
    for (int i = 0; i < ax_train_table.n; i++) {
        const ax_cfg_entry *e = &ax_train_table.entries[i];
        if (rule_of(e->name) == FIXED && !ax_json_get(ckpt_config, e->name))
            copy_field(&merged, &defaults, e);
    }
    AX_CHECK(manifest_setting(ax_cfg_read_json(&ax_train_table, &merged, ckpt_config, ckpt_path),
                              ckpt_path));
    const ax_train_config *ck = &merged; /* before the command line's values go in */
    ax_train_config out = merged;
    for (int i = 0; i < ax_train_table.n; i++) {
        const ax_cfg_entry *e = &ax_train_table.entries[i];
        const char *mine = (const char *)c + e->offset;
        const char *theirs = (const char *)ck + e->offset;
        int differs = ax_cfg_is_text(e->type) ? strcmp(mine, theirs) != 0
                                              : memcmp(mine, theirs, field_size(e)) != 0;
        resume_rule rule = rule_of(e->name);
        if (rule == INVOCATION || (set(was_set, e->name) && rule != FIXED)) copy_field(&out, c, e);
        if (!set(was_set, e->name) || !differs || rule != FIXED) continue;
        char a[AX_CFG_STR_MAX + 8], b[AX_CFG_STR_MAX + 8];
        return ax_errorf(AX_ERR_MISMATCH,
                         "--%s %s differs from the run being resumed (%s in %s); a resumed run "
                         "keeps its training settings: drop --%s, or start a new --out",
                         e->name, field_text(c, e, a, sizeof a), field_text(ck, e, b, sizeof b),
                         ckpt_path, e->name);
    }
    if (out.steps != ck->steps) {
        ax_lr_schedule was = {ck->lr, ck->min_lr_frac, (long)ck->warmup, (long)ck->steps};
        ax_lr_schedule now = {out.lr, out.min_lr_frac, (long)out.warmup, (long)out.steps};
        if (ax_mpi_world_rank() == 0)
            AX_WARN("--steps %lld changes this run's length (it was %lld): the cosine learning-"
                    "rate schedule is recomputed for %lld steps, so the learning rate at step %ld "
                    "becomes %.3g instead of %.3g and the run no longer matches an uninterrupted "
                    "one (warm-up stays %lld steps). To stop early without changing the schedule "
                    "use --exit-after-steps.",
                    (long long)out.steps, (long long)ck->steps, (long long)out.steps, ckpt_step + 1,
                    ax_lr_at(&now, ckpt_step), ax_lr_at(&was, ckpt_step), (long long)out.warmup);
    }
    *c = out;
    return AX_OK;
}
