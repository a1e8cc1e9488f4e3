/* Shared by the training tests: a byte-level dataset that needs no trained tokenizer, and the
 * CLI parser's record of which flags were given. */
#pragma once
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/axd.h"
#include "lib/core/json.h"
#include "train/train_run.h"

/* the bytes of the first n_docs chapters of the bundled corpus (vocab 257: bytes + EOT), each
 * cut to max_len bytes when max_len > 0 */
static inline void tt_byte_dataset(const char *path, int n_docs, size_t max_len) {
    FILE *f = fopen("data/corpus/kjv.jsonl", "r");
    cr_assert_not_null(f, "run the tests from the repository root");
    ax_axd_writer_t *w = NULL;
    cr_assert_eq(ax_axd_writer_create(path, 257, &w), AX_OK, "%s", ax_error_msg());
    char *line = NULL;
    size_t cap = 0;
    for (int d = 0; d < n_docs && getline(&line, &cap, f) > 0; d++) {
        ax_json *j = NULL;
        const char *text = NULL;
        cr_assert_eq(ax_json_parse(line, strlen(line), "kjv.jsonl", &j), AX_OK);
        cr_assert_eq(ax_json_get_str(j, "text", "kjv.jsonl", &text), AX_OK);
        size_t n = strlen(text);
        if (max_len && n > max_len) n = max_len;
        int32_t *toks = malloc(n * sizeof *toks);
        for (size_t i = 0; i < n; i++) toks[i] = (uint8_t)text[i];
        cr_assert_eq(ax_axd_writer_add_doc(w, toks, n), AX_OK);
        free(toks);
        ax_json_free(j);
    }
    free(line);
    fclose(f);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK, "%s", ax_error_msg());
}

/* was_set with the named flag marked, as the CLI parser would mark it */
static inline void tt_mark(uint8_t *was_set, const char *name) {
    const ax_cfg_entry *e = ax_cfg_find(&ax_train_table, name);
    cr_assert_not_null(e, "no flag --%s", name);
    was_set[e - ax_train_table.entries] = 1;
}
