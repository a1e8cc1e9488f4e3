/* Internals of the Hugging Face tokenizer.json kind of ax_tokenizer_t (BPE models only):
 * what hf_load.c reads from the JSON and hf_encode.c applies. The pipeline per text:
 *   1. added tokens (special or not) not marked "normalized" are cut out first,
 *      leftmost-longest, each with the id the tokenizers library gives it (hf_load.c);
 *   2. each remaining segment is normalized (NFC, Prepend, Replace string ops, in order) and
 *      the "normalized" added tokens are cut out of it the same way (allowed with no
 *      normalizer or NFC only);
 *   3. pre-tokenized: a Split / ByteLevel regex (GPT-2 or Llama-3, data/hf/hf_pretok.h), with
 *      ByteLevel's optional prefix space, or Metaspace (spaces -> replacement, prepend
 *      always / first segment / never, optional split before each replacement);
 *   4. each piece becomes initial symbols: in byte-level models one per byte (the vocabulary's
 *      strings are decoded through GPT-2's byte-to-unicode table back to raw bytes), else one
 *      per UTF-8 character, falling back to <0xNN> byte tokens, then unk;
 *   5. merges apply by rank (list order), leftmost first among equal ranks; with
 *      ignore_merges a piece that is itself a vocabulary entry is emitted whole. */
#pragma once
#include <stddef.h>
#include <stdint.h>
#include "data/tok_internal.h"
#include "data/tokenizer.h"

enum { AX_HF_META_NEVER = 0, AX_HF_META_ALWAYS = 1, AX_HF_META_FIRST = 2 };

enum { AX_HF_NORM_REPLACE = 0, AX_HF_NORM_PREPEND = 1, AX_HF_NORM_NFC = 2 };
typedef struct {
    int kind; /* AX_HF_NORM_*: prepend `a` when non-empty; replace every `a` by `b`; NFC */
    char *a, *b;
    size_t a_len, b_len;
} ax_hf_norm_op;

typedef struct {
    char *bytes; /* the content (NFC-normalized for a normalized token under NFC) */
    size_t len;
    int32_t id;
    int normalized; /* matched in the normalized segments, after the others (second pass) */
} ax_hf_added;

/* string -> id, open addressing over XXH3; keys point into `strs` */
typedef struct {
    uint64_t *hash; /* 0 = empty */
    int32_t *id;
    uint64_t mask;
    const uint8_t **key;
    uint32_t *key_len;
} ax_hf_strmap;

typedef struct ax_hf {
    /* normalizer */
    ax_hf_norm_op *norm;
    int n_norm;
    /* pre-tokenizer */
    int regex;     /* AX_HF_RE_* */
    int bytelevel; /* the model's strings are byte-level (GPT-2 byte-to-unicode) */
    int prefix_space;
    int meta; /* Metaspace pre-tokenizer present */
    int meta_prepend;
    int meta_split;
    char meta_rep[8];
    size_t meta_rep_len;
    int strip_lead_space; /* decode drops one leading space (a ▁ prepended on encode) */
    /* model */
    int byte_fallback, ignore_merges, fuse_unk;
    int32_t unk;           /* -1: none */
    int32_t byte_tok[256]; /* <0xNN> ids, -1 if absent; in byte-level models: id of byte b */
    ax_hf_strmap vocab;    /* model strings (raw bytes when byte-level) -> id */
    /* merges: pair (a, b) -> rank and merged id */
    uint64_t *mkeys;
    uint32_t *mrank;
    int32_t *mnew;
    uint64_t mmask;
    /* added tokens, by first byte for matching */
    ax_hf_added *added;
    int n_added, n_added_normalized;
    int32_t first_added[257]; /* added[first_added[c] .. first_added[c+1]) start with byte c */
    uint8_t *arena;           /* strings the maps point into */
} ax_hf;

/* ---- building (hf_vocab.c), called in this order by hf_load.c ---- */
struct ax_json;
typedef struct {
    const uint8_t **disp; /* [V] what each id decodes to before the transforms below */
    uint32_t *dlen;
    const char *sp_rep; /* the space stand-in ("▁"), shown as a space; NULL if none */
    uint32_t u2b[324];  /* GPT-2's unicode-to-byte table (256 = not a byte) */
} ax_hf_strings;
void ax_hf_strings_free(ax_hf_strings *s);
/* vocab keys and the string map; the space stand-in and decode's leading-space rule */
ax_status ax_hf_read_vocab(ax_hf *h, const struct ax_json *vocab, int V, size_t total,
                           const char *path, ax_hf_strings *s);
ax_status ax_hf_read_merges(ax_hf *h, const struct ax_json *merges, size_t total,
                            const ax_hf_strings *s, const char *path);
/* unk_token (NULL: none) and the 256 byte tokens */
ax_status ax_hf_read_unk_bytes(ax_hf *h, const char *unk, const char *path);
/* t->tok_off/tok_len/tok_bytes: the bytes each id decodes to (after the added tokens are read) */
ax_status ax_hf_token_bytes(const ax_hf *h, ax_tokenizer_t *t, ax_hf_strings *s, const char *path);

/* Parses tokenizer.json bytes into a tokenizer (hf set, token bytes filled, checksum = XXH3
 * of the bytes). `path` names the file in errors, each of which names the unsupported or
 * malformed component. */
ax_status ax_hf_load_bytes(const uint8_t *bytes, size_t n, const char *path, ax_tokenizer_t **out);
void ax_hf_free(ax_hf *h);

/* Encoding with a per-thread cache of piece -> ids (hf_encode.c). */
typedef struct ax_hf_cache ax_hf_cache;
ax_hf_cache *ax_hf_cache_create(void);
void ax_hf_cache_free(ax_hf_cache *c);
/* *out malloc'd (never NULL on success) */
ax_status ax_hf_encode(const ax_tokenizer_t *t, ax_hf_cache *c, const uint8_t *p, size_t n,
                       int32_t **out, size_t *n_out);

int32_t ax_hf_strmap_get(const ax_hf_strmap *m, const uint8_t *s, size_t n);
/* room for n keys (0 on allocation failure); put keeps a pointer to the key, and returns 0
 * when the key is already there */
int ax_hf_strmap_init(ax_hf_strmap *m, size_t n);
int ax_hf_strmap_put(ax_hf_strmap *m, const uint8_t *s, size_t n, int32_t id);
void ax_hf_strmap_free(ax_hf_strmap *m);
/* rank of merging (a, b) (UINT32_MAX if none) and the merged id */
static inline uint32_t ax_hf_merge_lookup(const ax_hf *h, int32_t a, int32_t b, int32_t *nw) {
    uint64_t j = ax_tok_pair_slot(h->mkeys, h->mmask, ax_tok_pair_key((uint32_t)a, (uint32_t)b));
    if (!h->mkeys[j]) return UINT32_MAX;
    *nw = h->mnew[j];
    return h->mrank[j];
}
