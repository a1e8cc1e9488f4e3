#include "lib/core/rng.h"

#include <math.h>
#include <pthread.h>

/* Three rounds of a strong 64-bit mixer (SplitMix64 finaliser / Stafford variant 13) over the
 * keyed counter. Not cryptographic; decorrelated enough for initialisation and shuffling. */
uint64_t ax_rng_u64(uint64_t seed, uint64_t stream, uint64_t index) {
    return ax_rng_at(ax_rng_key(seed, stream), index);
}

static float normal_from(uint64_t r) {
    /* two 32-bit halves -> Box-Muller; u1 in (0,1] avoids log(0) */
    double u1 = ((double)(r >> 32) + 1.0) / 4294967296.0;
    double u2 = (double)(r & 0xffffffffULL) / 4294967296.0;
    return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

float ax_rng_normal(uint64_t seed, uint64_t stream, uint64_t index) {
    return normal_from(ax_rng_u64(seed, stream, index));
}

uint64_t ax_rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n) {
    return (uint64_t)(((unsigned __int128)ax_rng_u64(seed, stream, index) * n) >> 64);
}

/* ---- the ziggurat: 128 layers of equal area v under exp(-x^2 / 2) (layer 0 the base strip
 * with the tail beyond R); x_127 = R, x_i from x_{i+1} by v = x_{i+1} (f(x_i) - f(x_{i+1})) ---- */
#define ZIG_R 3.442619855899      /* where the tail starts */
#define ZIG_V 9.91256303526217e-3 /* each layer's area */
#define ZIG_M 2147483648.0        /* 2^31: |h| <= ZIG_M */
static ax_rng_ziggurat zig;
static pthread_once_t zig_once = PTHREAD_ONCE_INIT;

static void zig_build(void) {
    double x = ZIG_R, next = ZIG_R, q = ZIG_V / exp(-0.5 * ZIG_R * ZIG_R);
    zig.k[0] = (uint32_t)(ZIG_R / q * ZIG_M), zig.k[1] = 0; /* base strip: a rectangle, width q */
    zig.w[0] = (float)(q / ZIG_M), zig.w[127] = (float)(ZIG_R / ZIG_M);
    zig.f[0] = 1.0, zig.f[127] = exp(-0.5 * ZIG_R * ZIG_R);
    for (int i = 126; i >= 1; i--) {
        x = sqrt(-2.0 * log(ZIG_V / x + exp(-0.5 * x * x)));
        zig.k[i + 1] = (uint32_t)(x / next * ZIG_M); /* inside layer i + 1's part under layer i */
        next = x;
        zig.f[i] = exp(-0.5 * x * x);
        zig.w[i] = (float)(x / ZIG_M);
    }
}

const ax_rng_ziggurat *ax_rng_ziggurat_tables(void) {
    pthread_once(&zig_once, zig_build);
    return &zig;
}

/* uniform in (0, 1) from a draw's high 53 bits */
static double open_unit(uint64_t r) {
    return ((double)(r >> 11) + 0.5) * 0x1p-53;
}

float ax_rng_gauss_slow(const ax_rng_ziggurat *z, uint64_t key, uint64_t index, uint64_t r) {
    for (uint64_t a = 1;; a++) { /* retry a: streams 3a, 3a + 1, 3a + 2 of key */
        int i = (int)(r & 127);
        int32_t h = (int32_t)(uint32_t)(r >> 32);
        uint32_t ah = h < 0 ? 0u - (uint32_t)h : (uint32_t)h;
        float x = (float)h * z->w[i];
        if (ah < z->k[i]) return x;
        if (i == 0) /* the tail beyond R (Marsaglia 1964): exact, retried within the tail */
            for (uint64_t t = a;; t++) {
                double xt = -log(open_unit(ax_rng_u64(key, 3 * t, index))) / ZIG_R;
                double y = -log(open_unit(ax_rng_u64(key, 3 * t + 1, index)));
                if (y + y >= xt * xt) return (float)(h > 0 ? ZIG_R + xt : -ZIG_R - xt);
            }
        /* a wedge: accept when a uniform height between the layer's edges is under the curve */
        double u = open_unit(ax_rng_u64(key, 3 * a, index));
        if (z->f[i] + u * (z->f[i - 1] - z->f[i]) < exp(-0.5 * (double)x * x)) return x;
        r = ax_rng_u64(key, 3 * a + 2, index);
    }
}
