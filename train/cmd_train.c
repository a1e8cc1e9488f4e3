/* `axmem train`: parse the table-driven flags, run, and turn failures into one clear line. */
#include "cli/commands.h"
#include "lib/log.h"
#include "lib/mpienv.h"
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ax_cmd_train(int argc, char **argv) {
    ax_train_config cfg;
    uint8_t *was_set = calloc((size_t)ax_train_table.n, 1);
    int help = 0, rc = 0;
    if (!was_set) return 1;
    ax_status st = ax_cfg_set_defaults(&ax_train_table, &cfg);
    if (st == AX_OK) st = ax_cfg_parse_argv(&ax_train_table, &cfg, argc, argv, was_set, &help);
    if (help) {
        ax_cfg_print_help(&ax_train_table, stdout);
        goto done;
    }
    if (st != AX_OK) {
        fprintf(stderr, "axmem train: %s\n", ax_error_msg());
        rc = 2;
        goto done;
    }
    ax_train_result res;
    st = ax_train_run(&cfg, was_set, &res);
    if (st != AX_OK) {
        fprintf(stderr, "axmem train: %s\n",
                ax_error_msg()[0] ? ax_error_msg() : ax_status_str(st));
        rc = st == AX_ERR_ARG ? 2 : 1;
        goto done;
    }
    if (ax_mpi_world_rank() != 0) {
        /* rank 0 reports */
    } else if (res.interrupted) {
        AX_INFO("stopped at step %ld; continue with: axmem train --out %s --resume", res.last_step,
                cfg.out);
        rc = 130;
    } else if (res.last_step == res.first_step) {
        AX_INFO("nothing to do: %s is already at step %ld (raise --steps to train further)",
                cfg.out, res.last_step);
    } else {
        AX_INFO("done: step %ld, loss %.4f; metrics in %s/metrics.jsonl", res.last_step,
                res.final_loss, cfg.out);
    }
done:
    free(was_set);
    return rc;
}
