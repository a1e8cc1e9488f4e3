#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/json.h"

static ax_json *parse_ok(const char *s) {
    ax_json *v = NULL;
    ax_error_clear();
    ax_status st = ax_json_parse(s, strlen(s), "t.json", &v);
    cr_assert_eq(st, AX_OK, "parse of %s failed: %s", s, ax_error_msg());
    return v;
}

/* parses `s`, expects failure, returns the message */
static const char *parse_bad(const char *s, size_t len) {
    ax_json *v = (ax_json *)1;
    ax_error_clear();
    ax_status st = ax_json_parse(s, len, "t.json", &v);
    cr_assert_eq(st, AX_ERR_CORRUPT, "expected failure for %.*s", (int)len, s);
    cr_assert_null(v);
    cr_assert(strstr(ax_error_msg(), "t.json"), "message names the input: %s", ax_error_msg());
    return ax_error_msg();
}

Test(json, writer_nesting_and_commas) {
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "a");
    ax_jw_int(&w, -3);
    ax_jw_key(&w, "b");
    ax_jw_arr_begin(&w);
    ax_jw_uint(&w, 18446744073709551615ull);
    ax_jw_bool(&w, 1);
    ax_jw_null(&w);
    ax_jw_obj_begin(&w);
    ax_jw_obj_end(&w);
    ax_jw_arr_begin(&w);
    ax_jw_arr_end(&w);
    ax_jw_arr_end(&w);
    ax_jw_key(&w, "c");
    ax_jw_raw(&w, "{\"x\":1}");
    ax_jw_key(&w, "d");
    ax_jw_num(&w, 0.1);
    ax_jw_key(&w, "e");
    ax_jw_num(&w, NAN);
    ax_jw_key(&w, "f");
    ax_jw_num(&w, -INFINITY);
    ax_jw_obj_end(&w);
    cr_assert_str_eq(ax_jw_text(&w), "{\"a\":-3,\"b\":[18446744073709551615,true,null,{},[]],"
                                     "\"c\":{\"x\":1},\"d\":0.1,\"e\":null,\"f\":null}");
    ax_jw_free(&w);
}

Test(json, empty_writer_text) {
    ax_jw w;
    ax_jw_init(&w);
    cr_assert_str_eq(ax_jw_text(&w), "");
    ax_jw_free(&w);
}

Test(json, number_round_trip) {
    double vals[] = {0.0,
                     -0.0,
                     1.0,
                     0.1,
                     1.0 / 3.0,
                     6.02214076e23,
                     5e-324,
                     1.7976931348623157e308,
                     -123456789.125,
                     3e-4,
                     9007199254740993.0};
    for (size_t i = 0; i < sizeof vals / sizeof *vals; i++) {
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_num(&w, vals[i]);
        ax_json *v = parse_ok(ax_jw_text(&w));
        cr_assert_eq(v->type, AX_JSON_NUM);
        cr_assert(v->num == vals[i], "%.17g -> %s -> %.17g", vals[i], ax_jw_text(&w), v->num);
        ax_json_free(v);
        ax_jw_free(&w);
    }
}

Test(json, string_round_trip_with_nul_and_controls) {
    const char raw[] = "a\"b\\c\n\t\r\b\f\x01\x1f\0z/\xc3\xa9";
    size_t n = sizeof raw - 1;
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_strn(&w, raw, n);
    ax_json *v = parse_ok(ax_jw_text(&w));
    cr_assert_eq(v->type, AX_JSON_STR);
    cr_assert_eq(v->str_len, n);
    cr_assert(memcmp(v->str, raw, n) == 0);
    cr_assert_eq(v->str[n], 0);
    ax_json_free(v);
    ax_jw_free(&w);
}

Test(json, escapes_decode) {
    ax_json *v = parse_ok("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20ac\\u0000x\"");
    const char want[] = "\"\\/\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\0x";
    cr_assert_eq(v->str_len, sizeof want - 1);
    cr_assert(memcmp(v->str, want, sizeof want - 1) == 0);
    ax_json_free(v);
}

Test(json, surrogate_pairs) {
    ax_json *v = parse_ok("\"\\ud83d\\ude00|\\uD834\\uDD1E\"");
    const char want[] = "\xf0\x9f\x98\x80|\xf0\x9d\x84\x9e";
    cr_assert_eq(v->str_len, sizeof want - 1);
    cr_assert(memcmp(v->str, want, sizeof want - 1) == 0);
    ax_json_free(v);
    /* lone surrogates (found in real corpora) become U+FFFD instead of failing the record */
    v = parse_ok("\"a\\ud83db\\ude00c\\ud83d\"");
    const char want2[] = "a\xef\xbf\xbd"
                         "b\xef\xbf\xbd"
                         "c\xef\xbf\xbd";
    cr_assert_eq(v->str_len, sizeof want2 - 1);
    cr_assert(memcmp(v->str, want2, sizeof want2 - 1) == 0);
    ax_json_free(v);
}

Test(json, dom_and_getters) {
    ax_json *v =
        parse_ok(" {\"n\": -12.5e1, \"i\": 42, \"s\": \"hi\", \"h\": \"0xDEADbeef00000001\","
                 " \"t\": true, \"f\": false, \"z\": null, \"a\": [1, [2], {}]} \n");
    cr_assert_eq(v->type, AX_JSON_OBJ);
    cr_assert_eq(v->n, 8);
    double d;
    int64_t i;
    const char *s;
    uint64_t h;
    cr_assert_eq(ax_json_get_num(v, "n", "t", &d), AX_OK);
    cr_assert_eq(d, -125.0);
    cr_assert_eq(ax_json_get_i64(v, "i", "t", &i), AX_OK);
    cr_assert_eq(i, 42);
    cr_assert_eq(ax_json_get_str(v, "s", "t", &s), AX_OK);
    cr_assert_str_eq(s, "hi");
    cr_assert_eq(ax_json_get_hex64(v, "h", "t", &h), AX_OK);
    cr_assert_eq(h, 0xdeadbeef00000001ull);
    cr_assert_eq(ax_json_get(v, "t")->type, AX_JSON_BOOL);
    cr_assert_eq(ax_json_get(v, "t")->num, 1);
    cr_assert_eq(ax_json_get(v, "f")->num, 0);
    cr_assert_eq(ax_json_get(v, "z")->type, AX_JSON_NULL);
    const ax_json *a = ax_json_get(v, "a");
    cr_assert_eq(a->type, AX_JSON_ARR);
    cr_assert_eq(a->n, 3);
    cr_assert_eq(a->items[1]->items[0]->num, 2);
    cr_assert_null(ax_json_get(v, "missing"));
    cr_assert_null(ax_json_get(a, "x"));

    ax_error_clear();
    cr_assert_eq(ax_json_get_num(v, "missing", "cfg.json", &d), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "cfg.json") && strstr(ax_error_msg(), "missing"));
    ax_error_clear();
    cr_assert_eq(ax_json_get_str(v, "i", "cfg.json", &s), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "\"i\""), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_json_get_i64(v, "n", "cfg.json", &i), AX_OK); /* -125 is integral */
    cr_assert_eq(i, -125);
    cr_assert_eq(ax_json_get_hex64(v, "s", "cfg.json", &h), AX_ERR_CORRUPT);
    ax_json_free(v);

    v = parse_ok("{\"x\": 1.5}");
    ax_error_clear();
    cr_assert_eq(ax_json_get_i64(v, "x", "cfg.json", &i), AX_ERR_CORRUPT);
    ax_json_free(v);
}

Test(json, big_numbers_use_strtod) {
    ax_json *v = parse_ok("[12345678901234567890, 0.5, -0, 1E2, 2e-2]");
    cr_assert_eq(v->items[0]->num, 12345678901234567890.0);
    cr_assert_eq(v->items[1]->num, 0.5);
    cr_assert_eq(v->items[2]->num, 0.0);
    cr_assert_eq(v->items[3]->num, 100.0);
    cr_assert_eq(v->items[4]->num, 0.02);
    ax_json_free(v);
}

Test(json, not_nul_terminated_input) {
    /* the parser must stop at len: "123" followed by junk bytes outside the range */
    const char buf[] = "123456";
    ax_json *v = NULL;
    cr_assert_eq(ax_json_parse(buf, 3, "t", &v), AX_OK);
    cr_assert_eq(v->num, 123);
    ax_json_free(v);
}

Test(json, malformed_inputs_report_offsets) {
    struct {
        const char *s;
        const char *at;
    } cases[] = {
        {"", "byte 0"},           {"   ", "byte 3"},
        {"{\"a\":1,}", "byte 7"}, {"[1,2", "byte 0"},
        {"[1 2]", "byte 3"},      {"{\"a\" 1}", "byte 5"},
        {"{a:1}", "byte 1"},      {"\"abc", "byte 0"},
        {"\"a\\qb\"", "byte 2"},  {"\"\\u12g4\"", "byte 1"},
        {"\"\\u12\"", "byte 1"},  {"tru", "byte 0"},
        {"nul", "byte 0"},        {"01", "byte 1"},
        {"1.", "byte 2"},         {"-", "byte 0"},
        {"1e", "byte 2"},         {"{} x", "byte 3"},
        {"\"a\nb\"", "byte 2"},   {"[1,]", "byte 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *m = parse_bad(cases[i].s, strlen(cases[i].s));
        cr_assert(strstr(m, cases[i].at), "case %zu (%s): want %s in: %s", i, cases[i].s,
                  cases[i].at, m);
    }
}

Test(json, deep_nesting) {
    /* 500 levels parse; 10000 levels are refused with a message, not a stack overflow */
    size_t d = 500;
    char *s = malloc(2 * d + 1);
    for (size_t i = 0; i < d; i++) s[i] = '[', s[2 * d - 1 - i] = ']';
    s[2 * d] = 0;
    ax_json *v = parse_ok(s);
    const ax_json *p = v;
    for (size_t i = 1; i < d; i++) p = p->items[0];
    cr_assert_eq(p->type, AX_JSON_ARR);
    cr_assert_eq(p->n, 0);
    ax_json_free(v);
    free(s);

    d = 10000;
    s = malloc(d + 1);
    memset(s, '[', d);
    s[d] = 0;
    const char *m = parse_bad(s, d);
    cr_assert(strstr(m, "nesting"), "%s", m);
    free(s);

    /* the writer tracks 63 levels; deeper documents report failure via a NULL text */
    ax_jw w;
    ax_jw_init(&w);
    for (int i = 0; i < 100; i++) ax_jw_arr_begin(&w);
    cr_assert_null(ax_jw_text(&w));
    ax_jw_free(&w);
}

Test(json, jsonl_style_many_records) {
    /* one parse per line, as corpus readers do */
    char line[128];
    for (int i = 0; i < 2000; i++) {
        int n = snprintf(line, sizeof line, "{\"id\":%d,\"text\":\"doc \\u00e9 %d\"}", i, i);
        ax_json *v = NULL;
        cr_assert_eq(ax_json_parse(line, (size_t)n, "c.jsonl", &v), AX_OK);
        const char *t;
        cr_assert_eq(ax_json_get_str(v, "text", "c.jsonl", &t), AX_OK);
        cr_assert(!strncmp(t, "doc \xc3\xa9 ", 7));
        ax_json_free(v);
    }
}

Test(json, advice_in_message) {
    ax_json *v;
    ax_error_clear();
    cr_assert_eq(ax_json_parse_advice("{", 1, "m.json", "retrain", &v), AX_ERR_CORRUPT);
    cr_assert(strstr(ax_error_msg(), "retrain"), "%s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), "m.json"), "%s", ax_error_msg());
}

Test(json, free_null) {
    ax_json_free(NULL);
}

/* Numbers a double cannot hold are parse errors (inf must never reach a reader's int cast). */
Test(json, overflowing_numbers_are_errors) {
    const char *bad[] = {"1e999", "[1, -1e400]", "{\"x\": 123456789e305}"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ax_json *j = NULL;
        ax_error_clear();
        cr_assert_eq(ax_json_parse(bad[i], strlen(bad[i]), "f.json", &j), AX_ERR_CORRUPT, "%s",
                     bad[i]);
        cr_assert(strstr(ax_error_msg(), "out of range"), "%s", ax_error_msg());
    }
    ax_json *j;
    cr_assert_eq(ax_json_parse("1e-400", 6, "f.json", &j), AX_OK); /* underflow is just 0 */
    cr_assert_eq(j->num, 0.0);
    ax_json_free(j);
}

Test(json, int_in_converts_only_integral_in_range) {
    const struct {
        const char *text;
        int ok;
        int64_t want;
    } cases[] = {{"5", 1, 5},      {"-3", 1, -3},   {"1e3", 1, 1000}, {"2.5", 0, 0},
                 {"1e30", 0, 0},   {"-1e30", 0, 0}, {"1e20", 0, 0},   {"\"5\"", 0, 0},
                 {"9.3e18", 0, 0}, {"1001", 0, 0},  {"-101", 0, 0},   {"true", 0, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        ax_json *j;
        cr_assert_eq(ax_json_parse(cases[i].text, strlen(cases[i].text), "t", &j), AX_OK);
        int64_t x = 42;
        cr_assert_eq(ax_json_int_in(j, -100, 1000, &x), cases[i].ok, "%s", cases[i].text);
        if (cases[i].ok) cr_assert_eq(x, cases[i].want);
        ax_json_free(j);
    }
    ax_json *j;
    cr_assert_eq(ax_json_parse("9.2e18", 6, "t", &j), AX_OK);
    int64_t x;
    cr_assert_eq(ax_json_int_in(j, INT64_MIN, INT64_MAX, &x), 1);
    cr_assert_eq(x, 9200000000000000000LL);
    ax_json_free(j);
    cr_assert_eq(ax_json_parse("9.3e18", 6, "t", &j), AX_OK);
    cr_assert_eq(ax_json_int_in(j, INT64_MIN, INT64_MAX, &x), 0); /* past 2^63 */
    ax_json_free(j);
}
