/* Reading a Hugging Face tokenizer.json (BPE models) into an ax_tokenizer_t: the supported
 * normalizers, pre-tokenizers and model options are listed in data/hf/hf_tok.h; anything else is
 * refused with a message naming the file and the component. */
#include "data/hf/hf_nfc.h"
#include "data/hf/hf_pretok.h"
#include "data/hf/hf_tok.h"
#include "data/tok_internal.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/core/status.h"

#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define SUPPORTED                                                                                  \
    "axmem reads BPE tokenizers with the ByteLevel, Split (GPT-2, Llama-3 or Qwen2 regex) or "     \
    "Metaspace pre-tokenizers and NFC/Prepend/Replace normalizers (GPT-2, GPT-NeoX/Pythia, "       \
    "Llama-2/Mistral, Llama-3, Qwen2 style)"

static const char *const EOT_NAMES[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};

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

/* ---- the model: options, vocabulary, merges ---- */
static ax_status check_model(ctx *c, const ax_json *model) {
    ax_hf *h = c->h;
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
    return AX_OK;
}

/* 1 when the vocab's ids are exactly 0 .. n-1 (max_id: the largest) */
static int ids_dense(const ax_json *vocab, int64_t max_id) {
    if (max_id + 1 != (int64_t)vocab->n) return 0;
    uint8_t *seen = calloc((size_t)vocab->n + 1, 1);
    int dense = seen != NULL;
    for (size_t i = 0; dense && i < vocab->n; i++) {
        size_t id = (size_t)vocab->items[i]->num;
        dense = !seen[id];
        seen[id] = 1;
    }
    free(seen);
    return dense;
}

/* Validates every id (vocab values, added token ids) and added token option; sets the
 * vocabulary size (largest vocab id + 1), whether the vocab's ids are 0 .. n-1, and the bytes
 * all strings hold together. */
static ax_status scan_ids(ctx *c, const ax_json *vocab, const ax_json *added, size_t n_added,
                          int only_nfc, int *V, int *dense, size_t *total) {
    int64_t max_id = -1, id;
    *total = 0;
    for (size_t i = 0; i < vocab->n; i++) {
        if (!ax_json_int_in(vocab->items[i], 0, AX_TOK_MAX_VOCAB - 1, &id))
            return ax_errorf(AX_ERR_CORRUPT, "%s: vocab entry \"%s\" has no valid id (0..%d)",
                             c->path, vocab->keys[i], AX_TOK_MAX_VOCAB - 1);
        if (id > max_id) max_id = id;
        *total += strlen(vocab->keys[i]);
    }
    *dense = ids_dense(vocab, max_id);
    *V = (int)max_id + 1;
    for (size_t i = 0; i < n_added; i++) {
        const ax_json *a = added->items[i];
        const char *content = a->type == AX_JSON_OBJ ? str_of(a, "content") : NULL;
        const ax_json *jid = a->type == AX_JSON_OBJ ? ax_json_get(a, "id") : NULL;
        if (!content || !*content || !jid || !ax_json_int_in(jid, 0, AX_TOK_MAX_VOCAB - 1, &id))
            return ax_errorf(AX_ERR_CORRUPT,
                             "%s: added_tokens[%zu] needs a non-empty \"content\" and an \"id\"",
                             c->path, i);
        if (is_true(a, "lstrip") || is_true(a, "rstrip") || is_true(a, "single_word"))
            return unsupported(c, "added token option (lstrip/rstrip/single_word)", content);
        /* matched after normalization: NFC is supported (GPT-NeoX's run-of-spaces tokens),
         * Prepend/Replace would have to apply to the token's content as well */
        if (is_true(a, "normalized") && !only_nfc)
            return unsupported(c, "added token matched after normalization", content);
        *total += strlen(content);
    }
    if (max_id < 0) return ax_errorf(AX_ERR_CORRUPT, "%s: the vocabulary is empty", c->path);
    return AX_OK;
}

/* the vocab entry holding id, for messages ("" if none) */
static const char *vocab_name(const ax_json *vocab, int64_t id) {
    for (size_t i = 0; i < vocab->n; i++)
        if (vocab->items[i]->num == (double)id) return vocab->keys[i];
    return "";
}

/* a warning per added token whose written id is not the library's, the first few named */
static void added_id_differs(ctx *c, const ax_json *vocab, const char *content, int64_t said,
                             int32_t id, int *n_differ) {
    if (++*n_differ > 3) return;
    const char *owner = vocab_name(vocab, said);
    AX_WARN("%s: added token \"%.64s\" says id %lld%s%.64s%s; the tokenizers library gives it "
            "id %d (it numbers added tokens itself: a vocab entry's own id, else the next one "
            "after the vocabulary), so axmem encodes it as %d too",
            c->path, content, (long long)said, *owner ? ", which is the vocab's \"" : "", owner,
            *owner ? "\"" : "", id, id);
}

/* The ids the tokenizers library gives the added tokens: it numbers them itself on loading a
 * file, in file order, and only warns when the written "id" differs. A content an earlier
 * added token has keeps that one's id; a content in the model's vocab takes the vocab's id;
 * any other takes the next id after the vocabulary (n entries: n, n + 1, ...). How the
 * library counts past a vocab whose ids are not exactly 0 .. n-1 has changed between its
 * versions, so such a token is refused there. ids[i]: added_tokens[i]'s; *V grows to
 * cover them. */
static ax_status assign_added_ids(ctx *c, const ax_json *vocab, const ax_json *added,
                                  size_t n_added, int dense, int32_t *ids, int *V) {
    ax_hf_strmap words = {0}, seen = {0}; /* raw vocab strings -> id; added contents -> index */
    ax_status st = AX_OK;
    if (!ax_hf_strmap_init(&words, vocab->n) || !ax_hf_strmap_init(&seen, n_added))
        st = ax_errorf(AX_ERR_NOMEM, "%s: out of memory", c->path);
    for (size_t i = 0; st == AX_OK && i < vocab->n; i++)
        ax_hf_strmap_put(&words, (const uint8_t *)vocab->keys[i], strlen(vocab->keys[i]),
                         (int32_t)vocab->items[i]->num);
    int32_t next = (int32_t)vocab->n;
    int n_differ = 0;
    for (size_t i = 0; st == AX_OK && i < n_added; i++) {
        const ax_json *a = added->items[i], *content = ax_json_get(a, "content");
        const uint8_t *k = (const uint8_t *)content->str;
        int64_t said = (int64_t)ax_json_get(a, "id")->num;
        int32_t earlier = ax_hf_strmap_get(&seen, k, content->str_len);
        if (earlier >= 0 &&
            is_true(added->items[earlier], "normalized") != is_true(a, "normalized"))
            st = ax_errorf(AX_ERR_MISMATCH,
                           "%s: added token \"%.64s\" is listed twice, once \"normalized\" and "
                           "once not; which match the library makes depends on its version: "
                           "remove one",
                           c->path, content->str);
        else if (earlier >= 0)
            ids[i] = ids[earlier];
        else if ((ids[i] = ax_hf_strmap_get(&words, k, content->str_len)) < 0 && !dense)
            st = ax_errorf(AX_ERR_MISMATCH,
                           "%s: added token \"%.64s\" (id %lld) is not in the vocab, whose ids "
                           "are not exactly 0..%zu; the tokenizers library numbers such a token "
                           "differently from one version to the next, so its id is unknown: add "
                           "\"%.64s\": %lld to the model's vocab",
                           c->path, content->str, (long long)said, vocab->n - 1, content->str,
                           (long long)said);
        else if (ids[i] < 0)
            ids[i] = next++;
        if (st == AX_OK && earlier < 0) ax_hf_strmap_put(&seen, k, content->str_len, (int32_t)i);
        if (st == AX_OK && ids[i] != said)
            added_id_differs(c, vocab, content->str, said, ids[i], &n_differ);
        if (st == AX_OK && ids[i] >= *V) *V = ids[i] + 1;
    }
    if (st == AX_OK && n_differ > 3)
        AX_WARN("%s: %d more added tokens say ids other than the library's; axmem uses the "
                "library's",
                c->path, n_differ - 3);
    if (st == AX_OK && *V > AX_TOK_MAX_VOCAB)
        st = ax_errorf(AX_ERR_CORRUPT, "%s: the added tokens take the vocabulary past %d ids",
                       c->path, AX_TOK_MAX_VOCAB);
    ax_hf_strmap_free(&words);
    ax_hf_strmap_free(&seen);
    return st;
}

/* added tokens: copied (normalized ones under NFC in their NFC form), sorted by first byte
 * and longest first, indexed by first byte */
static ax_status read_added(ctx *c, const ax_json *added, size_t n_added, const int32_t *ids) {
    ax_hf *h = c->h;
    h->added = calloc(n_added ? n_added : 1, sizeof *h->added);
    if (!h->added) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", c->path);
    for (size_t i = 0; i < n_added; i++) {
        const ax_json *a = added->items[i];
        const ax_json *content = ax_json_get(a, "content");
        ax_hf_added *e = &h->added[h->n_added++];
        e->bytes = malloc(content->str_len);
        if (!e->bytes) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", c->path);
        memcpy(e->bytes, content->str, content->str_len);
        e->len = content->str_len;
        e->id = ids[i];
        e->normalized = is_true(a, "normalized");
        h->n_added_normalized += e->normalized;
        if (e->normalized && h->n_norm && !ax_hf_nfc_trivial((const uint8_t *)e->bytes, e->len)) {
            uint8_t *nb; /* matched against NFC text: match the NFC form */
            size_t nl;
            if (!ax_hf_nfc((const uint8_t *)e->bytes, e->len, &nb, &nl))
                return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", c->path);
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
    return AX_OK;
}

/* end of text: the first of EOT_NAMES among the special added tokens */
static ax_status find_eot(ctx *c, const ax_json *added, size_t n_added, const int32_t *ids,
                          int32_t *eot) {
    for (size_t e = 0; e < sizeof EOT_NAMES / sizeof *EOT_NAMES; e++)
        for (size_t i = 0; i < n_added; i++)
            if (is_true(added->items[i], "special") &&
                !strcmp(str_of(added->items[i], "content"), EOT_NAMES[e])) {
                *eot = ids[i];
                return AX_OK;
            }
    return ax_errorf(AX_ERR_MISMATCH,
                     "%s: no end-of-text token: none of <|endoftext|>, <|end_of_text|>, </s>, "
                     "<eos> is a special added token; axmem ends every document with one",
                     c->path);
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
    AX_CHECK(check_model(c, model));
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
    int V = 0, dense = 0;
    size_t total = 0;
    AX_CHECK(scan_ids(c, vocab, added, n_added, only_nfc, &V, &dense, &total));
    int32_t *ids = malloc((n_added ? n_added : 1) * sizeof *ids);
    if (!ids) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    ax_status st = assign_added_ids(c, vocab, added, n_added, dense, ids, &V);
    if (st != AX_OK) {
        free(ids);
        return st;
    }

    ax_tokenizer_t *t = calloc(1, sizeof *t);
    ax_hf_strings strs = {0};
    if (!t) {
        free(ids);
        return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    }
    t->hf = h;
    t->vocab_size = V;
    AX_CHECK_GOTO(ax_hf_read_vocab(h, vocab, V, total, path, &strs), fail);
    AX_CHECK_GOTO(ax_hf_read_merges(h, merges, total, &strs, path), fail);
    AX_CHECK_GOTO(ax_hf_read_unk_bytes(h, str_of(model, "unk_token"), path), fail);
    AX_CHECK_GOTO(read_added(c, added, n_added, ids), fail);
    AX_CHECK_GOTO(find_eot(c, added, n_added, ids, &t->eot), fail);
    AX_CHECK_GOTO(ax_hf_token_bytes(h, t, &strs, path), fail);
    t->checksum = XXH3_64bits(bytes, nbytes);
    ax_hf_strings_free(&strs);
    free(ids);
    *out = t;
    return AX_OK;
fail:
    ax_hf_strings_free(&strs);
    free(ids);
    t->hf = NULL; /* freed by the caller */
    ax_tokenizer_free(t);
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
