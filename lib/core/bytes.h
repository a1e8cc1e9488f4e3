/* Little-endian fields of the binary formats (datasets, tokenizers, imported indexes), read and
 * written through memcpy so that unaligned offsets are fine. The formats are little-endian and
 * so is every host axmem builds for (lib/ckpt/ckpt.c refuses others at compile time). */
#pragma once
#include <stdint.h>
#include <string.h>

static inline uint16_t ax_get16(const uint8_t *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}
static inline uint32_t ax_get32(const uint8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
static inline uint64_t ax_get64(const uint8_t *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}
static inline void ax_put32(uint8_t *p, uint32_t v) {
    memcpy(p, &v, 4);
}
static inline void ax_put64(uint8_t *p, uint64_t v) {
    memcpy(p, &v, 8);
}
