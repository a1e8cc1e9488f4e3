/* libFuzzer target: the run folder's lock record (train/run_lock.c), as `axmem train` finds it
 * in OUT/.lock: taking the lock over any record must refuse or take it, never crash, and a
 * taken lock is released without leaving its file. */
#include <sys/stat.h>

#include "fuzz_util.h"
#include "train/run_lock.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (fz_seed_dir()) {
        char host[256] = "";
        gethostname(host, sizeof host - 1);
        char s[4][600];
        snprintf(s[0], sizeof s[0],
                 "{\"lock\":\"axmem train\",\"host\":\"%s\",\"pid\":999999,\"boot_id\":\"x\","
                 "\"proc_start\":12,\"since\":\"2026-01-02 03:04:05 UTC\",\"command\":\"axmem "
                 "train --out run\"}",
                 host);
        snprintf(s[1], sizeof s[1],
                 "{\"lock\":\"axmem train\",\"host\":\"elsewhere.example\",\"pid\":4242,"
                 "\"since\":\"yesterday\",\"command\":\"axmem train\"}");
        snprintf(s[2], sizeof s[2], "{\"host\":\"%s\",\"pid\":1}", host);
        snprintf(s[3], sizeof s[3], "not a record");
        char name[32];
        for (int i = 0; i < 4; i++) {
            snprintf(name, sizeof name, "seed%d.lock", i);
            fz_write_seed(name, s[i], strlen(s[i]));
        }
        exit(0);
    }
    fz_init("lock");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char dir[300], path[400];
    fz_path(dir, sizeof dir, "run");
    snprintf(path, sizeof path, "%s/.lock", dir);
    mkdir(dir, 0700);
    fz_write(path, data, size);
    ax_run_lock *l = NULL;
    ax_status st = ax_run_lock_take(dir, 0, &l);
    fz_note("lock", st);
    if ((st == AX_OK) != (l != NULL)) abort(); /* a lock exactly when it says so */
    ax_run_lock_release(l);
    if (st == AX_OK && ax_path_exists(path)) abort(); /* released: its file is gone */
    ax_error_clear();
    unlink(path);
    return 0;
}
