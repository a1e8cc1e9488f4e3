/* Checks of a checkpoint's training state before a run continues from it (train_state.h). */
#include "train/train_state.h"
#include "lib/core/json.h"
#include "lib/dist/grid.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* counts are integers a double holds exactly */
#define COUNT_MAX ((int64_t)1 << 53)

/* The settings that decide what a run computes and that every train manifest has recorded.
 * Settings added since (goldfish, packing, validation, init, norm-eps, the architecture) may be
 * missing from an older manifest: the run used their defaults (ax_train_merge_resumed). */
static const char *const always_recorded[] = {
    "model",      "layers",       "dim",   "heads",       "ffn",   "vocab",     "tie-embeddings",
    "rope-theta", "seq-len",      "batch", "micro-batch", "steps", "lr",        "min-lr-frac",
    "warmup",     "weight-decay", "beta1", "beta2",       "eps",   "grad-clip", "seed"};

typedef struct {
    const ax_ckpt_t *ck;
    ax_state_use use;
    char manifest[4200];
} checker;

/* "MANIFEST: OBJ "KEY" WHAT; ...what to do": the one message of every refusal */
static ax_status refuse(const checker *k, const char *obj, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ax_status refuse(const checker *k, const char *obj, const char *key, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    const char *dir = ax_ckpt_path(k->ck);
    if (k->use == AX_STATE_INIT)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: %s \"%s\" %s; the manifest was edited or damaged: pass another "
                         "checkpoint to --init",
                         k->manifest, obj, key, what);
    return ax_errorf(AX_ERR_CORRUPT,
                     "%s: %s \"%s\" %s; the manifest was edited or damaged, so no run can "
                     "continue from it: move it aside (mv %s %s.bad) and --resume from the "
                     "checkpoint before it, or retrain",
                     k->manifest, obj, key, what, dir, dir);
}

/* An integer field in [lo, hi]. *has: whether it is there; missing is an error when required. */
static ax_status get_int(const checker *k, const ax_json *obj, const char *oname, const char *key,
                         int required, int64_t lo, int64_t hi, int64_t *out, int *has) {
    const ax_json *v = ax_json_get(obj, key);
    *has = v != NULL;
    if (!v) return required ? refuse(k, oname, key, "is missing") : AX_OK;
    if (v->type != AX_JSON_NUM)
        return refuse(k, oname, key, "is %s, not an integer", ax_json_type_name(v->type));
    if (!ax_json_int_in(v, lo, hi, out))
        return refuse(k, oname, key, "is %.17g, not an integer in [%lld, %lld]", v->num,
                      (long long)lo, (long long)hi);
    return AX_OK;
}

/* A u64 written as "0x..." (checksums). */
static ax_status get_hex(const checker *k, const ax_json *obj, const char *oname, const char *key,
                         int required, int *has) {
    const ax_json *v = ax_json_get(obj, key);
    *has = v != NULL;
    if (!v) return required ? refuse(k, oname, key, "is missing") : AX_OK;
    uint64_t x;
    if (v->type == AX_JSON_STR && ax_json_get_hex64(obj, key, k->manifest, &x) == AX_OK)
        return AX_OK;
    ax_error_clear(); /* replaced by the message below, which says what to do */
    return refuse(k, oname, key, "is %s, not a checksum like \"0x1f2e...\"",
                  v->type == AX_JSON_STR ? "a string of another form" : ax_json_type_name(v->type));
}

/* A string field that, when there, is not empty. */
static ax_status get_str(const checker *k, const ax_json *obj, const char *oname, const char *key,
                         const char **out, int *has) {
    const ax_json *v = ax_json_get(obj, key);
    *has = v != NULL;
    *out = "";
    if (!v) return AX_OK;
    if (v->type != AX_JSON_STR || strlen(v->str) != v->str_len)
        return refuse(k, oname, key, "is %s, not a plain string", ax_json_type_name(v->type));
    *out = v->str;
    return AX_OK;
}

/* The manifest's step against the state's counts (--resume and --init alike). */
static ax_status check_counts(const checker *k, const ax_json *state) {
    long step = ax_ckpt_step(k->ck);
    int required = k->use == AX_STATE_RESUME, has;
    int64_t v;
    AX_CHECK(get_int(k, state, "state", "step", required, 0, COUNT_MAX, &v, &has));
    if (has && v != step)
        return refuse(k, "state", "step", "is %lld, but the manifest's \"step\" is %ld",
                      (long long)v, step);
    AX_CHECK(get_int(k, state, "state", "optim_t", required, -COUNT_MAX, COUNT_MAX, &v, &has));
    if (has && v != step)
        return refuse(k, "state", "optim_t",
                      "is %lld, but AdamW takes one update per optimizer step (micro-batches "
                      "accumulate inside it), so at step %ld it is %ld",
                      (long long)v, step, step);
    return AX_OK;
}

/* --resume: the datasets, the fine-tuning start, and the settings */
static ax_status check_resume(const checker *k, const ax_json *state, const ax_json *cfg) {
    int has, has_sum;
    int64_t v;
    AX_CHECK(get_hex(k, state, "state", "dataset_xxh3", 1, &has));
    AX_CHECK(get_int(k, state, "state", "dataset_tokens", 1, 1, COUNT_MAX, &v, &has));
    AX_CHECK(get_hex(k, state, "state", "val_dataset_xxh3", 0, &has));
    const char *init = "", *from = "";
    AX_CHECK(get_str(k, cfg, "config", "init", &init, &has));
    AX_CHECK(get_str(k, state, "state", "init_ckpt", &from, &has));
    AX_CHECK(get_hex(k, state, "state", "init_xxh3", 0, &has_sum));
    if (has && !from[0]) return refuse(k, "state", "init_ckpt", "is empty");
    if (has != has_sum)
        return refuse(k, "state", has ? "init_xxh3" : "init_ckpt",
                      "is missing (init_ckpt and init_xxh3 come together)");
    if (!init[0] != !has)
        return refuse(k, "state", "init_ckpt",
                      init[0] ? "is missing, but the config's \"init\" says the run was "
                                "fine-tuned from %s"
                              : "is there, but the config's \"init\" says the run was not "
                                "fine-tuned%s",
                      init);
    for (size_t i = 0; i < sizeof always_recorded / sizeof always_recorded[0]; i++)
        if (!ax_json_get(cfg, always_recorded[i]))
            return refuse(k, "config", always_recorded[i],
                          "is missing (every train manifest records it)");
    long step = ax_ckpt_step(k->ck);
    AX_CHECK(get_int(k, cfg, "config", "steps", 1, 1, COUNT_MAX, &v, &has));
    if (step > v)
        return refuse(k, "config", "steps",
                      "is %lld, but the manifest is of step %ld: a run never passes its --steps",
                      (long long)v, step);
    return AX_OK;
}

ax_status ax_train_check_state(const ax_ckpt_t *ck, ax_state_use use) {
    checker k = {.ck = ck, .use = use};
    snprintf(k.manifest, sizeof k.manifest, "%s/manifest.json", ax_ckpt_path(ck));
    int dims[4];
    if (ax_grid_parse(ax_ckpt_grid(ck), dims) != AX_OK) {
        ax_error_clear(); /* its message is about the --grid flag */
        return refuse(&k, "the", "grid", "is \"%s\", not DxXxYxZ", ax_ckpt_grid(ck));
    }
    AX_CHECK(check_counts(&k, ax_ckpt_state(ck)));
    if (use == AX_STATE_RESUME) AX_CHECK(check_resume(&k, ax_ckpt_state(ck), ax_ckpt_config(ck)));
    return AX_OK;
}
