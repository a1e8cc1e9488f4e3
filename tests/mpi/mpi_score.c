/* memscan's per-token scores on a grid against the single-rank model, in one program: every
 * rank also scores all sequences on a private 1x1x1x1 model with the same weights. log p(target),
 * mu and sigma of every position must agree to 1e-4 (tests/mpi/memscan.sh runs it on 2x1x2x1:
 * vocabulary split over Y, sequences over the data ranks).
 * Usage: mpirun -np N mpi_score --grid DxXxYxZ. Verdict reduced over all ranks. */
#include "data/tokenizer.h"
#include "lib/core/log.h"
#include "lib/core/rng.h"
#include "lib/dist/comm.h"
#include "lib/dist/grid.h"
#include "lib/dist/mpienv.h"
#include "lib/model/model.h"
#include "memscan/score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T = 16, NS = 11, BATCH = 2, V = 301 };

static ax_model_config cfg(void) {
    /* vocab 301: not divisible by Gy = 2, so a padded vocabulary shard is exercised */
    ax_model_config c = {.n_layers = 2,
                         .dim = 32,
                         .n_heads = 4,
                         .ffn = 48,
                         .vocab = V,
                         .tie_embeddings = 1,
                         .rope_theta = 10000.0f,
                         .norm_eps = 1e-5f};
    return c;
}

static void scale(ax_model_t *m) { /* peaked distributions (sigma well above 0) */
    int64_t n = ax_model_n_local(m);
    float *p = malloc(sizeof *p * (size_t)n);
    if (!p || ax_model_read_params(m, p, 0, n) != AX_OK) ax_mpi_abort(1);
    for (int64_t i = 0; i < n; i++) p[i] *= 4.0f;
    if (ax_model_write_params(m, p, 0, n) != AX_OK) ax_mpi_abort(1);
    free(p);
}

int main(int argc, char **argv) {
    ax_log_init();
    if (ax_mpi_start(&argc, &argv) != AX_OK) {
        fprintf(stderr, "mpi_score: %s\n", ax_error_msg());
        return 1;
    }
    const char *spec = argc == 3 && !strcmp(argv[1], "--grid") ? argv[2] : "1x1x1x1";
    int dims[4];
    ax_grid_t *g = NULL;
    if (ax_grid_parse(spec, dims) || ax_grid_create(dims, &g)) {
        fprintf(stderr, "mpi_score: %s\n", ax_error_msg());
        ax_mpi_abort(1);
    }
    ax_model_config c = cfg();
    ax_model_t *par = NULL, *ref = NULL;
    double bad = 0, worst = 0;
    if (ax_model_create_on(g, &c, BATCH, T, 1, &par) != AX_OK ||
        ax_model_create(&c, BATCH, T, &ref) != AX_OK) {
        fprintf(stderr, "mpi_score: %s\n", ax_error_msg());
        ax_mpi_abort(1);
    }
    ax_model_init(par, 5), ax_model_init(ref, 5);
    scale(par), scale(ref);
    int32_t seqs[NS][T + 1];
    const int32_t *ptr[NS];
    int len[NS];
    for (int i = 0; i < NS; i++) {
        len[i] = 2 + (i * 7) % T;
        seqs[i][0] = AX_TOK_EOT;
        for (int t = 1; t < len[i]; t++)
            seqs[i][t] = (int32_t)ax_rng_below(9, (uint64_t)i, (uint64_t)t, V);
        ptr[i] = seqs[i];
    }
    ax_score_opts o = {.T = T, .batch = BATCH, .want_dist = 1};
    ax_score_result a, b;
    if (ax_score_seqs(par, NS, ptr, len, &o, &a) != AX_OK ||
        ax_score_seqs(ref, NS, ptr, len, &o, &b) != AX_OK) {
        fprintf(stderr, "[r%d] mpi_score: %s\n", ax_grid_rank(g), ax_error_msg());
        bad = 1;
    } else {
        double sig = 0;
        for (long k = 0; k < a.off[NS]; k++) {
            double e = fmax(fabs(a.logp[k] - b.logp[k]),
                            fmax(fabs(a.mu[k] - b.mu[k]), fabs(a.sigma[k] - b.sigma[k])));
            worst = fmax(worst, e);
            sig += b.sigma[k];
        }
        if (worst > 1e-4 || a.off[NS] != b.off[NS] || sig / (double)b.off[NS] < 0.05) {
            fprintf(stderr, "[r%d] FAIL: grid scores differ from 1 rank by %g (mean sigma %g)\n",
                    ax_grid_rank(g), worst, sig / (double)b.off[NS]);
            bad = 1;
        }
        ax_score_result_free(&a), ax_score_result_free(&b);
    }
    ax_coll_allreduce(g, AX_AXIS_WORLD, &bad, 1, AX_DT_F64, AX_OP_SUM);
    ax_coll_allreduce(g, AX_AXIS_WORLD, &worst, 1, AX_DT_F64, AX_OP_MAX);
    if (ax_grid_rank(g) == 0)
        printf("mpi_score %s: %s (largest difference from 1 rank %.2g)\n", spec,
               bad ? "FAILED" : "ok", worst);
    ax_model_free(par), ax_model_free(ref);
    ax_grid_free(g);
    ax_mpi_stop();
    return bad ? 1 : 0;
}
