/* The scan `axmem train --scan-every N --scan-config FILE` runs: memscan's probe of the step's
 * checkpoint (train/train_scan.c), as a hook for ax_train_run_scan (train/train_run.h). */
#pragma once
#include "memscan/probe_run.h"
#include "train/train_run.h"

/* The probe hook; its settings (read from the scan config at start-up) live in *opts, which
 * must outlive the run. */
ax_train_scan_hook ax_train_probe_hook(ax_ms_probe_opts *opts);
