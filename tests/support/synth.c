#include "tests/support/synth.h"
#include "data/axd.h"
#include "data/tokenizer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static int32_t draw(uint64_t *s, uint32_t alphabet) {
    uint32_t t = (uint32_t)(((splitmix(s) >> 32) * alphabet) >> 32);
    return t == AX_TOK_EOT ? 0 : (int32_t)t;
}

void ax_memscan_synth_passage(const ax_memscan_synth_opts *o, uint32_t j, int32_t *out) {
    uint64_t s = o->seed ^ (0xA5A5ULL << 40) ^ ((uint64_t)j << 20);
    for (uint32_t i = 0; i < o->passage_len; i++) out[i] = draw(&s, o->alphabet);
}

ax_status ax_memscan_synth_write(const char *path, const ax_memscan_synth_opts *o,
                                 ax_memscan_plant **plants, size_t *n_plants) {
    if (plants) *plants = NULL;
    if (n_plants) *n_plants = 0;
    uint64_t want = 0, growth = o->copies_growth > 1 ? o->copies_growth : 1, c = o->copies;
    for (uint32_t j = 0; j < o->n_passages && want <= o->n_docs; j++, c *= growth) want += c;
    if (o->alphabet < 1 || o->alphabet > o->vocab || o->doc_len_min > o->doc_len_max ||
        want > o->n_docs)
        return ax_errorf(AX_ERR_ARG, "synth corpus: inconsistent options");
    /* which passage each document gets (-1 none): a shuffled prefix of the documents */
    int64_t *which = malloc(sizeof *which * (o->n_docs ? o->n_docs : 1));
    uint64_t *perm = malloc(sizeof *perm * (o->n_docs ? o->n_docs : 1));
    int32_t *doc = malloc(sizeof *doc * ((size_t)o->doc_len_max + 1));
    int32_t *pas = malloc(sizeof *pas * ((size_t)o->passage_len + 1));
    ax_memscan_plant *pl = calloc(want ? want : 1, sizeof *pl);
    ax_axd_writer_t *w = NULL;
    ax_status st = AX_OK;
    if (!which || !perm || !doc || !pas || !pl) {
        st = ax_errorf(AX_ERR_NOMEM, "synth corpus: out of memory");
        goto done;
    }
    uint64_t s = o->seed * 0x2545F4914F6CDD1DULL + 1;
    for (uint64_t d = 0; d < o->n_docs; d++) which[d] = -1, perm[d] = d;
    uint64_t passage = 0, left = o->copies;
    for (uint64_t i = 0; i < want; i++) {
        uint64_t j = i + splitmix(&s) % (o->n_docs - i);
        uint64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        while (!left) passage++, left = o->copies * (uint64_t)pow((double)growth, (double)passage);
        which[perm[i]] = (int64_t)passage;
        left--;
    }
    if ((st = ax_axd_writer_create(path, o->vocab, &w)) != AX_OK) goto done;
    size_t np = 0;
    uint64_t pos = 0;
    for (uint64_t d = 0; d < o->n_docs; d++) {
        uint32_t len = o->doc_len_min +
                       (uint32_t)(splitmix(&s) % ((uint64_t)o->doc_len_max - o->doc_len_min + 1));
        for (uint32_t i = 0; i < len; i++) doc[i] = draw(&s, o->alphabet);
        if (which[d] >= 0 && len >= o->passage_len) {
            uint64_t off = splitmix(&s) % ((uint64_t)len - o->passage_len + 1);
            ax_memscan_synth_passage(o, (uint32_t)which[d], pas);
            memcpy(doc + off, pas, sizeof *pas * o->passage_len);
            pl[np++] = (ax_memscan_plant){(uint32_t)which[d], d, off, pos + off};
        }
        if ((st = ax_axd_writer_add_doc(w, doc, len)) != AX_OK) goto done;
        pos += (uint64_t)len + 1;
    }
    st = ax_axd_writer_close(w);
    w = NULL;
    if (st == AX_OK && plants) {
        *plants = pl;
        pl = NULL;
    }
    if (st == AX_OK && n_plants) *n_plants = np;
done:
    if (w) ax_axd_writer_abort(w);
    free(which);
    free(perm);
    free(doc);
    free(pas);
    free(pl);
    return st;
}
