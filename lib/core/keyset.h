/* A set of nonzero 64-bit keys (hashes): open addressing, linear probing, 0 = an empty slot.
 * Sized once by the caller (ax_hash_slots) and never grown. */
#pragma once
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    uint64_t *slot;
    uint64_t mask;
} ax_keyset;

/* The slots of an open-addressing table (this set, the tokenizers' pair and string maps) for up
 * to n keys at load <= 1/2: the smallest power of two >= max(16, 2n). */
static inline uint64_t ax_hash_slots(uint64_t n) {
    uint64_t slots = 16;
    while (slots < 2 * n) slots *= 2;
    return slots;
}
/* 0 when the allocation fails */
static inline int ax_keyset_init(ax_keyset *s, uint64_t slots) {
    s->slot = calloc((size_t)slots, sizeof *s->slot);
    s->mask = slots - 1;
    return s->slot != NULL;
}
/* 1 if k was added, 0 if it was there */
static inline int ax_keyset_add(ax_keyset *s, uint64_t k) {
    uint64_t i = k & s->mask;
    while (s->slot[i] && s->slot[i] != k) i = (i + 1) & s->mask;
    if (s->slot[i]) return 0;
    s->slot[i] = k;
    return 1;
}
static inline int ax_keyset_has(const ax_keyset *s, uint64_t k) {
    uint64_t i = k & s->mask;
    while (s->slot[i] && s->slot[i] != k) i = (i + 1) & s->mask;
    return s->slot[i] != 0;
}
