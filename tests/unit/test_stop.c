/* lib/stop: signals reach the stop flag through the signal thread, a second signal ends the
 * process, an uncaught one ends it at once, and the watchdog ends a process stuck in a wait.
 * Each Criterion test runs in its own process, so starting the thread here is contained. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include "lib/core/stop.h"
#include "lib/core/timer.h"

/* polls for up to 3 s: the signal thread sets the flag asynchronously */
static int wait_for_stop(void) {
    double t0 = ax_now();
    while (!ax_stop_requested() && ax_now() - t0 < 3.0) usleep(1000);
    return ax_stop_requested();
}

Test(stop, works_without_the_thread) {
    cr_assert(!ax_stop_started());
    cr_assert(!ax_stop_requested());
    cr_assert_eq(*ax_stop_flag(), 0);
    ax_stop_request(SIGTERM);
    cr_assert(ax_stop_requested());
    cr_assert_neq(*ax_stop_flag(), 0);
    cr_assert_eq(ax_stop_signal(), SIGTERM);
    cr_assert_str_eq(ax_stop_signal_name(SIGTERM), "SIGTERM");
    ax_stop_clear();
    cr_assert(!ax_stop_requested());
    /* waits are only marked: nothing watches them */
    ax_stall_set_timeout(0.001);
    ax_stall_begin("allreduce", "world");
    usleep(20000);
    ax_stall_end();
}

Test(stop, caught_signal_sets_the_flag) {
    cr_assert_eq(ax_stop_start(), AX_OK, "%s", ax_error_msg());
    ax_stop_catch();
    for (int sig = 0; sig < 2; sig++) {
        int s = sig ? SIGTERM : SIGINT;
        ax_stop_clear();
        cr_assert_eq(kill(getpid(), s), 0);
        cr_assert(wait_for_stop(), "%s did not reach the flag", ax_stop_signal_name(s));
        cr_assert_eq(ax_stop_signal(), s);
        ax_stop_clear();
    }
    /* the main thread never runs a handler: the signal stays blocked here */
    sigset_t mask;
    pthread_sigmask(SIG_BLOCK, NULL, &mask);
    cr_assert(sigismember(&mask, SIGINT) && sigismember(&mask, SIGTERM));
}

Test(stop, second_signal_ends_the_process, .signal = SIGUSR1) {
    cr_assert_eq(ax_stop_start(), AX_OK, "%s", ax_error_msg());
    ax_stop_catch();
    kill(getpid(), SIGUSR1);
    cr_assert(wait_for_stop());
    kill(getpid(), SIGUSR1);
    sleep(5); /* ended by the signal thread before this returns */
}

Test(stop, uncaught_signal_ends_the_process, .signal = SIGTERM) {
    cr_assert_eq(ax_stop_start(), AX_OK, "%s", ax_error_msg());
    kill(getpid(), SIGTERM);
    sleep(5);
}

Test(stop, watchdog_ends_a_stalled_wait, .exit_code = 1) {
    cr_assert_eq(ax_stop_start(), AX_OK, "%s", ax_error_msg());
    ax_stall_set_timeout(0.5);
    ax_stall_begin("allreduce(sum)", "data");
    sleep(5); /* the watchdog checks once a second and _exit(1)s */
}

Test(stop, watchdog_ignores_finished_waits) {
    cr_assert_eq(ax_stop_start(), AX_OK, "%s", ax_error_msg());
    ax_stall_set_timeout(0.5);
    for (int i = 0; i < 15; i++) { /* 1.5 s of short waits: never 0.5 s in one */
        ax_stall_begin("allreduce(sum)", "data");
        usleep(100000);
        ax_stall_end();
    }
    cr_assert_float_eq(ax_stall_timeout(), 0.5, 1e-9);
}

/* `cmd &` in a script starts with SIGINT ignored: a command that does not poll keeps ignoring
 * it (and sets no flag), and still ends on SIGTERM */
Test(stop, uncaught_ignored_signal_stays_ignored, .signal = SIGTERM) {
    signal(SIGINT, SIG_IGN);
    cr_assert_eq(ax_stop_start(), AX_OK, "%s", ax_error_msg());
    kill(getpid(), SIGINT);
    usleep(300000);
    cr_assert(!ax_stop_requested(), "an ignored SIGINT must not request a stop");
    kill(getpid(), SIGTERM);
    sleep(5);
}
