/* The JSON writer never emits invalid UTF-8: every ill-formed subsequence becomes U+FFFD (one
 * per maximal subpart), and ax_utf8_clip cuts decoded text at character boundaries. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/json.h"

#define FFFD "\xef\xbf\xbd"

/* ax_jw_strn(s[n]) -> the writer's text (a static copy) */
static const char *written(const char *s, size_t n) {
    static char out[4096];
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_strn(&w, s, n);
    cr_assert_not_null(ax_jw_text(&w));
    snprintf(out, sizeof out, "%s", ax_jw_text(&w));
    ax_jw_free(&w);
    return out;
}

/* 1 if every byte of s belongs to a well-formed UTF-8 character */
static int valid_utf8(const char *s, size_t n) {
    for (size_t i = 0, len; i < n; i += len)
        if (!ax_utf8_next(s + i, n - i, &len)) return 0;
    return 1;
}

#define EXPECT(in, out) cr_assert_str_eq(written(in, sizeof(in) - 1), "\"" out "\"", "input " #in)

Test(json_utf8, well_formed_text_is_kept_byte_for_byte) {
    EXPECT("caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e",
           "caf\xc3\xa9 \xe2\x82\xac \xf0\x9d\x84\x9e");
    EXPECT("\xef\xbf\xbf\xf4\x8f\xbf\xbf", "\xef\xbf\xbf\xf4\x8f\xbf\xbf"); /* U+FFFF, U+10FFFF */
}

Test(json_utf8, truncated_sequences_become_one_replacement_each) {
    EXPECT("ab\xe2\x82", "ab" FFFD);                 /* euro sign cut after 2 of 3 bytes */
    EXPECT("\xf0\x9d\x84", FFFD);                    /* 4-byte character cut after 3 */
    EXPECT("\xe2\x82x", FFFD "x");                   /* cut, then ASCII */
    EXPECT("\xc3\xe2\x82\xac", FFFD "\xe2\x82\xac"); /* a lead byte with no continuation */
    EXPECT("\x82\xac tail", FFFD FFFD " tail");      /* continuation bytes of a cut start */
}

Test(json_utf8, overlongs_surrogates_and_out_of_range) {
    EXPECT("\xc0\xaf", FFFD FFFD);                   /* overlong '/': C0 never starts one */
    EXPECT("\xe0\x80\xaf", FFFD FFFD FFFD);          /* overlong 3-byte */
    EXPECT("\xf0\x80\x80\xaf", FFFD FFFD FFFD FFFD); /* overlong 4-byte */
    EXPECT("\xed\xa0\x80", FFFD FFFD FFFD);          /* U+D800, a surrogate */
    EXPECT("\xed\xbf\xbf", FFFD FFFD FFFD);          /* U+DFFF */
    EXPECT("\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD); /* U+110000 */
    EXPECT("\xf5\xff\xfe", FFFD FFFD FFFD);
    EXPECT("\xed\x9f\xbf", "\xed\x9f\xbf"); /* U+D7FF is fine */
}

Test(json_utf8, controls_are_still_escaped_next_to_replacements) {
    EXPECT("\x01\xff\n\"", "\\u0001" FFFD "\\n\\\"");
}

Test(json_utf8, keys_are_sanitised_too) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "k\xff");
    ax_jw_int(&w, 1);
    ax_jw_obj_end(&w);
    cr_assert_str_eq(ax_jw_text(&w), "{\"k" FFFD "\":1}");
    ax_jw_free(&w);
}

Test(json_utf8, random_bytes_always_give_valid_utf8_that_parses_back) {
    uint64_t x = 88172645463325252ull;
    char in[64];
    for (int t = 0; t < 3000; t++) {
        size_t n = (size_t)(t % 40);
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            /* bias toward bytes >= 0x80 where the trouble is */
            in[i] = (char)(x & 1 ? 0x80 | (x >> 8 & 0x7f) : x >> 8 & 0xff);
        }
        const char *out = written(in, n);
        size_t len = strlen(out);
        cr_assert(valid_utf8(out, len), "writer emitted invalid UTF-8 for case %d", t);
        ax_json *v = NULL;
        cr_assert_eq(ax_json_parse(out, len, "w", &v), AX_OK, "%s", ax_error_msg());
        cr_assert_eq(v->type, AX_JSON_STR);
        /* well-formed input survives unchanged */
        if (valid_utf8(in, n) && !memchr(in, 0, n))
            cr_assert(v->str_len == n && !memcmp(v->str, in, n), "case %d changed", t);
        ax_json_free(v);
    }
}

Test(json_utf8, clip_cuts_at_character_boundaries) {
    size_t off, len;
    const char a[] = "\x82\xac"
                     "abc\xe2\x82"; /* euro cut at both ends of "abc" */
    len = ax_utf8_clip(a, sizeof a - 1, &off);
    cr_assert_eq(off, 2);
    cr_assert_eq(len, 3);
    const char b[] = "x\xe2\x82\xac"; /* whole at the end: kept */
    len = ax_utf8_clip(b, sizeof b - 1, &off);
    cr_assert(off == 0 && len == 4);
    const char c[] = "x\xf0\x9d\x84"; /* 4-byte cut after 3: dropped */
    len = ax_utf8_clip(c, sizeof c - 1, &off);
    cr_assert(off == 0 && len == 1);
    const char d[] = "\xc3"; /* nothing whole */
    len = ax_utf8_clip(d, 1, &off);
    cr_assert_eq(len, 0);
    len = ax_utf8_clip("", 0, &off);
    cr_assert(off == 0 && len == 0);
}
