/* ax_errorf / ax_error_clear semantics (lib/core/status.h): the first message wins, clear
 * resets, AX_CHECK propagates without touching the message, messages are per thread. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <string.h>

#include "lib/core/status.h"

static ax_status fails_deep(void) {
    return ax_errorf(AX_ERR_IO, "cannot read deep.bin");
}
static ax_status fails_above(void) {
    AX_CHECK(fails_deep());
    return AX_OK;
}
static ax_status wraps(void) {
    ax_status st = fails_above();
    if (st != AX_OK) return ax_errorf(st, "loading the model failed");
    return AX_OK;
}

Test(status, first_message_wins_and_check_propagates) {
    ax_error_clear();
    cr_assert_str_eq(ax_error_msg(), "");
    cr_assert_eq(wraps(), AX_ERR_IO);
    cr_assert_str_eq(ax_error_msg(), "cannot read deep.bin");
}

Test(status, handled_message_does_not_leak_after_clear) {
    ax_error_clear();
    /* a caller that handles the failure (fallback) clears it ... */
    if (fails_deep() != AX_OK) ax_error_clear();
    /* ... so a later, unrelated failure reports its own message, not the stale one */
    cr_assert_eq(ax_errorf(AX_ERR_ARG, "--steps is required"), AX_ERR_ARG);
    cr_assert_str_eq(ax_error_msg(), "--steps is required");
    ax_error_clear();
    cr_assert_str_eq(ax_error_msg(), "");
}

Test(status, stale_message_is_kept_without_clear) {
    /* the reason the dispatcher clears: without it, the first message would mask the next */
    ax_error_clear();
    (void)fails_deep();
    (void)ax_errorf(AX_ERR_ARG, "second");
    cr_assert_str_eq(ax_error_msg(), "cannot read deep.bin");
    ax_error_clear();
}

static void *other_thread(void *arg) {
    (void)arg;
    (void)ax_errorf(AX_ERR_MPI, "other thread's failure");
    return NULL;
}

Test(status, messages_are_per_thread) {
    ax_error_clear();
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, NULL);
    cr_assert_str_eq(ax_error_msg(), "");
}
