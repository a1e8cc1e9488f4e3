/* RUN/study.json (schema axmem-study-run v1): the mitigation `axmem study` trained the run
 * with, its training set, and the split every run of the study was scanned on. */
#include "reports/model.h"

#include <string.h>

#define SCHEMA "axmem-study-run"
#define RERUN "axmem study"

ax_status ax_rep_parse_study(ax_arena *a, const ax_json *v, const char *path, ax_rep_study *s) {
    const char *schema = NULL, *mit = NULL, *kind = NULL;
    int64_t version = 0;
    memset(s, 0, sizeof *s);
    s->file = ax_arena_str(a, path);
    if (ax_json_get_str(v, "schema", path, &schema) != AX_OK || strcmp(schema, SCHEMA))
        return ax_rep_damaged(path, RERUN, "schema should be \"%s\"", SCHEMA);
    AX_CHECK(ax_rep_get_int(v, "", "version", 1, 1, path, &version));
    AX_CHECK(ax_json_get_str(v, "mitigation", path, &mit));
    AX_CHECK(ax_json_get_str(v, "kind", path, &kind));
    static const char *const kinds[] = {"none", "goldfish", "dedup", "dp"};
    int known = 0;
    for (int k = 0; k < 4; k++) known |= !strcmp(kind, kinds[k]);
    if (!known)
        return ax_rep_damaged(path, RERUN, "kind \"%s\" is not none, goldfish, dedup or dp", kind);
    s->mitigation = ax_arena_str(a, mit), s->kind = ax_arena_str(a, kind);
    AX_CHECK(ax_rep_get_int(v, "", "train_docs", 0, AX_REP_MAX_COUNT, path, &s->train_docs));
    AX_CHECK(ax_rep_get_int(v, "", "train_tokens", 0, AX_REP_MAX_COUNT, path, &s->train_tokens));
    AX_CHECK(ax_rep_get_int(v, "", "members", 0, AX_REP_MAX_COUNT, path, &s->members));
    AX_CHECK(ax_rep_get_int(v, "", "nonmembers", 0, AX_REP_MAX_COUNT, path, &s->nonmembers));
    AX_CHECK(ax_rep_get_int(v, "", "canaries", 0, AX_REP_MAX_COUNT, path, &s->canaries));
    AX_CHECK(ax_rep_opt_int(v, "", "dedup_n", 0, AX_REP_MAX_TOKENS, 0, path, &s->dedup_n));
    const ax_json *dp = ax_json_get(v, "dp");
    if (dp) {
        const char *keys[4] = {"epsilon_target", "noise_multiplier", "delta", "clip"};
        double *out[4] = {&s->eps_target, &s->noise, &s->delta, &s->clip};
        for (int k = 0; k < 4; k++)
            if (ax_json_get(dp, keys[k]))
                AX_CHECK(ax_rep_get_in(dp, "dp", keys[k], 0, k == 2 ? 1 : 1e12, path, out[k]));
    }
    return a->oom ? ax_rep_nomem() : AX_OK;
}

int ax_rep_is_baseline(const ax_rep_run *run) {
    if (run->study) return !strcmp(run->study->kind, "none");
    const ax_rep_ident *id = ax_rep_run_ident(run);
    return id && !strcmp(id->goldfish, "none");
}
