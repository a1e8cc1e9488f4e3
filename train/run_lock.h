/* The run folder's lock: one `axmem train` at a time in an --out folder.
 *
 * Two runs in one folder would interleave metrics.jsonl and race for the same step-NNNNNN, and
 * the loser's model is lost. So a run holds DIR/.lock from start to exit: a JSON record of who
 * holds it (host, PID, boot id, the process's start time, since when, the command), and an
 * flock(2) on it while the process lives. A second run is refused with a message naming the
 * holder. The kernel drops the flock when the holder dies, however it dies (SIGKILL too); the
 * record it leaves behind is stale when its host is this one and its process is gone (the PID
 * is not running, or now belongs to a process that started at another time, or the host has
 * rebooted since), and the next run takes it over with a notice. A record from another host
 * is never broken automatically (its process cannot be checked from here): the message says
 * how to remove it. Where the file system has no flock the record alone decides. */
#pragma once
#include "lib/core/status.h"

typedef struct ax_run_lock ax_run_lock;

/* Takes dir/.lock for this process. create_dir: create dir (and parents) first when missing;
 * otherwise a missing dir gives *out = NULL and AX_OK (there is nothing to protect: the caller
 * reports the missing folder). A held lock is AX_ERR_IO naming the holder and what to do. */
ax_status ax_run_lock_take(const char *dir, int create_dir, ax_run_lock **out);

/* Removes the lock file (if it is still this lock's) and frees l; the folders that
 * ax_run_lock_take created and that are still empty are removed too. Accepts NULL. */
void ax_run_lock_release(ax_run_lock *l);
