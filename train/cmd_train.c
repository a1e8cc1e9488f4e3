/* `axmem train`: parse the table-driven flags, run (train/train_run.h, with the probe as its
 * scan: train/train_scan.h), and turn failures into one clear line. */
#include "cli/commands.h"
#include "lib/core/log.h"
#include "lib/dist/mpienv.h"
#include "lib/core/stop.h"
#include "train/train_run.h"
#include "train/train_scan.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Exit codes: 0 done; 1 failure; 2 bad usage; 128 + signal after a stop signal (130 Ctrl-C,
 * 143 SIGTERM); 75 (EX_TEMPFAIL: "try again") after --exit-after-steps/-minutes. Every
 * early stop has written a checkpoint: the printed command continues the run. */
#define AX_TRAIN_EXIT_RESUME 75

/* Appends s to the shell command in buf, single-quoted unless it is plainly safe. */
static void shell_word(char *buf, size_t cap, const char *s) {
    size_t n = strlen(buf);
    int plain = *s != 0;
    for (const char *p = s; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_./-+=:@%,", *p)) plain = 0;
    if (plain) {
        snprintf(buf + n, cap - n, "%s", s);
        return;
    }
    if (n + 1 < cap) buf[n++] = '\'', buf[n] = 0;
    for (const char *p = s; *p && n + 5 < cap; p++) {
        if (*p == '\'') {
            memcpy(buf + n, "'\\''", 4);
            n += 4;
        } else {
            buf[n++] = *p;
        }
        buf[n] = 0;
    }
    snprintf(buf + n, cap - n, "'");
}

/* The command that continues this run: the settings come from the checkpoint, so --out and
 * --resume suffice; the launcher with the same rank count when there is more than one. */
static void resume_command(const char *out, char *buf, size_t cap) {
    buf[0] = 0;
    int np = ax_mpi_world_size();
    if (np > 1) {
        const char *launcher = getenv("OMPI_COMM_WORLD_SIZE") ? "mpirun -np"
                               : getenv("SLURM_PROCID")       ? "srun -n"
                                                              : "mpiexec -n";
        snprintf(buf, cap, "%s %d ", launcher, np);
    }
    /* the program as it was invoked (a bare name was found on PATH, and will be again) */
    shell_word(buf, cap, program_invocation_name);
    snprintf(buf + strlen(buf), cap - strlen(buf), " train --out ");
    shell_word(buf, cap, out);
    snprintf(buf + strlen(buf), cap - strlen(buf), " --resume");
}

int ax_cmd_train(int argc, char **argv) {
    ax_ms_probe_opts probe;
    ax_train_scan_hook hook = ax_train_probe_hook(&probe);
    ax_error_clear(); /* run in-process too (tests): an earlier message is not this command's */
    ax_stop_catch();  /* from here on a stop signal ends training cleanly, with a checkpoint */
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
    st = ax_train_run_scan(&cfg, was_set, &hook, &res);
    if (st != AX_OK) {
        fprintf(stderr, "axmem train: %s\n",
                ax_error_msg()[0] ? ax_error_msg() : ax_status_str(st));
        rc = st == AX_ERR_ARG ? 2 : 1;
        goto done;
    }
    if (res.interrupted)
        rc = res.stop == AX_TRAIN_STOP_SIGNAL ? 128 + (res.stop_signal ? res.stop_signal : SIGINT)
                                              : AX_TRAIN_EXIT_RESUME;
    if (ax_mpi_world_rank() != 0) {
        /* rank 0 reports */
    } else if (res.interrupted) {
        char hint[AX_CFG_STR_MAX * 4 + 256];
        resume_command(cfg.out, hint, sizeof hint);
        AX_INFO("stopped at step %ld of %lld (exit %d); continue with: %s%s", res.last_step,
                (long long)cfg.steps, rc, hint,
                ax_mpi_world_size() > 1 ? "   (plus your other launcher options)" : "");
    } else if (res.last_step == res.first_step) {
        AX_INFO("nothing to do: %s is already at step %ld (raise --steps to train further)",
                cfg.out, res.last_step);
    } else {
        AX_INFO("done: step %ld, loss %.4f; metrics in %s/metrics.jsonl", res.last_step,
                res.final_loss, cfg.out);
    }
    if (ax_mpi_world_rank() == 0 && res.dp)
        AX_INFO("DP-SGD: (epsilon %.4g, delta %g)-DP after %ld steps; the unit of privacy is %s "
                "(Poisson sampling; RDP accountant, docs/privacy.md)",
                res.dp_epsilon, res.dp_delta, res.last_step, res.dp_unit);
done:
    free(was_set);
    return rc;
}
