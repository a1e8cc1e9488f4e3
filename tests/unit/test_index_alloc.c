/* The build's big buffers (index/table.h ax_ms_alloc_populated): populated in 32 MB pieces,
 * with huge pages turned off part way when they come slowly. Whatever the pieces got, the
 * memory must be zeroed (the table reads a zero value as an empty slot) and writable to its
 * last byte, across piece boundaries and in a partial last piece. */
#include "index/table.h"

#include <criterion/criterion.h>
#include <stdint.h>
#include <sys/mman.h>

Test(index, populated_memory_is_zeroed_and_writable) {
    const size_t piece = (size_t)32 << 20;
    const size_t sizes[] = {4096, piece, 3 * piece + 12345};
    for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
        size_t bytes = sizes[k];
        volatile uint8_t *p = ax_ms_alloc_populated(bytes);
        cr_assert_not_null((void *)p, "%zu bytes", bytes);
        size_t nonzero = 0;
        for (size_t off = 0; off < bytes; off += 1024) nonzero += p[off] != 0;
        nonzero += p[bytes - 1] != 0;
        cr_assert_eq(nonzero, 0, "%zu of the sampled bytes of a %zu-byte buffer are not zero",
                     nonzero, bytes);
        for (size_t off = 0; off < bytes; off += 4096) p[off] = (uint8_t)(off >> 12 | 1);
        p[bytes - 1] = 0xab;
        size_t bad = 0;
        for (size_t off = 0; off < bytes; off += 4096) bad += p[off] != (uint8_t)(off >> 12 | 1);
        cr_assert_eq(bad, 0);
        cr_assert_eq(p[bytes - 1], 0xab);
        munmap((void *)p, bytes);
    }
}
