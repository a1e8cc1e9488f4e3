// TEST-ONLY stand-in for the toolkit's cuda_bf16.h (see cuda_runtime_api.h here): the bf16
// storage type and the one conversion lib/backend/cuda/ uses, written from the format's
// definition (the top 16 bits of an IEEE binary32), not from NVIDIA's header.
#pragma once
#include <stdint.h>
#include <string.h>

struct __nv_bfloat16 {
    uint16_t x; // sign, 8 exponent bits, 7 mantissa bits
};

// round to nearest, ties to even; NaN stays a (quiet) NaN; overflow rounds to infinity
static inline __nv_bfloat16 __float2bfloat16_rn(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    __nv_bfloat16 b;
    if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu)) {
        b.x = (uint16_t)((u >> 16) | 0x0040u);
        return b;
    }
    u += 0x7fffu + ((u >> 16) & 1u);
    b.x = (uint16_t)(u >> 16);
    return b;
}

// the exact value of a bf16 as a float: its 16 bits on top of a binary32
static inline float __bfloat162float(__nv_bfloat16 b) {
    uint32_t u = (uint32_t)b.x << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

// the 16 bits of a bf16
static inline unsigned short __bfloat16_as_ushort(__nv_bfloat16 b) {
    return b.x;
}
