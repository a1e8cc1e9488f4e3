/* --mitigations parsing: commas inside goldfish and dp items, labels, defaults, errors naming
 * the item. */
#include <criterion/criterion.h>
#include <string.h>

#include "study/mitigation.h"

Test(study_mitigation, splits_items_with_commas_inside) {
    ax_mitigation m[AX_STUDY_MAX_MITIGATIONS];
    int n = 0;
    cr_assert_eq(ax_study_parse_mitigations("none,goldfish:hash:k=4,h=13,dedup:50,dp:eps=8,"
                                            "delta=1e-6,goldfish:static:k=3,dp:noise=1.5",
                                            m, &n),
                 AX_OK, "%s", ax_error_msg());
    cr_assert_eq(n, 6);
    cr_assert_eq(m[0].kind, AX_MIT_NONE);
    cr_assert_str_eq(m[0].label, "baseline");
    cr_assert_str_eq(m[0].goldfish, "none");
    cr_assert_eq(m[1].kind, AX_MIT_GOLDFISH);
    cr_assert_str_eq(m[1].goldfish, "hash:k=4,h=13");
    cr_assert_str_eq(m[1].label, "goldfish");
    cr_assert_eq(m[2].kind, AX_MIT_DEDUP);
    cr_assert_eq(m[2].dedup_n, 50);
    cr_assert_eq(m[3].kind, AX_MIT_DP);
    cr_assert_str_eq(m[3].spec, "dp:eps=8,delta=1e-6");
    cr_assert_eq(m[3].dp_epsilon, 8);
    cr_assert_eq(m[3].dp_delta, 1e-6);
    cr_assert_eq(m[3].dp_clip, AX_STUDY_DP_CLIP);
    cr_assert_eq(m[3].dp_noise, 0);
    cr_assert_str_eq(m[4].label, "goldfish-2");
    cr_assert_str_eq(m[5].label, "dp-2");
    cr_assert_eq(m[5].dp_noise, 1.5);
    cr_assert_eq(m[5].dp_delta, AX_STUDY_DP_DELTA);
}

Test(study_mitigation, errors_name_the_item) {
    static const char *const bad[][2] = {{"none,foo", "'foo'"},
                                         {"dedup:0", "'dedup:0'"},
                                         {"none,dedup:50x", "'dedup:50x'"},
                                         {"dp:eps=8,noise=2", "'dp:eps=8,noise=2'"},
                                         {"dp:clip=1", "'dp:clip=1'"},
                                         {"dp:eps=-1", "'dp:eps=-1'"},
                                         {"dp:eps=8,delta=1", "delta=1"},
                                         {"dp:eps=8,eps=9", "eps given twice"},
                                         {"none,none", "'none' is given twice"},
                                         {"none,", "an empty item"},
                                         {"goldfish:none", "drops nothing"},
                                         {"goldfish:hash:k=1", "'goldfish:hash:k=1'"},
                                         {"", "is empty"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ax_mitigation m[AX_STUDY_MAX_MITIGATIONS];
        int n = 0;
        ax_error_clear();
        cr_assert_eq(ax_study_parse_mitigations(bad[i][0], m, &n), AX_ERR_ARG, "%s", bad[i][0]);
        cr_assert(strstr(ax_error_msg(), "--mitigations") && strstr(ax_error_msg(), bad[i][1]),
                  "%s: %s", bad[i][0], ax_error_msg());
    }
    ax_error_clear();
}
