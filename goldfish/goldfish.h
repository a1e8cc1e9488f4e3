/* Goldfish loss masks (Hans et al. 2024, "Be like a Goldfish"): per target token, whether it
 * counts in the loss. Dropping a pseudo-random 1/k of the targets means the model is never
 * supervised on a whole passage, so it cannot learn to reproduce it verbatim.
 *
 * Spec grammar (--goldfish, checkpoint manifests, metrics):
 *   none | static[:k=K] | hash[:k=K[,h=H][,seed=S]]      (keys in any order, each at most once)
 * defaults k=4, h=13, seed=0 (the paper's headline setting); K in 2..65536, H in 1..1024,
 * S a u64 in decimal or 0x-hex.
 *   none    every target is supervised;
 *   static  drops target i iff (i + 1) % k == 0, i = the target's position within the window
 *           of n targets passed to ax_goldfish_mask (so every k-th target of a sequence);
 *   hash    drops target i iff XXH3_64bits_withSeed(tokens[i-h .. i-1], seed) < 2^64 / k,
 *           the ids hashed as little-endian int32; the first h targets of each document are
 *           kept. The decision depends only on the h preceding ids and the seed: every rank,
 *           epoch, copy of a passage and packing offset drops the same tokens. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "lib/core/status.h"

typedef enum {
    AX_GOLDFISH_NONE = 0,
    AX_GOLDFISH_STATIC = 1,
    AX_GOLDFISH_HASH = 2,
} ax_goldfish_strategy;

#define AX_GOLDFISH_K_DEFAULT 4
#define AX_GOLDFISH_H_DEFAULT 13
#define AX_GOLDFISH_K_MAX 65536
#define AX_GOLDFISH_H_MAX 1024
#define AX_GOLDFISH_SPEC_MAX 64 /* buffer size that always holds ax_goldfish_format's output */

/* Fields a strategy does not use are 0 (so two parsed specs compare equal with memcmp). */
typedef struct {
    ax_goldfish_strategy strategy;
    int k;         /* static, hash: drop 1 target in k */
    int h;         /* hash: context length in tokens */
    uint64_t seed; /* hash */
} ax_goldfish;

/* Parses a spec; NULL is an error. On failure returns AX_ERR_ARG with a message naming
 * --goldfish, the text, what was wrong and the valid grammar; *out is then left as none. */
ax_status ax_goldfish_parse(const char *spec, ax_goldfish *out);
/* Canonical spec with every field written, e.g. "none", "static:k=4",
 * "hash:k=4,h=13,seed=0"; parses back to the same struct. Truncated to n - 1 bytes. */
void ax_goldfish_format(const ax_goldfish *g, char *buf, size_t n);
/* Left context (tokens before tokens[0]) that ax_goldfish_mask may read: h for hash, else 0. */
int ax_goldfish_context(const ax_goldfish *g);

/* Mask n targets: tokens[i] is target i and doc_pos[i] its index within its document
 * (0 = the document's first token). keep[i] = 1 if supervised, 0 if dropped.
 * For hash, tokens[i-h .. i-1] must be readable whenever doc_pos[i] >= h (pass a pointer
 * ax_goldfish_context(g) tokens into a buffer holding the left context). doc_pos NULL means
 * tokens[0] starts a document that runs past tokens[n-1] (doc_pos[i] = i); none and static
 * ignore doc_pos. */
void ax_goldfish_mask(const ax_goldfish *g, const int32_t *tokens, const uint32_t *doc_pos, long n,
                      uint8_t *keep);
/* Number of zeros in keep[0..n). */
long ax_goldfish_count_dropped(const uint8_t *keep, long n);
