/* Monotonic wall-clock time. */
#pragma once

double ax_now(void); /* seconds since an arbitrary origin, monotonic */
