/* Reading a Hugging Face tokenizer.json (BPE models) into an ax_tokenizer_t: the supported
 * normalizers, pre-tokenizers and model options are listed in data/hf_tok.h; anything else is
 * refused with a message naming the file and the component. */
#include "data/hf_nfc.h"
#include "data/hf_pretok.h"
#include "data/hf_tok.h"
#include "data/tok_internal.h"
#include "lib/core/json.h"
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

/* Validates every id (vocab values, added token ids) and added token option; sets the
 * vocabulary size (largest id + 1) and the bytes all strings hold together. */
static ax_status scan_ids(ctx *c, const ax_json *vocab, const ax_json *added, size_t n_added,
                          int only_nfc, int *V, size_t *total) {
    int64_t max_id = -1, id;
    *total = 0;
    for (size_t i = 0; i < vocab->n; i++) {
        if (!ax_json_int_in(vocab->items[i], 0, AX_TOK_MAX_VOCAB - 1, &id))
            return ax_errorf(AX_ERR_CORRUPT, "%s: vocab entry \"%s\" has no valid id (0..%d)",
                             c->path, vocab->keys[i], AX_TOK_MAX_VOCAB - 1);
        if (id > max_id) max_id = id;
        *total += strlen(vocab->keys[i]);
    }
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
        if (id > max_id) max_id = id;
        *total += strlen(content);
    }
    if (max_id < 0) return ax_errorf(AX_ERR_CORRUPT, "%s: the vocabulary is empty", c->path);
    *V = (int)max_id + 1;
    return AX_OK;
}

/* added tokens: copied (normalized ones under NFC in their NFC form), sorted by first byte
 * and longest first, indexed by first byte */
static ax_status read_added(ctx *c, const ax_json *added, size_t n_added) {
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
        e->id = (int32_t)ax_json_get(a, "id")->num;
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
static ax_status find_eot(ctx *c, const ax_json *added, size_t n_added, int32_t *eot) {
    for (size_t e = 0; e < sizeof EOT_NAMES / sizeof *EOT_NAMES; e++)
        for (size_t i = 0; i < n_added; i++)
            if (is_true(added->items[i], "special") &&
                !strcmp(str_of(added->items[i], "content"), EOT_NAMES[e])) {
                *eot = (int32_t)ax_json_get(added->items[i], "id")->num;
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
    int V = 0;
    size_t total = 0;
    AX_CHECK(scan_ids(c, vocab, added, n_added, only_nfc, &V, &total));

    ax_tokenizer_t *t = calloc(1, sizeof *t);
    ax_hf_strings strs = {0};
    ax_status st = AX_OK;
    if (!t) return ax_errorf(AX_ERR_NOMEM, "%s: out of memory", path);
    t->hf = h;
    t->vocab_size = V;
    AX_CHECK_GOTO(ax_hf_read_vocab(h, vocab, V, total, path, &strs), fail);
    AX_CHECK_GOTO(ax_hf_read_merges(h, merges, total, &strs, path), fail);
    AX_CHECK_GOTO(ax_hf_read_unk_bytes(h, str_of(model, "unk_token"), path), fail);
    AX_CHECK_GOTO(read_added(c, added, n_added), fail);
    AX_CHECK_GOTO(find_eot(c, added, n_added, &t->eot), fail);
    AX_CHECK_GOTO(ax_hf_token_bytes(h, t, &strs, path), fail);
    t->checksum = XXH3_64bits(bytes, nbytes);
    ax_hf_strings_free(&strs);
    *out = t;
    return AX_OK;
fail:
    ax_hf_strings_free(&strs);
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
