/* data dedup throughput (tokens/s) next to its ceiling measured in the same run on the same
 * tokens: the in-memory index build alone, which dedup runs first and cannot beat. The rest of
 * dedup is marking repeat starts from the occurrence lists, the walk in corpus order and the
 * output written (temporary, fsync, rename). Synthetic data: random tokens from a 50k
 * alphabet with planted passages copied into many documents (bench/bench_memscan.c's kind).
 * Medians of 3, build and dedup alternating; wall and CPU (user + system) time.
 *
 * usage: bench_dedup [TOKENS] [n]   (default 10M tokens, n = 50) */
#include "index/dedup_run.h"
#include "index/index.h"
#include "lib/core/cliargs.h"
#include "lib/core/log.h"
#include "lib/core/timer.h"
#include "tests/support/synth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double cpu_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int by_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median3(double *v) {
    qsort(v, 3, sizeof *v, by_double);
    return v[1];
}

int main(int argc, char **argv) {
    ax_log_set_level(AX_LOG_WARN);
    uint64_t tokens = 10000000;
    int n = argc > 2 ? atoi(argv[2]) : 50;
    if (argc > 1 && (ax_parse_size(argv[1], &tokens) != 1 || tokens < 100000)) {
        fprintf(stderr, "usage: bench_dedup [TOKENS >= 100K] [n]\n");
        return 2;
    }
    char in[256], out[256];
    snprintf(in, sizeof in, "/tmp/axmem_bench_dedup_%d.axd", (int)getpid());
    snprintf(out, sizeof out, "/tmp/axmem_bench_dedup_%d.out.axd", (int)getpid());
    ax_memscan_synth_opts so = {.vocab = 50304,
                                .doc_len_min = 200,
                                .doc_len_max = 2000,
                                .alphabet = 50000,
                                .n_passages = 64,
                                .passage_len = 200,
                                .copies = 20,
                                .seed = 7};
    so.n_docs = tokens / 1100;
    if (ax_memscan_synth_write(in, &so, NULL, NULL) != AX_OK) {
        fprintf(stderr, "bench_dedup: %s\n", ax_error_msg());
        return 1;
    }
    ax_axd_t *ds;
    if (ax_axd_open(in, 1, &ds) != AX_OK) return 1;
    uint64_t T = ax_axd_n_tokens(ds);
    double bw[3], bc[3], dw[3], dc[3], docw[3];
    ax_dedup_result r = {0};
    for (int rep = 0; rep < 3; rep++) {
        ax_memscan_build_opts bo;
        ax_memscan_build_opts_default(&bo);
        bo.n = n;
        ax_memscan_index_t *idx;
        double t0 = ax_now(), c0 = cpu_now();
        if (ax_memscan_index_build(ds, &bo, &idx) != AX_OK) return 1;
        bw[rep] = ax_now() - t0;
        bc[rep] = cpu_now() - c0;
        ax_memscan_index_free(idx);

        ax_dedup_opts o;
        ax_dedup_opts_default(&o);
        o.input = in;
        o.out = out;
        o.n = n;
        t0 = ax_now(), c0 = cpu_now();
        if (ax_dedup_run(&o, &r) != AX_OK) {
            fprintf(stderr, "bench_dedup: %s\n", ax_error_msg());
            return 1;
        }
        dw[rep] = ax_now() - t0;
        dc[rep] = cpu_now() - c0;

        o.n = 0;
        o.documents = 1;
        t0 = ax_now();
        ax_dedup_result rd;
        if (ax_dedup_run(&o, &rd) != AX_OK) return 1;
        docw[rep] = ax_now() - t0;
    }
    double b = median3(bw), d = median3(dw), bcm = median3(bc), dcm = median3(dc),
           docm = median3(docw);
    printf("bench_dedup: %.1fM tokens, %llu docs, n = %d; removed %.2f%% of tokens "
           "(%llu spans listed)\n",
           (double)T / 1e6, (unsigned long long)ax_axd_n_docs(ds), n,
           100.0 * (double)(r.tokens_before - r.tokens_after) / (double)r.tokens_before,
           (unsigned long long)r.n_spans);
    printf("index build alone (ceiling): %.2f M tokens/s (%.3f s wall, %.3f s CPU)\n",
           (double)T / b / 1e6, b, bcm);
    printf("dedup --n %d:               %.2f M tokens/s (%.3f s wall, %.3f s CPU)\n", n,
           (double)T / d / 1e6, d, dcm);
    printf("dedup / build ratio: %.3f wall, %.3f CPU (medians of 3)\n", b / d, bcm / dcm);
    printf("dedup --documents alone:    %.2f M tokens/s (%.3f s wall)\n", (double)T / docm / 1e6,
           docm);
    ax_axd_free(ds);
    unlink(in);
    unlink(out);
    char s[300];
    snprintf(s, sizeof s, "%s.dedup.json", out);
    unlink(s);
    return 0;
}
