/* Growable arrays: the one doubling-realloc step every buffer of unknown final size takes. */
#pragma once
#include <stddef.h>
#include <stdlib.h>

/* Room for `need` elements of `size` bytes in *buf, whose capacity is *cap elements: the
 * capacity doubles (from `first`, or 1, when it is 0) until it fits. 0 when the allocation fails
 * (the buffer and *cap are then as they were), else 1. */
static inline int ax_grow(void *buf, size_t *cap, size_t need, size_t size, size_t first) {
    if (need <= *cap) return 1;
    size_t nc = *cap ? *cap : first ? first : 1;
    while (nc < need) nc *= 2;
    void *nb = realloc(*(void **)buf, nc * size);
    if (!nb) return 0;
    *(void **)buf = nb;
    *cap = nc;
    return 1;
}
