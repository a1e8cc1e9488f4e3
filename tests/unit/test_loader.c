/* Loader: deterministic, seeded permutations of windows with correct document positions. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "data/axd.h"
#include "data/loader.h"
#include "data/tokenizer.h"
#include "lib/core/status.h"
#include "test_data_util.h"

TestSuite(loader, .init = td_quiet);

/* n_docs documents of varying lengths; token i of the stream is (i % 250) except the EOTs */
static ax_axd_t *make_dataset(char *path, size_t cap, int n_docs) {
    td_tmp(path, cap, "loader.axd");
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 512, &w), AX_OK);
    int32_t buf[200];
    uint64_t pos = 0;
    for (int d = 0; d < n_docs; d++) {
        int len = 1 + (d * 37) % 150;
        for (int i = 0; i < len; i++) buf[i] = (int32_t)((pos + (uint64_t)i) % 250);
        cr_assert_eq(ax_axd_writer_add_doc(w, buf, (size_t)len), AX_OK);
        pos += (uint64_t)len + 1;
    }
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK);
    return ds;
}

Test(loader, epochs_are_permutations) {
    char path[256];
    ax_axd_t *ds = make_dataset(path, sizeof path, 300);
    int sizes[] = {1, 7, 64, 1000};
    for (int s = 0; s < 4; s++) {
        ax_loader_t *l;
        cr_assert_eq(ax_loader_create(ds, sizes[s], 42, &l), AX_OK, "%s", ax_error_msg());
        uint64_t n = ax_loader_n_windows(l);
        cr_assert_eq(n, (ax_axd_n_tokens(ds) - 1) / (uint64_t)sizes[s]);
        uint8_t *seen = calloc(n, 1);
        for (uint64_t e = 0; e < 3; e++) {
            memset(seen, 0, n);
            for (uint64_t j = 0; j < n; j++) {
                uint64_t w = ax_loader_window(l, e * n + j);
                cr_assert_lt(w, n);
                cr_assert_eq(seen[w], 0, "window %llu twice in epoch %llu", (unsigned long long)w,
                             (unsigned long long)e);
                seen[w] = 1;
            }
        }
        /* epochs differ from each other (when there is room to) */
        if (n > 8) {
            int same = 1;
            for (uint64_t j = 0; j < n; j++)
                if (ax_loader_window(l, j) != ax_loader_window(l, n + j)) same = 0;
            cr_assert(!same, "epoch 1 repeats epoch 0's order");
        }
        free(seen);
        ax_loader_free(l);
    }
    ax_axd_free(ds);
    unlink(path);
}

Test(loader, seed_determines_order) {
    char path[256];
    ax_axd_t *ds = make_dataset(path, sizeof path, 300);
    ax_loader_t *a, *b, *c;
    cr_assert_eq(ax_loader_create(ds, 16, 1, &a), AX_OK);
    cr_assert_eq(ax_loader_create(ds, 16, 1, &b), AX_OK);
    cr_assert_eq(ax_loader_create(ds, 16, 2, &c), AX_OK);
    uint64_t n = ax_loader_n_windows(a);
    int differ = 0;
    for (uint64_t g = 0; g < 2 * n; g++) {
        cr_assert_eq(ax_loader_window(a, g), ax_loader_window(b, g));
        differ += ax_loader_window(a, g) != ax_loader_window(c, g);
    }
    cr_assert_gt(differ, (int)n, "seeds 1 and 2 give nearly the same order");
    /* the order is not the identity */
    int moved = 0;
    for (uint64_t g = 0; g < n; g++) moved += ax_loader_window(a, g) != g;
    cr_assert_gt(moved, (int)(n / 2));
    ax_loader_free(a);
    ax_loader_free(b);
    ax_loader_free(c);
    ax_axd_free(ds);
    unlink(path);
}

Test(loader, samples_and_doc_pos) {
    char path[256];
    ax_axd_t *ds = make_dataset(path, sizeof path, 120);
    int T = 33;
    ax_loader_t *l;
    cr_assert_eq(ax_loader_create(ds, T, 9, &l), AX_OK);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    uint64_t nd = ax_axd_n_docs(ds);
    int32_t tok[34];
    uint32_t pos[34];
    int boundaries = 0;
    for (uint64_t g = 0; g < ax_loader_n_windows(l); g++) {
        ax_loader_sample(l, g, tok, pos);
        uint64_t start = ax_loader_window(l, g) * (uint64_t)T;
        for (int i = 0; i <= T; i++) {
            uint64_t idx = start + (uint64_t)i;
            cr_assert_eq((uint32_t)tok[i], ax_axd_token(ds, idx));
            /* reference doc_pos by linear search */
            uint64_t d = 0;
            while (d + 1 < nd && off[d + 1] <= idx) d++;
            cr_assert_eq(pos[i], idx - off[d], "g %llu i %d", (unsigned long long)g, i);
            if (pos[i] == 0) {
                boundaries++;
                /* the token before a document start is the previous document's EOT */
                if (i > 0) cr_assert_eq(tok[i - 1], AX_TOK_EOT);
            }
        }
    }
    cr_assert_gt(boundaries, 50);
    /* NULL doc_pos is allowed */
    ax_loader_sample(l, 5, tok, NULL);
    ax_loader_free(l);
    ax_axd_free(ds);
    unlink(path);
}

Test(loader, rejects_too_small_dataset) {
    char path[256];
    td_tmp(path, sizeof path, "small.axd");
    ax_axd_writer_t *w;
    cr_assert_eq(ax_axd_writer_create(path, 300, &w), AX_OK);
    int32_t a[] = {1, 2, 3};
    cr_assert_eq(ax_axd_writer_add_doc(w, a, 3), AX_OK);
    cr_assert_eq(ax_axd_writer_close(w), AX_OK);
    ax_axd_t *ds;
    cr_assert_eq(ax_axd_open(path, 1, &ds), AX_OK);
    ax_loader_t *l;
    cr_assert_eq(ax_loader_create(ds, 3, 0, &l), AX_OK); /* 4 tokens = exactly one window */
    cr_assert_eq(ax_loader_n_windows(l), 1);
    cr_assert_eq(ax_loader_window(l, 0), 0);
    cr_assert_eq(ax_loader_window(l, 5), 0);
    ax_loader_free(l);
    ax_error_clear();
    cr_assert_eq(ax_loader_create(ds, 4, 0, &l), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "4 tokens"), "%s", ax_error_msg());
    cr_assert(strstr(ax_error_msg(), path), "%s", ax_error_msg());
    ax_axd_free(ds);
    unlink(path);
}

/* --packing doc: each sample is one document from its start, after an end-of-text, padded;
 * every epoch visits every document once */
Test(loader, document_samples) {
    char path[256];
    ax_axd_t *ds = make_dataset(path, sizeof path, 23);
    const uint64_t *off = ax_axd_doc_offsets(ds);
    int T = 64;
    ax_loader_t *l;
    cr_assert_eq(ax_loader_create_docs(ds, T, 9, &l), AX_OK);
    cr_assert_eq(ax_loader_n_windows(l), 23);
    int32_t tok[65], want[65];
    uint32_t pos[65];
    int seen[23] = {0};
    for (uint64_t g = 23; g < 46; g++) { /* the second epoch */
        uint64_t d = ax_loader_window(l, g);
        cr_assert_lt(d, 23);
        seen[d]++;
        int n = ax_loader_sample_len(l, g, tok, pos);
        uint64_t len = off[d + 1] - off[d]; /* includes the document's end-of-text */
        int expect = 1 + (int)(len < (uint64_t)T ? len : (uint64_t)T);
        cr_assert_eq(n, expect, "sample %llu: %d real tokens, expected %d", (unsigned long long)g,
                     n, expect);
        cr_assert_eq(tok[0], AX_TOK_EOT);
        ax_axd_tokens(ds, off[d], (uint64_t)(n - 1), want);
        cr_assert(!memcmp(tok + 1, want, sizeof(int32_t) * (size_t)(n - 1)));
        for (int i = 1; i <= T; i++) {
            cr_assert_eq(pos[i], (uint32_t)(i - 1));
            if (i >= n) cr_assert_eq(tok[i], 0, "padding");
        }
        cr_assert_eq(ax_loader_start(l, g), off[d]);
    }
    for (int d = 0; d < 23; d++) cr_assert_eq(seen[d], 1, "document %d seen %d times", d, seen[d]);
    ax_loader_free(l);
    ax_axd_free(ds);
    unlink(path);
}
