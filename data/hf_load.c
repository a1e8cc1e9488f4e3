/* Reading a Hugging Face tokenizer.json (BPE models) into an ax_tokenizer_t: the supported
 * normalizers, pre-tokenizers and model options are listed in data/hf_tok.h; anything else is
 * refused with a message naming the file and the component. */
#include "data/hf_nfc.h"
#include "data/hf_pretok.h"
#include "data/hf_tok.h"
#include "data/tok_internal.h"
#include "lib/core/json.h"
#include "lib/core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define SUPPORTED                                                                                  \
    "axmem reads BPE tokenizers with the ByteLevel, Split (GPT-2 or Llama-3 regex) or "            \
    "Metaspace pre-tokenizers and Prepend/Replace normalizers (GPT-2, GPT-NeoX/Pythia, "           \
    "Llama-2, Llama-3 style)"

static const char *const EOT_NAMES[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};

/* ---- GPT-2's byte-to-unicode table: printable bytes map to themselves, the rest to
 * U+0100 onwards in byte order ---- */
static void byte_unicode(uint32_t b2u[256]) {
    uint32_t k = 0;
    for (uint32_t b = 0; b < 256; b++) {
        int keep = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174);
        b2u[b] = keep ? b : 256 + k++;
    }
}

/* Decodes a byte-level vocabulary string into raw bytes (out has room for len bytes);
 * returns the raw length, or -1 if a character is outside the table. */
static long bytelevel_decode(const uint32_t u2b[324], const char *s, size_t len, uint8_t *out) {
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint8_t c = (uint8_t)s[i];
        uint32_t cp;
        if (c < 0x80) {
            cp = c;
            i++;
        } else if ((c & 0xE0) == 0xC0 && i + 1 < len) {
            cp = ((uint32_t)(c & 0x1F) << 6) | ((uint8_t)s[i + 1] & 0x3F);
            i += 2;
        } else {
            return -1;
        }
        if (cp >= 324 || u2b[cp] > 255) return -1;
        out[o++] = (uint8_t)u2b[cp];
    }
    return (long)o;
}

/* the byte of a "<0xNN>" byte-fallback token (hex digits upper case), else -1 */
static int byte_token(const uint8_t *s, size_t l) {
    if (l != 6 || memcmp(s, "<0x", 3) || s[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        int c = s[k];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = 16 * v + d;
    }
    return v;
}

/* ---- string map ---- */
static int strmap_init(ax_hf_strmap *m, size_t n) {
    uint64_t cap = 16;
    while (cap < 2 * (uint64_t)n + 2) cap <<= 1;
    m->mask = cap - 1;
    m->hash = calloc(cap, sizeof *m->hash);
    m->id = malloc(cap * sizeof *m->id);
    m->key = malloc(cap * sizeof *m->key);
    m->key_len = malloc(cap * sizeof *m->key_len);
    return m->hash && m->id && m->key && m->key_len;
}
static void strmap_free(ax_hf_strmap *m) {
    free(m->hash);
    free(m->id);
    free(m->key);
    free(m->key_len);
}
/* 0 if the key is already present */
static int strmap_put(ax_hf_strmap *m, const uint8_t *s, size_t n, int32_t id) {
    uint64_t h = XXH3_64bits(s, n) | 1;
    uint64_t i = h & m->mask;
    for (; m->hash[i]; i = (i + 1) & m->mask)
        if (m->hash[i] == h && m->key_len[i] == n && !memcmp(m->key[i], s, n)) return 0;
    m->hash[i] = h;
    m->id[i] = id;
    m->key[i] = s;
    m->key_len[i] = (uint32_t)n;
    return 1;
}
int32_t ax_hf_strmap_get(const ax_hf_strmap *m, const uint8_t *s, size_t n) {
    uint64_t h = XXH3_64bits(s, n) | 1;
    for (uint64_t i = h & m->mask; m->hash[i]; i = (i + 1) & m->mask)
        if (m->hash[i] == h && m->key_len[i] == n && !memcmp(m->key[i], s, n)) return m->id[i];
    return -1;
}

void ax_hf_free(ax_hf *h) {
    if (!h) return;
    for (int i = 0; i < h->n_norm; i++) {
        free(h->norm[i].a);
        free(h->norm[i].b);
    }
    free(h->norm);
    strmap_free(&h->vocab);
    free(h->mkeys);
    free(h->mrank);
    free(h->mnew);
    for (int i = 0; i < h->n_added; i++) free(h->added[i].bytes);
    free(h->added);
    free(h->arena);
    free(h);
}

/* ---- component parsing ---- */
typedef struct {
    const char *path;
    ax_hf *h;
} ctx;

static const char *type_of(const ax_json *o) {
    const ax_json *t = ax_json_get(o, "type");
    return t && t->type == AX_JSON_STR ? t->str : NULL;
}
static int is_true(const ax_json *o, const char *key) {
    const ax_json *v = ax_json_get(o, key);
    return v && v->type == AX_JSON_BOOL && v->num != 0;
}
static int is_null_or_empty(const ax_json *o, const char *key) {
    const ax_json *v = ax_json_get(o, key);
    return !v || v->type == AX_JSON_NULL || (v->type == AX_JSON_STR && v->str_len == 0);
}
static const char *str_of(const ax_json *o, const char *key) {
    const ax_json *v = ax_json_get(o, key);
    return v && v->type == AX_JSON_STR ? v->str : NULL;
}

static ax_status unsupported(const ctx *c, const char *what, const char *name) {
    return ax_errorf(AX_ERR_MISMATCH, "%s: unsupported %s \"%s\"; " SUPPORTED, c->path, what,
                     name ? name : "(no type)");
}

static ax_status add_norm(ctx *c, int kind, const char *a, const char *b) {
    ax_hf *h = c->h;
    ax_hf_norm_op *n = realloc(h->norm, (size_t)(h->n_norm + 1) * sizeof *n);
    if (!n) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", c->path);
    h->norm = n;
    ax_hf_norm_op *op = &n[h->n_norm++];
    *op = (ax_hf_norm_op){kind, strdup(a), strdup(b ? b : ""), strlen(a), b ? strlen(b) : 0};
    if (!op->a || !op->b) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", c->path);
    return AX_OK;
}

static ax_status parse_normalizer(ctx *c, const ax_json *n, int depth) {
    if (!n || n->type == AX_JSON_NULL) return AX_OK;
    const char *t = type_of(n);
    if (n->type != AX_JSON_OBJ || !t)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"normalizer\" is not an object with a \"type\"",
                         c->path);
    if (!strcmp(t, "Sequence") && depth == 0) {
        const ax_json *l = ax_json_get(n, "normalizers");
        if (!l || l->type != AX_JSON_ARR)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: Sequence normalizer without a \"normalizers\" list", c->path);
        for (size_t i = 0; i < l->n; i++) AX_CHECK(parse_normalizer(c, l->items[i], 1));
        return AX_OK;
    }
    if (!strcmp(t, "NFC")) return add_norm(c, AX_HF_NORM_NFC, "", NULL);
    if (!strcmp(t, "Prepend")) {
        const char *p = str_of(n, "prepend");
        if (!p)
            return ax_errorf(AX_ERR_CORRUPT, "%s: Prepend normalizer without \"prepend\"", c->path);
        return add_norm(c, AX_HF_NORM_PREPEND, p, NULL);
    }
    if (!strcmp(t, "Replace")) {
        const ax_json *pat = ax_json_get(n, "pattern");
        const char *s = pat ? str_of(pat, "String") : NULL;
        const char *content = str_of(n, "content");
        if (!pat || pat->type != AX_JSON_OBJ || !content)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: Replace normalizer without \"pattern\"/\"content\"", c->path);
        if (!s || !*s) return unsupported(c, "normalizer", "Replace with a Regex pattern");
        return add_norm(c, AX_HF_NORM_REPLACE, s, content);
    }
    return unsupported(c, "normalizer", t);
}

static ax_status parse_pretok(ctx *c, const ax_json *p, int depth, int *seen_split) {
    ax_hf *h = c->h;
    if (!p || p->type == AX_JSON_NULL) return AX_OK;
    const char *t = type_of(p);
    if (p->type != AX_JSON_OBJ || !t)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"pre_tokenizer\" is not an object with a \"type\"",
                         c->path);
    if (!strcmp(t, "Sequence") && depth == 0) {
        const ax_json *l = ax_json_get(p, "pretokenizers");
        if (!l || l->type != AX_JSON_ARR)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: Sequence pre_tokenizer without a \"pretokenizers\" list",
                             c->path);
        for (size_t i = 0; i < l->n; i++) AX_CHECK(parse_pretok(c, l->items[i], 1, seen_split));
        return AX_OK;
    }
    if (!strcmp(t, "Split")) {
        const ax_json *pat = ax_json_get(p, "pattern");
        const char *re = pat ? str_of(pat, "Regex") : NULL;
        const char *beh = str_of(p, "behavior");
        if (!re) return unsupported(c, "Split pre_tokenizer pattern", "(not a Regex)");
        if (h->regex || h->bytelevel || h->meta)
            return unsupported(c, "pre_tokenizer", "Split after another pre-tokenizer");
        if (!strcmp(re, ax_hf_re_gpt2))
            h->regex = AX_HF_RE_GPT2;
        else if (!strcmp(re, ax_hf_re_llama3))
            h->regex = AX_HF_RE_LLAMA3;
        else if (!strcmp(re, ax_hf_re_qwen2))
            h->regex = AX_HF_RE_QWEN2;
        else
            return unsupported(c, "Split pre_tokenizer regex", re);
        if (!beh || strcmp(beh, "Isolated") || is_true(p, "invert"))
            return unsupported(c, "Split pre_tokenizer behavior", beh ? beh : "(none)");
        *seen_split = 1;
        return AX_OK;
    }
    if (!strcmp(t, "ByteLevel")) {
        const ax_json *ur = ax_json_get(p, "use_regex");
        int use_regex = !ur || (ur->type == AX_JSON_BOOL && ur->num != 0);
        if (h->bytelevel || h->meta) return unsupported(c, "pre_tokenizer", "a second ByteLevel");
        h->bytelevel = 1;
        h->prefix_space = is_true(p, "add_prefix_space");
        if (use_regex) {
            if (h->regex) return unsupported(c, "pre_tokenizer", "ByteLevel regex after a Split");
            h->regex = AX_HF_RE_GPT2;
        } else if (h->prefix_space && *seen_split) {
            return unsupported(c, "pre_tokenizer", "ByteLevel add_prefix_space after a Split");
        }
        return AX_OK;
    }
    if (!strcmp(t, "Metaspace")) {
        if (h->regex || h->bytelevel || h->meta || depth)
            return unsupported(c, "pre_tokenizer", "Metaspace combined with others");
        const char *rep = str_of(p, "replacement");
        if (!rep || !*rep || strlen(rep) >= sizeof h->meta_rep)
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: Metaspace pre_tokenizer without a \"replacement\"", c->path);
        h->meta = 1;
        h->meta_rep_len = strlen(rep);
        memcpy(h->meta_rep, rep, h->meta_rep_len + 1);
        const char *scheme = str_of(p, "prepend_scheme");
        if (scheme)
            h->meta_prepend = !strcmp(scheme, "always")  ? AX_HF_META_ALWAYS
                              : !strcmp(scheme, "first") ? AX_HF_META_FIRST
                              : !strcmp(scheme, "never") ? AX_HF_META_NEVER
                                                         : -1;
        else /* older files: add_prefix_space */
            h->meta_prepend = is_true(p, "add_prefix_space") ? AX_HF_META_ALWAYS : AX_HF_META_NEVER;
        if (h->meta_prepend < 0) return unsupported(c, "Metaspace prepend_scheme", scheme);
        const ax_json *sp = ax_json_get(p, "split");
        h->meta_split = !sp || (sp->type == AX_JSON_BOOL && sp->num != 0);
        return AX_OK;
    }
    return unsupported(c, "pre_tokenizer", t);
}

/* ---- the whole file ---- */
static ax_status load(ctx *c, const ax_json *root, const uint8_t *bytes, size_t nbytes,
                      ax_tokenizer_t **out) {
    ax_hf *h = c->h;
    const char *path = c->path;
    if (root->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT,
                         "%s: not a tokenizer.json (the top level is not an object)", path);
    const ax_json *model = ax_json_get(root, "model");
    if (!model || model->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: not a tokenizer.json (no \"model\" object)", path);
    const char *mt = type_of(model);
    if (!mt || strcmp(mt, "BPE")) return unsupported(c, "model", mt);
    const ax_json *dropout = ax_json_get(model, "dropout");
    if (dropout && dropout->type != AX_JSON_NULL) return unsupported(c, "BPE option", "dropout");
    if (!is_null_or_empty(model, "continuing_subword_prefix"))
        return unsupported(c, "BPE option", "continuing_subword_prefix");
    if (!is_null_or_empty(model, "end_of_word_suffix"))
        return unsupported(c, "BPE option", "end_of_word_suffix");
    h->byte_fallback = is_true(model, "byte_fallback");
    h->ignore_merges = is_true(model, "ignore_merges");
    h->fuse_unk = is_true(model, "fuse_unk");

    AX_CHECK(parse_normalizer(c, ax_json_get(root, "normalizer"), 0));
    int seen_split = 0;
    AX_CHECK(parse_pretok(c, ax_json_get(root, "pre_tokenizer"), 0, &seen_split));
    int only_nfc = 1;
    for (int i = 0; i < h->n_norm; i++) only_nfc &= h->norm[i].kind == AX_HF_NORM_NFC;
    if (h->bytelevel && (!only_nfc || h->byte_fallback))
        return unsupported(c, "combination",
                           "ByteLevel with a Prepend/Replace normalizer or byte_fallback");
    if (h->regex && !h->bytelevel)
        return unsupported(c, "pre_tokenizer", "a Split regex without ByteLevel");

    const ax_json *vocab = ax_json_get(model, "vocab");
    const ax_json *merges = ax_json_get(model, "merges");
    const ax_json *added = ax_json_get(root, "added_tokens");
    if (!vocab || vocab->type != AX_JSON_OBJ)
        return ax_errorf(AX_ERR_CORRUPT, "%s: model has no \"vocab\" object", path);
    if (!merges || merges->type != AX_JSON_ARR)
        return ax_errorf(AX_ERR_CORRUPT, "%s: model has no \"merges\" list", path);
    if (added && added->type != AX_JSON_ARR && added->type != AX_JSON_NULL)
        return ax_errorf(AX_ERR_CORRUPT, "%s: \"added_tokens\" is not a list", path);
    size_t n_added = added && added->type == AX_JSON_ARR ? added->n : 0;

    /* ids: vocab values and added token ids, all in [0, AX_TOK_MAX_VOCAB) */
    int64_t max_id = -1, id;
    size_t total = 0;
    for (size_t i = 0; i < vocab->n; i++) {
        if (!ax_json_int_in(vocab->items[i], 0, AX_TOK_MAX_VOCAB - 1, &id))
            return ax_errorf(AX_ERR_CORRUPT, "%s: vocab entry \"%s\" has no valid id (0..%d)", path,
                             vocab->keys[i], AX_TOK_MAX_VOCAB - 1);
        if (id > max_id) max_id = id;
        total += strlen(vocab->keys[i]);
    }
    for (size_t i = 0; i < n_added; i++) {
        const ax_json *a = added->items[i];
        const char *content = a->type == AX_JSON_OBJ ? str_of(a, "content") : NULL;
        const ax_json *jid = a->type == AX_JSON_OBJ ? ax_json_get(a, "id") : NULL;
        if (!content || !*content || !jid || !ax_json_int_in(jid, 0, AX_TOK_MAX_VOCAB - 1, &id))
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: added_tokens[%zu] needs a non-empty \"content\" and an \"id\"",
                             path, i);
        if (is_true(a, "lstrip") || is_true(a, "rstrip") || is_true(a, "single_word"))
            return unsupported(c, "added token option (lstrip/rstrip/single_word)", content);
        /* matched after normalization: NFC is supported (GPT-NeoX's run-of-spaces tokens),
         * Prepend/Replace would have to apply to the token's content as well */
        if (is_true(a, "normalized") && !only_nfc)
            return unsupported(c, "added token matched after normalization", content);
        if (id > max_id) max_id = id;
        total += strlen(content);
    }
    if (max_id < 0) return ax_errorf(AX_ERR_CORRUPT, "%s: the vocabulary is empty", path);
    int V = (int)max_id + 1;

    /* keys (what BPE sees) into the arena; display bytes per id */
    h->arena = malloc(total + 1);
    ax_tokenizer_t *t = calloc(1, sizeof *t);
    uint8_t **disp = calloc((size_t)V, sizeof *disp);
    uint32_t *dlen = calloc((size_t)V, sizeof *dlen);
    ax_status st = AX_OK;
    if (!h->arena || !t || !disp || !dlen || !strmap_init(&h->vocab, vocab->n)) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    t->hf = h;
    t->vocab_size = V;
    uint32_t b2u[256], u2b[324];
    byte_unicode(b2u);
    for (int i = 0; i < 324; i++) u2b[i] = 256;
    for (int b = 0; b < 256; b++) u2b[b2u[b]] = (uint32_t)b;
    /* space stand-in of Metaspace / the Replace normalizer, shown as a space */
    const char *sp_rep = h->meta ? h->meta_rep : NULL;
    for (int i = 0; i < h->n_norm; i++)
        if (h->norm[i].kind == AX_HF_NORM_REPLACE && !strcmp(h->norm[i].a, " "))
            sp_rep = h->norm[i].b;
    h->strip_lead_space = 0;
    if (sp_rep) {
        if (h->meta && h->meta_prepend != AX_HF_META_NEVER) h->strip_lead_space = 1;
        for (int i = 0; i < h->n_norm; i++)
            if (h->norm[i].kind == AX_HF_NORM_PREPEND && !strcmp(h->norm[i].a, sp_rep))
                h->strip_lead_space = 1;
    }
    size_t sp_len = sp_rep ? strlen(sp_rep) : 0;
    size_t ao = 0;
    for (size_t i = 0; i < vocab->n; i++) {
        const char *s = vocab->keys[i];
        size_t sl = strlen(s);
        int32_t vid = (int32_t)vocab->items[i]->num;
        uint8_t *k = h->arena + ao;
        long kl;
        if (h->bytelevel) {
            kl = bytelevel_decode(u2b, s, sl, k);
        } else {
            memcpy(k, s, sl);
            kl = (long)sl;
        }
        if (kl >= 0) {
            if (!strmap_put(&h->vocab, k, (size_t)kl, vid)) {
                st = ax_errorf(AX_ERR_CORRUPT, "%s: vocab has \"%s\" twice", path, s);
                goto fail;
            }
            ao += (size_t)kl;
        }
        /* shown as: the raw bytes (byte-level), else the string (transformed below) */
        disp[vid] = kl >= 0 ? k : (uint8_t *)s;
        dlen[vid] = (uint32_t)(kl >= 0 ? (size_t)kl : sl);
    }
    /* merges */
    {
        size_t nm = merges->n;
        uint64_t cap = 16;
        while (cap < 2 * (uint64_t)nm + 2) cap <<= 1;
        h->mmask = cap - 1;
        h->mkeys = calloc(cap, sizeof *h->mkeys);
        h->mrank = malloc(cap * sizeof *h->mrank);
        h->mnew = malloc(cap * sizeof *h->mnew);
        uint8_t *buf = malloc(2 * (total + 8));
        if (!h->mkeys || !h->mrank || !h->mnew || !buf) {
            free(buf);
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        for (size_t i = 0; i < nm && st == AX_OK; i++) {
            const ax_json *m = merges->items[i];
            const char *a = NULL, *b = NULL;
            size_t al = 0, bl = 0;
            if (m->type == AX_JSON_STR) {
                const char *spc = strchr(m->str, ' ');
                if (spc && !strchr(spc + 1, ' ')) {
                    a = m->str, al = (size_t)(spc - m->str), b = spc + 1, bl = strlen(b);
                }
            } else if (m->type == AX_JSON_ARR && m->n == 2 && m->items[0]->type == AX_JSON_STR &&
                       m->items[1]->type == AX_JSON_STR) {
                a = m->items[0]->str, al = m->items[0]->str_len;
                b = m->items[1]->str, bl = m->items[1]->str_len;
            }
            if (!a || al + bl > 2 * total + 8) {
                st = ax_errorf(AX_ERR_CORRUPT, "%s: merges[%zu] is not a pair of tokens", path, i);
                break;
            }
            long ka = (long)al, kb = (long)bl;
            if (h->bytelevel) {
                ka = bytelevel_decode(u2b, a, al, buf);
                kb = ka < 0 ? -1 : bytelevel_decode(u2b, b, bl, buf + ka);
            } else {
                memcpy(buf, a, al);
                memcpy(buf + al, b, bl);
            }
            int32_t ia = ka < 0 ? -1 : ax_hf_strmap_get(&h->vocab, buf, (size_t)ka);
            int32_t ib = kb < 0 ? -1 : ax_hf_strmap_get(&h->vocab, buf + ka, (size_t)kb);
            int32_t in =
                ka < 0 || kb < 0 ? -1 : ax_hf_strmap_get(&h->vocab, buf, (size_t)(ka + kb));
            if (ia < 0 || ib < 0 || in < 0) {
                st = ax_errorf(AX_ERR_CORRUPT,
                               "%s: merges[%zu] (\"%.*s\" \"%.*s\") names a token missing from the "
                               "vocab; the file is damaged",
                               path, i, (int)al, a, (int)bl, b);
                break;
            }
            uint64_t key = ax_hf_pair_key(ia, ib);
            uint64_t x = key ^ (key >> 29);
            x *= 0xbf58476d1ce4e5b9ULL;
            x ^= x >> 32;
            uint64_t j = x & h->mmask;
            while (h->mkeys[j] && h->mkeys[j] != key) j = (j + 1) & h->mmask;
            if (h->mkeys[j]) continue; /* a repeated pair keeps its first (best) rank */
            h->mkeys[j] = key;
            h->mrank[j] = (uint32_t)i;
            h->mnew[j] = in;
        }
        free(buf);
        if (st != AX_OK) goto fail;
    }
    /* unk, byte tokens */
    h->unk = -1;
    const char *unk = str_of(model, "unk_token");
    if (unk) {
        const uint8_t *u = (const uint8_t *)unk;
        h->unk = ax_hf_strmap_get(&h->vocab, u, strlen(unk));
        if (h->unk < 0) {
            st = ax_errorf(AX_ERR_CORRUPT, "%s: unk_token \"%s\" is not in the vocab", path, unk);
            goto fail;
        }
    }
    for (int b = 0; b < 256; b++) {
        h->byte_tok[b] = -1;
        if (h->bytelevel) {
            uint8_t c1 = (uint8_t)b;
            h->byte_tok[b] = ax_hf_strmap_get(&h->vocab, &c1, 1);
        } else if (h->byte_fallback) {
            char nm[8];
            snprintf(nm, sizeof nm, "<0x%02X>", b);
            h->byte_tok[b] = ax_hf_strmap_get(&h->vocab, (const uint8_t *)nm, 6);
        }
    }
    /* added tokens: sorted by first byte, longest first */
    h->added = calloc(n_added ? n_added : 1, sizeof *h->added);
    if (!h->added) {
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    for (size_t i = 0; i < n_added; i++) {
        const ax_json *a = added->items[i];
        const ax_json *c1 = ax_json_get(a, "content");
        ax_hf_added *e = &h->added[h->n_added++];
        e->bytes = malloc(c1->str_len);
        if (!e->bytes) {
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        memcpy(e->bytes, c1->str, c1->str_len);
        e->len = c1->str_len;
        e->id = (int32_t)ax_json_get(a, "id")->num;
        e->normalized = is_true(a, "normalized");
        h->n_added_normalized += e->normalized;
        if (e->normalized && h->n_norm && !ax_hf_nfc_trivial((const uint8_t *)e->bytes, e->len)) {
            uint8_t *nb; /* matched against NFC text: match the NFC form */
            size_t nl;
            if (!ax_hf_nfc((const uint8_t *)e->bytes, e->len, &nb, &nl)) {
                st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
                goto fail;
            }
            free(e->bytes);
            e->bytes = (char *)nb;
            e->len = nl;
        }
    }
    for (int i = 1; i < h->n_added; i++) /* insertion sort: few entries */
        for (int j = i; j > 0; j--) {
            ax_hf_added *x = &h->added[j - 1], *y = &h->added[j];
            if ((uint8_t)x->bytes[0] < (uint8_t)y->bytes[0] ||
                ((uint8_t)x->bytes[0] == (uint8_t)y->bytes[0] && x->len >= y->len))
                break;
            ax_hf_added tmp = *x;
            *x = *y;
            *y = tmp;
        }
    for (int c0 = 0, k = 0; c0 <= 256; c0++) {
        while (k < h->n_added && (uint8_t)h->added[k].bytes[0] < c0) k++;
        h->first_added[c0] = k;
    }
    /* end of text: the first of EOT_NAMES among the special added tokens */
    t->eot = -1;
    for (size_t e = 0; e < sizeof EOT_NAMES / sizeof *EOT_NAMES && t->eot < 0; e++)
        for (size_t i = 0; i < n_added; i++)
            if (is_true(added->items[i], "special") &&
                !strcmp(str_of(added->items[i], "content"), EOT_NAMES[e])) {
                t->eot = (int32_t)ax_json_get(added->items[i], "id")->num;
                break;
            }
    if (t->eot < 0) {
        st = ax_errorf(AX_ERR_MISMATCH,
                       "%s: no end-of-text token: none of <|endoftext|>, <|end_of_text|>, </s>, "
                       "<eos> is a special added token; axmem ends every document with one",
                       path);
        goto fail;
    }
    /* display bytes: added content, else the key (byte-level) or the string with the space
     * stand-in shown as a space and <0xNN> as its byte */
    {
        uint64_t sum = 0;
        t->tok_off = malloc(sizeof(uint64_t) * (size_t)V);
        t->tok_len = calloc((size_t)V, sizeof(uint32_t));
        if (!t->tok_off || !t->tok_len) {
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        uint8_t *is_added = calloc((size_t)V, 1);
        if (!is_added) {
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        for (int i = 0; i < h->n_added; i++) {
            disp[h->added[i].id] = (uint8_t *)h->added[i].bytes;
            dlen[h->added[i].id] = (uint32_t)h->added[i].len;
            is_added[h->added[i].id] = 1;
        }
        for (int i = 0; i < V; i++) sum += dlen[i];
        t->tok_bytes = malloc(sum + 1);
        if (!t->tok_bytes) {
            free(is_added);
            st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        uint64_t o = 0;
        for (int i = 0; i < V; i++) {
            t->tok_off[i] = o;
            const uint8_t *s = disp[i];
            size_t l = dlen[i];
            int bv;
            if (!s) {
                /* an id no string names: decodes to nothing */
            } else if (is_added[i] || h->bytelevel) {
                memcpy(t->tok_bytes + o, s, l);
                o += l;
            } else if (h->byte_fallback && (bv = byte_token(s, l)) >= 0) {
                t->tok_bytes[o++] = (uint8_t)bv;
            } else {
                for (size_t q = 0; q < l;) {
                    if (sp_len && q + sp_len <= l && !memcmp(s + q, sp_rep, sp_len)) {
                        t->tok_bytes[o++] = ' ';
                        q += sp_len;
                    } else {
                        t->tok_bytes[o++] = s[q++];
                    }
                }
            }
            t->tok_len[i] = (uint32_t)(o - t->tok_off[i]);
        }
        free(is_added);
    }
    t->checksum = XXH3_64bits(bytes, nbytes);
    free(disp);
    free(dlen);
    *out = t;
    return AX_OK;
fail:
    free(disp);
    free(dlen);
    if (t) {
        t->hf = NULL;
        ax_tokenizer_free(t);
    }
    return st;
}

ax_status ax_hf_load_bytes(const uint8_t *bytes, size_t n, const char *path, ax_tokenizer_t **out) {
    *out = NULL;
    ax_json *root = NULL;
    AX_CHECK(ax_json_parse_advice((const char *)bytes, n, path,
                                  "pass a Hugging Face tokenizer.json or an axmem tokenizer",
                                  &root));
    ax_hf *h = calloc(1, sizeof *h);
    if (!h) {
        ax_json_free(root);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    ctx c = {path, h};
    ax_status st = load(&c, root, bytes, n, out);
    ax_json_free(root);
    if (st != AX_OK) ax_hf_free(h);
    return st;
}
