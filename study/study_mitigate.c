/* Deduplication and DP-SGD for `axmem study`, through the dedup library and the training
 * table's --dp-* flags. */
#include "study/study_mitigate.h"
#include "index/dedup_run.h"
#include "lib/core/config.h"
#include "lib/core/log.h"

#include <inttypes.h>
#include <stdio.h>

ax_status ax_study_dedup(const char *in, int64_t n, const char *out, const char *summary_json) {
    ax_dedup_opts o;
    ax_dedup_opts_default(&o);
    o.input = in, o.out = out, o.summary = summary_json, o.n = (int)n;
    ax_dedup_result r;
    AX_CHECK(ax_dedup_run(&o, &r));
    AX_INFO("dedup: %s -> %s: removed %" PRIu64 " of %" PRIu64 " tokens (later copies of spans "
            "of >= %d tokens), %" PRIu64 " documents emptied",
            in, out, r.tokens_before - r.tokens_after, r.tokens_before, o.n, r.emptied_docs);
    return AX_OK;
}

ax_status ax_study_dp_config(ax_train_config *c, const ax_mitigation *m, uint64_t n_examples) {
    char v[128];
    if ((uint64_t)c->batch >= n_examples) /* a small member set: every document every step */
        AX_CHECK(ax_cfg_set(&ax_train_table, c, "dp-sample-rate", "1", NULL));
    snprintf(v, sizeof v, "%.17g", m->dp_clip);
    AX_CHECK(ax_cfg_set(&ax_train_table, c, "dp-clip", v, NULL));
    snprintf(v, sizeof v, "%.17g", m->dp_delta);
    AX_CHECK(ax_cfg_set(&ax_train_table, c, "dp-delta", v, NULL));
    snprintf(v, sizeof v, "%.17g", m->dp_epsilon ? m->dp_epsilon : m->dp_noise);
    return ax_cfg_set(&ax_train_table, c, m->dp_epsilon ? "dp-epsilon" : "dp-noise", v, NULL);
}
