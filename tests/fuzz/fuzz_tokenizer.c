/* libFuzzer target: the tokenizer file reader (data/tokenizer_file.c via ax_tok_load_bytes, the
 * bytes ax_tokenizer_load reads: an axmem file or a Hugging Face tokenizer.json, hf_load.c)
 * and, for a file that loads, encode/decode round trips. */
#include "data/tok_internal.h"
#include "data/tokenizer.h"
#include "fuzz_util.h"
#include "lib/core/fsutil.h"

#include <xxhash.h>

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    setenv("AXMEM_LOG", "error", 1);
    ax_log_set_level(AX_LOG_ERROR);
    if (fz_seed_dir()) {
        static const char text[] =
            "the quick brown fox jumps over the lazy dog; the dog sleeps. "
            "In the beginning God created the heaven and the earth.\n"
            "    indented    text\t\twith 1234 5678 digits and \xc3\xa9t\xc3\xa9";
        int sizes[] = {260, 300, 330};
        for (int k = 0; k < 3; k++) {
            ax_bpe_trainer_t *tr;
            ax_tokenizer_t *t;
            if (ax_bpe_trainer_create(&tr) != AX_OK) abort();
            if (ax_bpe_trainer_add(tr, (const uint8_t *)text, sizeof text - 1) != AX_OK) abort();
            if (ax_bpe_trainer_train(tr, sizes[k], NULL, &t) != AX_OK) abort();
            char p[1024];
            snprintf(p, sizeof p, "%s/tok%d.bin", fz_seed_dir(), sizes[k]);
            if (ax_tokenizer_save(t, p) != AX_OK) abort();
            ax_tokenizer_free(t);
            ax_bpe_trainer_free(tr);
        }
        /* tokenizer.json seeds: the committed fixtures of each kind */
        const char *hf[] = {"gpt2", "neox", "llama3", "qwen2", "llama2", "llama2_meta"};
        for (int k = 0; k < 6; k++) {
            char src[256], name[64];
            snprintf(src, sizeof src, "tests/fixtures/tokenizers/%s.json", hf[k]);
            snprintf(name, sizeof name, "%s.json", hf[k]);
            char *d;
            size_t n;
            if (ax_read_file(src, &d, &n) != AX_OK) abort();
            fz_write_seed(name, d, n);
            free(d);
        }
        exit(0);
    }
    return 0;
}

static void one(const uint8_t *data, size_t size);

/* each input twice: as is, and with its trailing checksum recomputed (else the merges behind
 * it are almost never reached) */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    one(data, size);
    if (size >= 32) {
        uint8_t *c = malloc(size);
        memcpy(c, data, size);
        uint64_t h = XXH3_64bits(c, size - 8);
        memcpy(c + size - 8, &h, 8);
        one(c, size);
        free(c);
    }
    return 0;
}

static void one(const uint8_t *data, size_t size) {
    ax_tokenizer_t *t = NULL;
    ax_error_clear();
    ax_status st = ax_tok_load_bytes(data, size, "fuzz.tok", &t);
    fz_note("tokenizer", st);
    if (st != AX_OK) {
        if (t) abort();
        return;
    }
    /* a tokenizer that loads must round-trip any bytes: use the input itself as text */
    size_t n = size < 4096 ? size : 4096;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (ax_tokenizer_encode(t, data, n, &ids, &n_ids) != AX_OK) abort();
    uint8_t *back = NULL;
    size_t n_back = 0;
    for (size_t i = 0; i < n_ids; i++)
        if (ids[i] < 0 || ids[i] >= ax_tokenizer_vocab_size(t)) abort();
    if (ax_tokenizer_decode(t, ids, n_ids, &back, &n_back) != AX_OK) abort();
    /* axmem's byte-level BPE round-trips any bytes exactly; a tokenizer.json need not (a byte
     * its vocabulary lacks is dropped, a Metaspace "▁" in the text decodes as a space) */
    if (!ax_tokenizer_is_hf(t) && (n_back != n || (n && memcmp(back, data, n)))) abort();
    for (int32_t id = 0; id < ax_tokenizer_vocab_size(t); id += 1 + id / 4) {
        size_t len;
        if (!ax_tokenizer_token_bytes(t, id, &len) && id != AX_TOK_EOT && len) abort();
    }
    free(ids);
    free(back);
    ax_tokenizer_free(t);
    ax_error_clear();
}
