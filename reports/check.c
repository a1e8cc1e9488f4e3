/* Domain checks for numbers read from scan files. An edited or damaged file must not render
 * as "-500%" or "0/1000000000000008 documents": every value is checked against its domain
 * before use, and a failure names the file and the field. */
#include "reports/model.h"

#include <math.h>
#include <stdio.h>

ax_status ax_rep_check_num(double v, double lo, double hi, const char *path, const char *field) {
    if (!isfinite(v)) return ax_rep_damaged(path, NULL, "%s is not a finite number", field);
    if (v < lo || v > hi)
        return ax_rep_damaged(path, NULL, "%s = %g is outside [%g, %g]", field, v, lo, hi);
    return AX_OK;
}

ax_status ax_rep_check_int(const ax_json *x, int64_t lo, int64_t hi, const char *path,
                           const char *field, int64_t *out) {
    if (!x || x->type != AX_JSON_NUM)
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s is missing or not a number", path, field);
    AX_CHECK(ax_rep_check_num(x->num, (double)lo, (double)hi, path, field));
    if (x->num != floor(x->num))
        return ax_rep_damaged(path, NULL, "%s = %g is not a whole number", field, x->num);
    /* converted only by ax_json_int_in: a cast of a double past int64 is undefined (a bound
     * of INT64_MAX is 2^63 as a double, so the range check above alone would not do) */
    if (!ax_json_int_in(x, lo, hi, out))
        return ax_errorf(AX_ERR_CORRUPT, "%s: %s = %g is outside [%lld, %lld]", path, field, x->num,
                         (long long)lo, (long long)hi);
    return AX_OK;
}

ax_status ax_rep_check_stat(const ax_rep_stat *s, double lo, double hi, const char *path,
                            const char *field) {
    char f[160];
    snprintf(f, sizeof f, "%s.mean", field);
    AX_CHECK(ax_rep_check_num(s->mean, lo, hi, path, f));
    snprintf(f, sizeof f, "%s.ci95[0]", field);
    AX_CHECK(ax_rep_check_num(s->lo, lo, hi, path, f));
    snprintf(f, sizeof f, "%s.ci95[1]", field);
    AX_CHECK(ax_rep_check_num(s->hi, lo, hi, path, f));
    /* bootstrap means are sums divided by n: allow rounding in the last bits */
    double eps = 1e-9 * (fabs(s->mean) > 1 ? fabs(s->mean) : 1);
    if (s->lo > s->mean + eps || s->hi < s->mean - eps)
        return ax_rep_damaged(path, NULL, "%s.ci95 [%g, %g] does not bracket the estimate %g",
                              field, s->lo, s->hi, s->mean);
    return AX_OK;
}

ax_status ax_rep_check_le(int64_t a, const char *fa, int64_t b, const char *fb, const char *path) {
    return a <= b ? AX_OK
                  : ax_rep_damaged(path, NULL, "%s = %lld exceeds %s = %lld", fa, (long long)a, fb,
                                   (long long)b);
}
