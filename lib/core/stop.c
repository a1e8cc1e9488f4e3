#include "lib/core/stop.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* written by the signal thread (or ax_stop_request), read by anyone: __atomic builtins, and
 * volatile so loops that poll through ax_stop_flag() re-read it */
static volatile int g_flag;
static int g_sig;
static int g_started;
static int g_caught; /* someone polls the flag: a first signal only sets it */
static sigset_t g_set;
static sigset_t g_ignored; /* stop signals ignored when the process started */

/* watchdog state: g_since is CLOCK_MONOTONIC ns when the current wait began, 0 when none */
static int64_t g_since;
static const char *g_op, *g_axis;
static int64_t g_timeout_ms = 600000;
static int g_rank = -1;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void say(const char *msg) { /* one write: lines from several ranks do not interleave */
    ssize_t w = write(STDERR_FILENO, msg, strlen(msg));
    (void)w;
}

const char *ax_stop_signal_name(int sig) {
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    case SIGUSR1:
        return "SIGUSR1";
    case SIGUSR2:
        return "SIGUSR2";
    }
    return sig ? "signal" : "request";
}

/* What the signal would have done without us: the default action (end the process, the
 * shell sees 128 + sig) runs on this thread, which never runs BLAS; or nothing if ignored. */
static void default_action(int sig) {
    if (sigismember(&g_ignored, sig)) return;
    signal(sig, SIG_DFL);
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL);
    raise(sig);
    _exit(128 + sig);
}

static void on_signal(int sig) {
    char msg[256];
    if (!__atomic_load_n(&g_caught, __ATOMIC_SEQ_CST)) {
        default_action(sig); /* returns only when the signal was ignored at start */
        return;
    }
    int rank = __atomic_load_n(&g_rank, __ATOMIC_RELAXED);
    char who[32] = "";
    if (rank >= 0) snprintf(who, sizeof who, "[r%d] ", rank);
    if (__atomic_load_n(&g_flag, __ATOMIC_SEQ_CST)) {
        snprintf(msg, sizeof msg, "%saxmem: second stop signal (%s): exiting now\n", who,
                 ax_stop_signal_name(sig));
        say(msg);
        sigdelset(&g_ignored, sig);
        default_action(sig);
        return;
    }
    __atomic_store_n(&g_sig, sig, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_flag, 1, __ATOMIC_SEQ_CST);
    if (rank <= 0) {
        snprintf(msg, sizeof msg,
                 "%saxmem: %s: stopping at the next safe point (send it again to exit at "
                 "once)\n",
                 who, ax_stop_signal_name(sig));
        say(msg);
    }
}

static void check_stall(void) {
    int64_t since = __atomic_load_n(&g_since, __ATOMIC_ACQUIRE);
    int64_t limit = __atomic_load_n(&g_timeout_ms, __ATOMIC_RELAXED);
    if (!since || limit <= 0) return;
    int64_t waited = now_ns() - since;
    if (waited <= limit * 1000000) return;
    const char *op = __atomic_load_n(&g_op, __ATOMIC_RELAXED);
    const char *axis = __atomic_load_n(&g_axis, __ATOMIC_RELAXED);
    char msg[512], who[32] = "this process";
    int rank = __atomic_load_n(&g_rank, __ATOMIC_RELAXED);
    if (rank >= 0) snprintf(who, sizeof who, "rank %d", rank);
    snprintf(msg, sizeof msg,
             "axmem: %s: waited %.0f s in a collective (%s over the %s axis): another rank is "
             "stalled or dead; aborting (--stall-timeout %g s, or AXMEM_STALL_TIMEOUT; 0 turns "
             "the check off)\n",
             who, (double)waited / 1e9, op ? op : "?", axis ? axis : "?", (double)limit / 1e3);
    say(msg);
    _exit(1);
}

static void *signal_thread(void *arg) {
    (void)arg;
    for (;;) {
        struct timespec tick = {1, 0};
        int sig = sigtimedwait(&g_set, NULL, &tick);
        if (sig > 0) on_signal(sig);
        check_stall();
    }
    return NULL;
}

ax_status ax_stop_start(void) {
    if (g_started) return AX_OK;
    const char *env = getenv("AXMEM_STALL_TIMEOUT");
    if (env && *env) {
        char *end;
        double s = strtod(env, &end);
        if (*end || !(s >= 0) || s > 1e9)
            return ax_errorf(AX_ERR_ARG,
                             "AXMEM_STALL_TIMEOUT='%s' is not a number of seconds (0 = off)", env);
        ax_stall_set_timeout(s);
    }
    sigemptyset(&g_set);
    sigemptyset(&g_ignored);
    sigaddset(&g_set, SIGINT);
    sigaddset(&g_set, SIGTERM);
    sigaddset(&g_set, SIGUSR1);
    sigaddset(&g_set, SIGUSR2);
    struct sigaction sa;
    /* nohup: a hang-up is not a stop */
    if (sigaction(SIGHUP, NULL, &sa) == 0 && sa.sa_handler != SIG_IGN) sigaddset(&g_set, SIGHUP);
    /* `cmd &` in a script starts with SIGINT ignored: keep ignoring it where nobody polls
     * (a blocked signal is queued even when ignored), but stop cleanly where somebody does */
    if (sigaction(SIGINT, NULL, &sa) == 0 && sa.sa_handler == SIG_IGN)
        sigaddset(&g_ignored, SIGINT);
    sigset_t old;
    int rc = pthread_sigmask(SIG_BLOCK, &g_set, &old);
    if (rc) return ax_errorf(AX_ERR_IO, "cannot block stop signals: %s", strerror(rc));
    pthread_attr_t attr;
    pthread_t tid;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    rc = pthread_create(&tid, &attr, signal_thread, NULL);
    pthread_attr_destroy(&attr);
    if (rc) {
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return ax_errorf(AX_ERR_IO, "cannot start the signal thread: %s", strerror(rc));
    }
    g_started = 1;
    return AX_OK;
}

void ax_stop_catch(void) {
    __atomic_store_n(&g_caught, 1, __ATOMIC_SEQ_CST);
}

int ax_stop_started(void) {
    return g_started;
}

int ax_stop_requested(void) {
    return __atomic_load_n(&g_flag, __ATOMIC_SEQ_CST) != 0;
}

int ax_stop_signal(void) {
    return __atomic_load_n(&g_sig, __ATOMIC_SEQ_CST);
}

volatile int *ax_stop_flag(void) {
    return &g_flag;
}

void ax_stop_request(int sig) {
    __atomic_store_n(&g_sig, sig, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_flag, 1, __ATOMIC_SEQ_CST);
}

void ax_stop_clear(void) {
    __atomic_store_n(&g_flag, 0, __ATOMIC_SEQ_CST);
    __atomic_store_n(&g_sig, 0, __ATOMIC_SEQ_CST);
}

void ax_stall_set_timeout(double seconds) {
    int64_t ms = seconds > 0 ? (int64_t)(seconds * 1000.0 + 0.5) : 0;
    __atomic_store_n(&g_timeout_ms, ms, __ATOMIC_RELAXED);
}

double ax_stall_timeout(void) {
    return (double)__atomic_load_n(&g_timeout_ms, __ATOMIC_RELAXED) / 1000.0;
}

void ax_stall_set_rank(int rank) {
    __atomic_store_n(&g_rank, rank, __ATOMIC_RELAXED);
}

void ax_stall_begin(const char *op, const char *axis) {
    __atomic_store_n(&g_op, op, __ATOMIC_RELAXED);
    __atomic_store_n(&g_axis, axis, __ATOMIC_RELAXED);
    __atomic_store_n(&g_since, now_ns(), __ATOMIC_RELEASE);
}

void ax_stall_end(void) {
    __atomic_store_n(&g_since, 0, __ATOMIC_RELEASE);
}
