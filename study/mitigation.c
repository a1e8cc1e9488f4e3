/* `--mitigations` parsing: split on commas into items (a piece that starts no kind belongs to
 * the item before), then each item by its kind. */
#include "study/mitigation.h"
#include "goldfish/goldfish.h"
#include "lib/core/cliargs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define FLAG "--mitigations"
#define GRAMMAR                                                                                    \
    "items are none, goldfish:SPEC, dedup:N, dp:eps=E[,delta=D][,clip=C] or "                      \
    "dp:noise=S[,delta=D][,clip=C], separated by commas"

static int starts_kind(const char *p, size_t len) {
    static const char *const kinds[] = {"goldfish:", "dedup:", "dp:"};
    if (len == 4 && !strncmp(p, "none", 4)) return 1;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (len >= strlen(kinds[k]) && !strncmp(p, kinds[k], strlen(kinds[k]))) return 1;
    return 0;
}

/* "eps=8,delta=1e-5,clip=1" into m */
static ax_status parse_dp(const char *item, const char *args, ax_mitigation *m) {
    m->dp_delta = AX_STUDY_DP_DELTA, m->dp_clip = AX_STUDY_DP_CLIP;
    int seen[4] = {0};
    for (const char *p = args;;) {
        size_t len = strcspn(p, ",");
        char kv[AX_STUDY_SPEC_MAX];
        snprintf(kv, sizeof kv, "%.*s", (int)len, p);
        char *eq = strchr(kv, '=');
        static const char *const keys[4] = {"eps", "noise", "delta", "clip"};
        int k = 0;
        double v = 0;
        if (eq) *eq = 0;
        while (k < 4 && strcmp(kv, keys[k])) k++;
        if (!eq || k == 4)
            return ax_errorf(AX_ERR_ARG,
                             "%s: '%s': '%s' is not a dp setting; dp takes eps=E or noise=S, "
                             "and optionally delta=D and clip=C (e.g. dp:eps=8,delta=1e-5)",
                             FLAG, item, kv);
        if (seen[k]++) return ax_errorf(AX_ERR_ARG, "%s: '%s': %s given twice", FLAG, item, kv);
        int ok = ax_parse_f64(eq + 1, &v) == 1 && isfinite(v) && v > 0;
        if (!ok || (k == 2 && v >= 1))
            return ax_errorf(AX_ERR_ARG, "%s: '%s': %s=%s should be a number %s", FLAG, item, kv,
                             eq + 1, k == 2 ? "in (0, 1)" : "above 0");
        double *field[4] = {&m->dp_epsilon, &m->dp_noise, &m->dp_delta, &m->dp_clip};
        *field[k] = v;
        if (!p[len]) break;
        p += len + 1;
    }
    if (seen[0] == seen[1])
        return ax_errorf(AX_ERR_ARG,
                         "%s: '%s': give the privacy target eps=E or the noise multiplier "
                         "noise=S (one of them)",
                         FLAG, item);
    return AX_OK;
}

static ax_status parse_item(const char *item, ax_mitigation *m) {
    memset(m, 0, sizeof *m);
    if (strlen(item) >= AX_STUDY_SPEC_MAX)
        return ax_errorf(AX_ERR_ARG, "%s: '%.40s...' is longer than %d characters", FLAG, item,
                         AX_STUDY_SPEC_MAX - 1);
    snprintf(m->spec, sizeof m->spec, "%s", item);
    snprintf(m->goldfish, sizeof m->goldfish, "none");
    if (!strcmp(item, "none")) {
        m->kind = AX_MIT_NONE;
        return AX_OK;
    }
    if (!strncmp(item, "goldfish:", 9)) {
        ax_goldfish g;
        m->kind = AX_MIT_GOLDFISH;
        if (ax_goldfish_parse(item + 9, &g) != AX_OK) {
            char why[1024]; /* the message, copied before a new one replaces it */
            snprintf(why, sizeof why, "%s", ax_error_msg());
            ax_error_clear();
            return ax_errorf(AX_ERR_ARG, "%s: '%s': %s", FLAG, item, why);
        }
        if (g.strategy == AX_GOLDFISH_NONE)
            return ax_errorf(AX_ERR_ARG, "%s: '%s' drops nothing; the baseline is 'none'", FLAG,
                             item);
        snprintf(m->goldfish, sizeof m->goldfish, "%s", item + 9);
        return AX_OK;
    }
    if (!strncmp(item, "dedup:", 6)) {
        m->kind = AX_MIT_DEDUP;
        if (ax_parse_i64(item + 6, &m->dedup_n) != 1 || m->dedup_n < 1 || m->dedup_n > 65536)
            return ax_errorf(AX_ERR_ARG,
                             "%s: '%s': dedup takes the span length N in tokens, a whole number "
                             "in 1..65536 (e.g. dedup:50)",
                             FLAG, item);
        return AX_OK;
    }
    if (!strncmp(item, "dp:", 3)) {
        m->kind = AX_MIT_DP;
        return parse_dp(item, item + 3, m);
    }
    return ax_errorf(AX_ERR_ARG, "%s: '%s' is not a mitigation; %s", FLAG, item, GRAMMAR);
}

/* the kind's label, with "-2", "-3" ... after its first item */
static void label(ax_mitigation *out, int i) {
    static const char *const names[] = {"baseline", "goldfish", "dedup", "dp"};
    int same = 0;
    for (int j = 0; j < i; j++) same += out[j].kind == out[i].kind;
    if (same)
        snprintf(out[i].label, sizeof out[i].label, "%s-%d", names[out[i].kind], same + 1);
    else
        snprintf(out[i].label, sizeof out[i].label, "%s", names[out[i].kind]);
}

ax_status ax_study_parse_mitigations(const char *list, ax_mitigation *out, int *n) {
    *n = 0;
    if (!list || !list[0])
        return ax_errorf(AX_ERR_ARG, "%s is empty; %s (e.g. none,goldfish:hash:k=4,h=13)", FLAG,
                         GRAMMAR);
    char item[AX_STUDY_SPEC_MAX * 2] = "";
    for (const char *p = list;;) {
        size_t len = strcspn(p, ",");
        if (len == 0)
            return ax_errorf(AX_ERR_ARG, "%s '%s': an empty item (two commas, or one at an end)",
                             FLAG, list);
        /* "h=13" after "goldfish:hash:k=4", "delta=1e-6" after "dp:eps=8": the kinds whose
         * settings hold commas */
        if ((!strncmp(item, "goldfish:", 9) || !strncmp(item, "dp:", 3)) && !starts_kind(p, len)) {
            size_t have = strlen(item);
            snprintf(item + have, sizeof item - have, ",%.*s", (int)len, p);
        } else {
            if (item[0]) {
                if (*n == AX_STUDY_MAX_MITIGATIONS)
                    return ax_errorf(AX_ERR_ARG, "%s: more than %d mitigations", FLAG,
                                     AX_STUDY_MAX_MITIGATIONS);
                AX_CHECK(parse_item(item, &out[*n]));
                label(out, (*n)++);
            }
            snprintf(item, sizeof item, "%.*s", (int)len, p);
        }
        if (!p[len]) break;
        p += len + 1;
    }
    if (*n == AX_STUDY_MAX_MITIGATIONS)
        return ax_errorf(AX_ERR_ARG, "%s: more than %d mitigations", FLAG,
                         AX_STUDY_MAX_MITIGATIONS);
    AX_CHECK(parse_item(item, &out[*n]));
    label(out, (*n)++);
    for (int i = 0; i < *n; i++)
        for (int j = 0; j < i; j++)
            if (!strcmp(out[i].spec, out[j].spec))
                return ax_errorf(AX_ERR_ARG, "%s: '%s' is given twice", FLAG, out[i].spec);
    return AX_OK;
}
