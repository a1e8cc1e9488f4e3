/* The vocabulary side of a tokenizer.json: GPT-2's byte-to-unicode table, the string -> id
 * map, the merge table, and the bytes each id decodes to. */
#include "data/hf/hf_tok.h"
#include "data/tok_internal.h"
#include "lib/core/json.h"
#include "lib/core/keyset.h"
#include "lib/core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

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
static long bytelevel_decode(const uint32_t *u2b, const char *s, size_t len, uint8_t *out) {
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
int ax_hf_strmap_init(ax_hf_strmap *m, size_t n) {
    uint64_t cap = ax_hash_slots((uint64_t)n + 1);
    m->mask = cap - 1;
    m->hash = calloc(cap, sizeof *m->hash);
    m->id = malloc(cap * sizeof *m->id);
    m->key = malloc(cap * sizeof *m->key);
    m->key_len = malloc(cap * sizeof *m->key_len);
    return m->hash && m->id && m->key && m->key_len;
}
void ax_hf_strmap_free(ax_hf_strmap *m) {
    free(m->hash);
    free(m->id);
    free(m->key);
    free(m->key_len);
}
/* the slot of key s[0..n) (hash h): where it is, or the empty slot it would take */
static uint64_t strmap_slot(const ax_hf_strmap *m, const uint8_t *s, size_t n, uint64_t h) {
    uint64_t i = h & m->mask;
    while (m->hash[i] && !(m->hash[i] == h && m->key_len[i] == n && !memcmp(m->key[i], s, n)))
        i = (i + 1) & m->mask;
    return i;
}
/* 0 if the key is already present */
int ax_hf_strmap_put(ax_hf_strmap *m, const uint8_t *s, size_t n, int32_t id) {
    uint64_t h = XXH3_64bits(s, n) | 1, i = strmap_slot(m, s, n, h);
    if (m->hash[i]) return 0;
    m->hash[i] = h;
    m->id[i] = id;
    m->key[i] = s;
    m->key_len[i] = (uint32_t)n;
    return 1;
}
int32_t ax_hf_strmap_get(const ax_hf_strmap *m, const uint8_t *s, size_t n) {
    uint64_t i = strmap_slot(m, s, n, XXH3_64bits(s, n) | 1);
    return m->hash[i] ? m->id[i] : -1;
}

void ax_hf_free(ax_hf *h) {
    if (!h) return;
    for (int i = 0; i < h->n_norm; i++) {
        free(h->norm[i].a);
        free(h->norm[i].b);
    }
    free(h->norm);
    ax_hf_strmap_free(&h->vocab);
    free(h->mkeys);
    free(h->mrank);
    free(h->mnew);
    for (int i = 0; i < h->n_added; i++) free(h->added[i].bytes);
    free(h->added);
    free(h->arena);
    free(h);
}

void ax_hf_strings_free(ax_hf_strings *s) {
    free(s->disp);
    free(s->dlen);
    s->disp = NULL;
    s->dlen = NULL;
}

ax_status ax_hf_read_vocab(ax_hf *h, const ax_json *vocab, int V, size_t total, const char *path,
                           ax_hf_strings *s) {
    uint32_t b2u[256];
    byte_unicode(b2u);
    for (int i = 0; i < 324; i++) s->u2b[i] = 256;
    for (int b = 0; b < 256; b++) s->u2b[b2u[b]] = (uint32_t)b;
    /* the space stand-in of Metaspace / the Replace normalizer, shown as a space */
    s->sp_rep = h->meta ? h->meta_rep : NULL;
    for (int i = 0; i < h->n_norm; i++)
        if (h->norm[i].kind == AX_HF_NORM_REPLACE && !strcmp(h->norm[i].a, " "))
            s->sp_rep = h->norm[i].b;
    h->strip_lead_space = 0;
    if (s->sp_rep) {
        if (h->meta && h->meta_prepend != AX_HF_META_NEVER) h->strip_lead_space = 1;
        for (int i = 0; i < h->n_norm; i++)
            if (h->norm[i].kind == AX_HF_NORM_PREPEND && !strcmp(h->norm[i].a, s->sp_rep))
                h->strip_lead_space = 1;
    }
    /* keys (what BPE sees: raw bytes when byte-level) into the arena */
    h->arena = malloc(total + 1);
    s->disp = calloc((size_t)V, sizeof *s->disp);
    s->dlen = calloc((size_t)V, sizeof *s->dlen);
    if (!h->arena || !s->disp || !s->dlen || !ax_hf_strmap_init(&h->vocab, vocab->n))
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    size_t ao = 0;
    for (size_t i = 0; i < vocab->n; i++) {
        const char *str = vocab->keys[i];
        size_t sl = strlen(str);
        int32_t vid = (int32_t)vocab->items[i]->num;
        uint8_t *k = h->arena + ao;
        long kl;
        if (h->bytelevel) {
            kl = bytelevel_decode(s->u2b, str, sl, k);
        } else {
            memcpy(k, str, sl);
            kl = (long)sl;
        }
        if (kl >= 0) {
            if (!ax_hf_strmap_put(&h->vocab, k, (size_t)kl, vid))
                return ax_errorf(AX_ERR_CORRUPT, "%s: vocab has \"%s\" twice", path, str);
            ao += (size_t)kl;
        }
        /* shown as: the raw bytes (byte-level), else the string (transformed later); a
         * string outside the byte table (an added token's, say) as its UTF-8 */
        s->disp[vid] = kl >= 0 ? k : (const uint8_t *)str;
        s->dlen[vid] = (uint32_t)(kl >= 0 ? (size_t)kl : sl);
    }
    return AX_OK;
}

/* a merge entry: "a b" or ["a", "b"]; 0 if neither */
static int merge_sides(const ax_json *m, const char **a, size_t *al, const char **b, size_t *bl) {
    if (m->type == AX_JSON_STR) {
        const char *spc = strchr(m->str, ' ');
        if (!spc || strchr(spc + 1, ' ')) return 0;
        *a = m->str, *al = (size_t)(spc - m->str), *b = spc + 1, *bl = strlen(spc + 1);
        return 1;
    }
    if (m->type == AX_JSON_ARR && m->n == 2 && m->items[0]->type == AX_JSON_STR &&
        m->items[1]->type == AX_JSON_STR) {
        *a = m->items[0]->str, *al = m->items[0]->str_len;
        *b = m->items[1]->str, *bl = m->items[1]->str_len;
        return 1;
    }
    return 0;
}

ax_status ax_hf_read_merges(ax_hf *h, const ax_json *merges, size_t total, const ax_hf_strings *s,
                            const char *path) {
    size_t nm = merges->n;
    uint64_t cap = ax_hash_slots((uint64_t)nm + 1);
    h->mmask = cap - 1;
    h->mkeys = calloc(cap, sizeof *h->mkeys);
    h->mrank = malloc(cap * sizeof *h->mrank);
    h->mnew = malloc(cap * sizeof *h->mnew);
    uint8_t *buf = malloc(2 * (total + 8)); /* both sides' keys */
    ax_status st = AX_OK;
    if (!h->mkeys || !h->mrank || !h->mnew || !buf) {
        free(buf);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    for (size_t i = 0; i < nm; i++) {
        const char *a, *b;
        size_t al, bl;
        if (!merge_sides(merges->items[i], &a, &al, &b, &bl) || al + bl > 2 * total + 8) {
            st = ax_errorf(AX_ERR_CORRUPT, "%s: merges[%zu] is not a pair of tokens", path, i);
            break;
        }
        long ka = (long)al, kb = (long)bl;
        if (h->bytelevel) {
            ka = bytelevel_decode(s->u2b, a, al, buf);
            kb = ka < 0 ? -1 : bytelevel_decode(s->u2b, b, bl, buf + ka);
        } else {
            memcpy(buf, a, al);
            memcpy(buf + al, b, bl);
        }
        int32_t ia = ka < 0 ? -1 : ax_hf_strmap_get(&h->vocab, buf, (size_t)ka);
        int32_t ib = kb < 0 ? -1 : ax_hf_strmap_get(&h->vocab, buf + ka, (size_t)kb);
        int32_t in = ka < 0 || kb < 0 ? -1 : ax_hf_strmap_get(&h->vocab, buf, (size_t)(ka + kb));
        if (ia < 0 || ib < 0 || in < 0) {
            st = ax_errorf(AX_ERR_CORRUPT,
                           "%s: merges[%zu] (\"%.*s\" \"%.*s\") names a token missing from the "
                           "vocab; the file is damaged",
                           path, i, (int)al, a, (int)bl, b);
            break;
        }
        uint64_t key = ax_tok_pair_key((uint32_t)ia, (uint32_t)ib);
        uint64_t j = ax_tok_pair_slot(h->mkeys, h->mmask, key);
        if (h->mkeys[j]) continue; /* a repeated pair keeps its first (best) rank */
        h->mkeys[j] = key;
        h->mrank[j] = (uint32_t)i;
        h->mnew[j] = in;
    }
    free(buf);
    return st;
}

ax_status ax_hf_read_unk_bytes(ax_hf *h, const char *unk, const char *path) {
    h->unk = -1;
    if (unk) {
        h->unk = ax_hf_strmap_get(&h->vocab, (const uint8_t *)unk, strlen(unk));
        if (h->unk < 0)
            return ax_errorf(AX_ERR_CORRUPT, "%s: unk_token \"%s\" is not in the vocab", path, unk);
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
    return AX_OK;
}

ax_status ax_hf_token_bytes(const ax_hf *h, ax_tokenizer_t *t, ax_hf_strings *s, const char *path) {
    int V = t->vocab_size;
    size_t sp_len = s->sp_rep ? strlen(s->sp_rep) : 0;
    uint8_t *is_added = calloc((size_t)V, 1);
    t->tok_off = malloc(sizeof(uint64_t) * (size_t)V);
    t->tok_len = calloc((size_t)V, sizeof(uint32_t));
    if (!is_added || !t->tok_off || !t->tok_len) {
        free(is_added);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    for (int i = 0; i < h->n_added; i++) {
        s->disp[h->added[i].id] = (const uint8_t *)h->added[i].bytes;
        s->dlen[h->added[i].id] = (uint32_t)h->added[i].len;
        is_added[h->added[i].id] = 1;
    }
    uint64_t sum = 0;
    for (int i = 0; i < V; i++) sum += s->dlen[i]; /* transformed strings only get shorter */
    t->tok_bytes = malloc(sum + 1);
    if (!t->tok_bytes) {
        free(is_added);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    uint64_t o = 0;
    for (int i = 0; i < V; i++) {
        t->tok_off[i] = o;
        const uint8_t *str = s->disp[i];
        size_t l = s->dlen[i];
        int bv;
        if (!str) {
            /* an id no string names: decodes to nothing */
        } else if (is_added[i] || h->bytelevel) {
            memcpy(t->tok_bytes + o, str, l);
            o += l;
        } else if (h->byte_fallback && (bv = byte_token(str, l)) >= 0) {
            t->tok_bytes[o++] = (uint8_t)bv;
        } else { /* the space stand-in shown as a space */
            for (size_t q = 0; q < l;) {
                if (sp_len && q + sp_len <= l && !memcmp(str + q, s->sp_rep, sp_len)) {
                    t->tok_bytes[o++] = ' ';
                    q += sp_len;
                } else {
                    t->tok_bytes[o++] = str[q++];
                }
            }
        }
        t->tok_len[i] = (uint32_t)(o - t->tok_off[i]);
    }
    free(is_added);
    return AX_OK;
}
