/* libFuzzer target: the JSON parser (lib/core/json.c) and its typed getters. */
#include "fuzz_util.h"
#include "lib/core/json.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    ax_log_set_level(AX_LOG_ERROR);
    if (fz_seed_dir()) {
        const char *s[] = {"{\"a\":[1,2.5e3,-0,true,null,\"x\\u00e9\\ud83d\\ude00\"],\"b\":{}}",
                           "[\"\\n\\t\\\\\",1e-5,{\"xxh3\":\"0x00ff\"}]", "\"plain\"", "-12.5e+2"};
        char name[32];
        for (int i = 0; i < 4; i++) {
            snprintf(name, sizeof name, "seed%d.json", i);
            fz_write_seed(name, s[i], strlen(s[i]));
        }
        exit(0);
    }
    return 0;
}

static void walk(const ax_json *v, int depth) {
    if (!v || depth > 600) return;
    int64_t i;
    (void)ax_json_int_in(v, INT64_MIN, INT64_MAX, &i);
    if (v->type == AX_JSON_STR && v->str[v->str_len] != 0) abort(); /* must be terminated */
    for (size_t k = 0; k < v->n; k++) {
        if (v->type == AX_JSON_OBJ) {
            if (ax_json_get(v, v->keys[k]) == NULL) abort(); /* every key is found */
            double d;
            const char *s;
            uint64_t h;
            ax_json_get_num(v, v->keys[k], "fuzz", &d);
            ax_json_get_i64(v, v->keys[k], "fuzz", &i);
            ax_json_get_str(v, v->keys[k], "fuzz", &s);
            ax_json_get_hex64(v, v->keys[k], "fuzz", &h);
            ax_error_clear();
        }
        walk(v->items[k], depth + 1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ax_json *v = NULL;
    ax_error_clear();
    if (ax_json_parse((const char *)data, size, "fuzz", &v) == AX_OK) {
        walk(v, 0);
        ax_json_free(v);
    } else if (v) {
        abort(); /* a failed parse leaves *out NULL */
    }
    ax_error_clear();
    return 0;
}
