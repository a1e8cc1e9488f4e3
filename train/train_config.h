/* `axmem train` settings: one table (train_config.c) drives the flags, --help, config files
 * and the copy in every checkpoint manifest. Flag names are a contract other tools use. */
#pragma once
#include <stdint.h>
#include "lib/core/config.h"
#include "lib/model/model.h"

typedef struct {
    char data[AX_CFG_STR_MAX];
    char tokenizer[AX_CFG_STR_MAX];
    char out[AX_CFG_STR_MAX];
    char model[AX_CFG_STR_MAX];             /* preset name */
    int64_t layers, dim, heads, ffn, vocab; /* 0 = from the preset / the dataset */
    int tie_embeddings;
    double rope_theta;
    double norm_eps; /* RMSNorm epsilon; manifests before it was stored: 1e-5 */
    /* architecture (docs/training.md "Architectures"); the defaults are Llama's */
    char arch[AX_CFG_STR_MAX]; /* llama | neox | gpt2: defaults for the flags below */
    char norm[AX_CFG_STR_MAX]; /* rms | layer */
    char mlp[AX_CFG_STR_MAX];  /* swiglu | gelu | gelu-tanh */
    int bias, parallel_residual;
    int64_t rotary_dim;
    char pos[AX_CFG_STR_MAX]; /* rope | learned */
    int64_t max_pos;
    int64_t kv_heads; /* grouped-query attention: K/V heads (0 = --heads) */
    int64_t seq_len, batch, micro_batch, steps;
    double lr, min_lr_frac;
    int64_t warmup;
    double weight_decay, beta1, beta2, eps, grad_clip;
    /* DP-SGD (train/train_dp.h; all 0: off): per-example clip norm, noise multiplier or the
     * target epsilon it is solved for, delta, Poisson sampling rate (0: --batch / examples) */
    double dp_clip, dp_noise, dp_epsilon, dp_delta, dp_sample_rate;
    int64_t seed;
    int64_t ckpt_every, log_every, threads;
    int resume;
    char init[AX_CFG_STR_MAX];     /* fine-tuning: the checkpoint whose weights start the run */
    char goldfish[AX_CFG_STR_MAX]; /* mask spec, goldfish/goldfish.h */
    char packing[AX_CFG_STR_MAX];  /* packed | doc */
    char val_data[AX_CFG_STR_MAX];
    int64_t val_every, val_batches;
    char grid[AX_CFG_STR_MAX];      /* DxXxYxZ */
    int overlap;                    /* 1: where it helps (AX_OVERLAP_AUTO); 0: --no-overlap */
    int force_overlap;              /* overlap on every axis (AX_OVERLAP_FORCE), for measurement */
    int recompute;                  /* activation recomputation (ax_model_opts.recompute) */
    char z_gather[AX_CFG_STR_MAX];  /* step | layer (ax_model_opts.stream_z) */
    char grad_comm[AX_CFG_STR_MAX]; /* fp32 | bf16 (ax_model_opts.grad_comm_bf16) */
    char device[AX_CFG_STR_MAX];
    char precision[AX_CFG_STR_MAX];
    char comm[AX_CFG_STR_MAX]; /* auto | mpi | nccl (lib/dist/comm.h, ax_comm_select) */
    int64_t exit_after_steps;  /* this invocation only: 0 = off */
    double exit_after_minutes; /* this invocation only: 0 = off */
    double stall_timeout;      /* seconds; 0 = off (lib/core/stop.h) */

    /* memorization scans during training (the hook in train/train_run.h runs them) */
    int64_t scan_every;               /* every N steps; 0 = off */
    char scan_config[AX_CFG_STR_MAX]; /* the scan's settings file */
} ax_train_config;

extern const ax_cfg_table ax_train_table;

/* 1 when was_set (may be NULL: nothing set) marks the flag `name` as given by the user */
int ax_train_flag_set(const uint8_t *was_set, const char *name);
/* Fill shape fields the user left at 0 from the --model preset (the error lists presets), and
 * the architecture flags the user did not set from --arch (neox: layer, gelu, bias,
 * parallel-residual, rotary-dim = head size / 4; gpt2: layer, gelu-tanh, bias, learned
 * positions, max-pos = --seq-len, tied). */
ax_status ax_train_apply_preset(ax_train_config *c, const uint8_t *was_set);
/* Model shape from the settings (vocab must be resolved, i.e. non-zero). */
ax_model_config ax_train_model_config(const ax_train_config *c);
/* Cross-field checks: batch divisible by micro-batch, ranges that depend on each other. */
ax_status ax_train_config_check(const ax_train_config *c);
/* 1 when the settings ask for DP-SGD (--dp-clip above 0) */
int ax_train_dp_on(const ax_train_config *c);
/* The DP-SGD flags together (was_set: the flags the user gave, may be NULL): --dp-clip above 0
 * with exactly one of --dp-noise (above 0) and --dp-epsilon (above 0, with --dp-delta); no other
 * --dp-* flag without --dp-clip, and no --grad-clip beside it (each example is clipped
 * instead). The checks that need the dataset's size are ax_train_dp_resolve's
 * (train/train_dp.h). */
ax_status ax_train_dp_check(const ax_train_config *c, const uint8_t *was_set);
/* On --resume: every setting comes from the checkpoint's manifest, so `--out DIR --resume`
 * alone continues the run exactly. Flags the user set (was_set) override only where safe:
 * threads, grid, overlap, device, log-every, ckpt-every, tokenizer; --data/--val-data may name a
 * moved file (the caller checks its checksum against the checkpoint); --steps may change, with a
 * warning that the learning-rate schedule is recomputed for the new length. out, resume,
 * exit-after-* and stall-timeout always come from this command. Any other flag set to a
 * different value is an error naming it. ckpt_step: the step being resumed from. */
/* On --init: the model shape (layers, dim, heads, ffn, vocab, tie-embeddings, rope-theta,
 * norm-eps and the architecture flags) is the checkpoint's (shape: ax_model_config_from_ckpt of it;
 * ckpt_config: its manifest config, for the exact float texts); a shape flag the user set to
 * another value, or
 * --model, is an error naming both values. */
ax_status ax_train_shape_from_init(ax_train_config *c, const uint8_t *was_set,
                                   const ax_model_config *shape, const ax_json *ckpt_config,
                                   const char *ckpt_path);
ax_status ax_train_merge_resumed(ax_train_config *c, const uint8_t *was_set,
                                 const ax_json *ckpt_config, const char *ckpt_path, long ckpt_step);
/* st, or when it failed, AX_ERR_CORRUPT whose message adds that the setting came from the
 * manifest of checkpoint ckpt_path (edited or damaged) and what to do. */
ax_status ax_train_manifest_setting(ax_status st, const char *ckpt_path);
