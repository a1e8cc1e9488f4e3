/* Deduplication and DP-SGD for `axmem study`, over the parts that provide them: the dedup
 * library (index/dedup_run.h) when this build has it, and the training table's --dp-* flags,
 * set by name, so a build without them says so instead of failing to compile. */
#include "study/study_mitigate.h"
#include "lib/core/config.h"

#include <stdio.h>
#include <string.h>

#if __has_include("index/dedup_run.h")
#include "index/dedup_run.h"
#define HAVE_DEDUP 1
#else
#define HAVE_DEDUP 0
#endif

/* the train flags DP-SGD needs (train/train_config.c) */
static const char *const dp_flags[] = {"dp-clip", "dp-noise", "dp-epsilon", "dp-delta"};

int ax_study_available(const ax_mitigation *m, char *why, size_t n) {
    if (m->kind == AX_MIT_DEDUP && !HAVE_DEDUP) {
        snprintf(why, n, "this build has no training-data deduplication (axmem data dedup)");
        return 0;
    }
    if (m->kind == AX_MIT_DP)
        for (size_t k = 0; k < sizeof dp_flags / sizeof dp_flags[0]; k++)
            if (!ax_cfg_find(&ax_train_table, dp_flags[k])) {
                snprintf(why, n, "this build has no DP-SGD training (axmem train --%s)",
                         dp_flags[k]);
                return 0;
            }
    return 1;
}

ax_status ax_study_dedup(const char *in, int64_t n, const char *out, const char *summary_json) {
#if HAVE_DEDUP
    /* `axmem data dedup --input IN --n N --out OUT`, the command's other defaults; the
     * summary JSON beside the output. TO FINISH AT MERGE: the names below follow the
     * cmd_X.c-over-X_run.c convention (a config table, a run call, a summary); match them to
     * index/dedup_run.h. */
    ax_dedup_opts o;
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)n);
    AX_CHECK(ax_cfg_set_defaults(&ax_dedup_table, &o));
    const char *text[][2] = {{"input", in}, {"n", num}, {"out", out}, {"summary", summary_json}};
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++)
        AX_CHECK(ax_cfg_set(&ax_dedup_table, &o, text[i][0], text[i][1], NULL));
    ax_dedup_summary s;
    AX_CHECK(ax_dedup_run(&o, &s));
    ax_dedup_print(&s, stdout);
    return AX_OK;
#else
    (void)in, (void)n, (void)out, (void)summary_json;
    return ax_errorf(AX_ERR_UNSUPPORTED,
                     "dedup: this build has no training-data deduplication (axmem data dedup)");
#endif
}

ax_status ax_study_dp_config(ax_train_config *c, const ax_mitigation *m) {
    char v[128];
    if (!ax_study_available(m, v, sizeof v))
        return ax_errorf(AX_ERR_UNSUPPORTED, "%s: %s", m->spec, v);
    snprintf(v, sizeof v, "%.17g", m->dp_clip);
    AX_CHECK(ax_cfg_set(&ax_train_table, c, "dp-clip", v, NULL));
    snprintf(v, sizeof v, "%.17g", m->dp_delta);
    AX_CHECK(ax_cfg_set(&ax_train_table, c, "dp-delta", v, NULL));
    snprintf(v, sizeof v, "%.17g", m->dp_epsilon ? m->dp_epsilon : m->dp_noise);
    return ax_cfg_set(&ax_train_table, c, m->dp_epsilon ? "dp-epsilon" : "dp-noise", v, NULL);
}
