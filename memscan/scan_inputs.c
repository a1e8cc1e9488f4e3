/* Checks a scan makes of its inputs before it builds the model (memscan/scan_inputs.h). */
#include "memscan/scan_inputs.h"
#include "data/axd.h"
#include "lib/core/log.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model_io.h"
#include "memscan/model_load.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* The training data the checkpoint records: its checksum (state.dataset_xxh3), path
 * (config.data) and, when the file there is that dataset, its tokenizer's identity. */
static ax_status train_data_of(const ax_ckpt_t *ck, ax_ms_train_data *td) {
    memset(td, 0, sizeof *td);
    const ax_json *state = ax_ckpt_state(ck), *cfg = ax_ckpt_config(ck);
    if (!state || !ax_json_get(state, "dataset_xxh3")) return AX_OK; /* imported: none */
    AX_CHECK(ax_json_get_hex64(state, "dataset_xxh3", ax_ckpt_path(ck), &td->xxh3));
    td->known = 1;
    const ax_json *p = cfg ? ax_json_get(cfg, "data") : NULL;
    if (!p || p->type != AX_JSON_STR || !p->str[0]) return AX_OK;
    snprintf(td->path, sizeof td->path, "%s", p->str);
    ax_axd_t *ds = NULL; /* the header says which dataset it is and who encoded it */
    if (ax_axd_open(td->path, AX_AXD_HEADER_ONLY, &ds) != AX_OK) {
        ax_error_clear(); /* moved or gone: the tokenizer stays unknown */
        return AX_OK;
    }
    if (ax_axd_checksum(ds) == td->xxh3) td->tokenizer = ax_axd_tokenizer_checksum(ds);
    ax_axd_free(ds);
    return AX_OK;
}

/* a warning from rank 0 only: every rank makes the same checks */
#define WARN0(...)                                                                                 \
    do {                                                                                           \
        if (ax_mpi_world_rank() == 0) AX_WARN(__VA_ARGS__);                                        \
    } while (0)

ax_status ax_ms_check_scan_data(const ax_ckpt_t *ck, const ax_ms_scan_data *sd,
                                ax_ms_train_data *td, int *verdict) {
    *verdict = -1;
    AX_CHECK(train_data_of(ck, td));
    if (!td->known) {
        WARN0("memscan %s: checkpoint %s records no training dataset (an imported model), so "
              "%s cannot be checked against it; the scan records data_is_training_data: null",
              sd->cmd, ax_ckpt_path(ck), sd->what);
        return AX_OK;
    }
    if (sd->xxh3 == td->xxh3) {
        *verdict = 1;
        if (sd->not_training_data) {
            WARN0("memscan %s: --not-training-data, but %s is the training data of %s "
                  "(checksum 0x%016" PRIx64 "); the scan records it as such",
                  sd->cmd, sd->what, ax_ckpt_path(ck), td->xxh3);
        }
        return AX_OK;
    }
    *verdict = 0;
    if (td->tokenizer && sd->tokenizer && td->tokenizer != sd->tokenizer) {
        if (!sd->other_tokenizer)
            return ax_errorf(AX_ERR_MISMATCH,
                             "%s was encoded by tokenizer %016" PRIx64 ", but checkpoint %s was "
                             "trained on %s, encoded by tokenizer %016" PRIx64 ": its token ids "
                             "mean other text to the model, so every number would be "
                             "meaningless; encode the data with the training tokenizer (or pass "
                             "--allow-other-tokenizer if this is really meant)",
                             sd->what, sd->tokenizer, ax_ckpt_path(ck), td->path, td->tokenizer);
        WARN0("memscan %s: --allow-other-tokenizer: %s was encoded by tokenizer %016" PRIx64
              ", not the training data's %016" PRIx64 " (%s); the scan records it",
              sd->cmd, sd->what, sd->tokenizer, td->tokenizer, td->path);
    }
    char tok_note[4400] = "";
    if (!td->tokenizer || !sd->tokenizer)
        snprintf(tok_note, sizeof tok_note,
                 "; whether it was encoded by the model's tokenizer cannot be told (%s)",
                 !sd->tokenizer ? "it records no tokenizer identity"
                 : td->path[0]  ? "the training dataset is not at its recorded path"
                                : "the checkpoint records no training dataset path");
    if (sd->refuse_other && !sd->not_training_data)
        return ax_errorf(AX_ERR_MISMATCH,
                         "%s is not the training data of checkpoint %s (checksum 0x%016" PRIx64
                         ", the training data's 0x%016" PRIx64
                         "%s%s)%s: a regurgitation scan of other data does not measure what "
                         "the model memorized; pass the index of the training data, or "
                         "--not-training-data if another corpus is meant (recorded in the scan)",
                         sd->what, ax_ckpt_path(ck), sd->xxh3, td->xxh3, td->path[0] ? ", " : "",
                         td->path, tok_note);
    if (!sd->not_training_data) {
        WARN0("memscan %s: %s is not the training data of %s (checksum 0x%016" PRIx64
              ", the training data's 0x%016" PRIx64 "%s%s)%s: the numbers measure the model on "
              "other data, not memorization of its training data; the scan records "
              "data_is_training_data: false (pass --not-training-data when this is meant, "
              "e.g. held-out data)",
              sd->cmd, sd->what, ax_ckpt_path(ck), sd->xxh3, td->xxh3, td->path[0] ? ", " : "",
              td->path, tok_note);
    }
    return AX_OK;
}

static void hex_or_null(ax_jw *w, uint64_t v) {
    char hex[32];
    if (!v) {
        ax_jw_null(w);
        return;
    }
    snprintf(hex, sizeof hex, "0x%016" PRIx64, v);
    ax_jw_str(w, hex);
}

void ax_ms_scan_data_json(ax_jw *w, const ax_ms_train_data *td, const ax_ms_scan_data *sd,
                          int verdict) {
    ax_jw_key(w, "data_is_training_data");
    if (verdict < 0)
        ax_jw_null(w);
    else
        ax_jw_bool(w, verdict);
    ax_jw_key(w, "training_data");
    if (!td->known) {
        ax_jw_null(w);
    } else {
        ax_jw_obj_begin(w);
        ax_jw_key(w, "path"), ax_jw_str(w, td->path);
        ax_jw_key(w, "xxh3"), hex_or_null(w, td->xxh3);
        ax_jw_key(w, "tokenizer"), hex_or_null(w, td->tokenizer);
        ax_jw_obj_end(w);
    }
    ax_jw_key(w, "data_tokenizer"), hex_or_null(w, sd->tokenizer);
}

/* The context of ck (see ax_ms_model_context); a fine-tuned run (--init) can also decode as far
 * as the checkpoint it started from, which records its own (an imported model's
 * max-positions), so that is followed, a few links deep. */
static ax_status context_of(const ax_ckpt_t *ck, int depth, int *positions, const char **source) {
    ax_model_config c;
    AX_CHECK(ax_model_config_from_ckpt(ck, &c));
    if (c.pos == AX_POS_LEARNED) {
        *positions = c.max_pos, *source = "max-pos";
        return AX_OK;
    }
    const ax_json *cfg = ax_ckpt_config(ck);
    static const char *const keys[] = {"max-positions", "seq-len"};
    for (size_t i = 0; cfg && i < sizeof keys / sizeof *keys && !*positions; i++) {
        const ax_json *v = ax_json_get(cfg, keys[i]);
        int64_t x;
        if (v && ax_json_int_in(v, 1, 1 << 30, &x)) *positions = (int)x, *source = keys[i];
    }
    const ax_json *init = cfg ? ax_json_get(cfg, "init") : NULL;
    if (depth >= 4 || !init || init->type != AX_JSON_STR || !init->str[0]) return AX_OK;
    ax_ckpt_t *base = NULL;
    int p = 0;
    const char *src = "";
    if (ax_ms_ckpt_open(init->str, &base) == AX_OK &&
        context_of(base, depth + 1, &p, &src) == AX_OK && p > *positions)
        *positions = p, *source = "--init checkpoint's context";
    ax_error_clear(); /* a base that moved: the run's own seq-len stands */
    ax_ckpt_free(base);
    return AX_OK;
}

ax_status ax_ms_model_context(const ax_ckpt_t *ck, int *positions, const char **source) {
    *positions = 0;
    *source = "";
    return context_of(ck, 0, positions, source);
}
