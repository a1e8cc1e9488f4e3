/* `axmem study`'s stages in order, each skipped when an earlier run completed it
 * (study/stage.h), then the report over every mitigation's run folder. */
#include "study/study_run.h"
#include "data/data_run.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/core/log.h"
#include "lib/core/stop.h"
#include "reports/report.h"
#include "study/stage.h"
#include "study/study_mitigate.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

#define P 1200 /* a path under --out */

typedef struct {
    const ax_study_config *c;
    ax_study_result *r;
    int k, total; /* stages begun, all of them */
    char name[96], settings_text[1024];
    uint64_t settings;
    const char *files[12];
    int n_files;
} runner;

static const char *who(const ax_study_config *c) {
    return c->who ? c->who : "study";
}

/* Opens stage `name`: its settings (printf) and files, inputs and outputs, NULL-terminated.
 * 1 when an earlier run completed it (a line says so), else 0 (a line says it starts). */
static int begin(runner *s, const char *name, const char *what, const char *const *files,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static int begin(runner *s, const char *name, const char *what, const char *const *files,
                 const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->settings_text, sizeof s->settings_text, fmt, ap);
    va_end(ap);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->settings = XXH3_64bits(s->settings_text, strlen(s->settings_text));
    for (s->n_files = 0; files[s->n_files] && s->n_files < 12; s->n_files++)
        s->files[s->n_files] = files[s->n_files];
    s->k++;
    ax_error_clear();
    if (ax_study_stage_done(s->c->out, name, s->settings, s->files, s->n_files)) {
        AX_INFO("%s: [%d/%d] %s: done before (%s/stages/%s.json), skipped", who(s->c), s->k,
                s->total, what, s->c->out, name);
        s->r->stages_skipped++;
        return 1;
    }
    AX_INFO("%s: [%d/%d] %s", who(s->c), s->k, s->total, what);
    ax_study_stage_clear(s->c->out, name);
    return 0;
}

/* Closes the open stage: its record when st is AX_OK; a failure names the stage. */
static ax_status end(runner *s, ax_status st) {
    if (st == AX_OK && ax_stop_requested())
        return ax_errorf(AX_ERR_INTERRUPTED,
                         "stopped after stage '%s'; run the same command "
                         "again to continue",
                         s->name);
    if (st != AX_OK) {
        char m[2048];
        snprintf(m, sizeof m, "%s", ax_error_msg());
        ax_error_clear(); /* the stage's name before the cause */
        return ax_errorf(st, "stage '%s' failed: %s", s->name, m[0] ? m : ax_status_str(st));
    }
    s->r->stages_run++;
    return ax_study_stage_mark(s->c->out, s->name, s->settings, s->files, s->n_files);
}

#define STAGE(s, name, what, files, call, ...)                                                     \
    do {                                                                                           \
        if (!begin(s, name, what, files, __VA_ARGS__)) AX_CHECK(end(s, (call)));                   \
    } while (0)

/* RUN/study.json: what the report's comparison reads beside the scans */
static ax_status run_record(const ax_study_config *c, const ax_study_result *r,
                            const ax_mitigation *m, const char *run, const char *data) {
    ax_data_info info;
    AX_CHECK(ax_data_info_read(data, 0, &info));
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "schema"), ax_jw_str(&w, "axmem-study-run");
    ax_jw_key(&w, "version"), ax_jw_int(&w, 1);
    ax_jw_key(&w, "mitigation"), ax_jw_str(&w, m->spec);
    static const char *const kinds[] = {"none", "goldfish", "dedup", "dp"};
    ax_jw_key(&w, "kind"), ax_jw_str(&w, kinds[m->kind]);
    ax_jw_key(&w, "train_data"), ax_jw_str(&w, data);
    ax_jw_key(&w, "train_docs"), ax_jw_uint(&w, info.docs);
    ax_jw_key(&w, "train_tokens"), ax_jw_uint(&w, info.tokens);
    ax_jw_key(&w, "steps"), ax_jw_int(&w, c->steps);
    if (m->kind == AX_MIT_DEDUP) ax_jw_key(&w, "dedup_n"), ax_jw_int(&w, m->dedup_n);
    if (m->kind == AX_MIT_DP) {
        ax_jw_key(&w, "dp");
        ax_jw_obj_begin(&w);
        if (m->dp_epsilon) ax_jw_key(&w, "epsilon_target"), ax_jw_num(&w, m->dp_epsilon);
        if (m->dp_noise) ax_jw_key(&w, "noise_multiplier"), ax_jw_num(&w, m->dp_noise);
        ax_jw_key(&w, "delta"), ax_jw_num(&w, m->dp_delta);
        ax_jw_key(&w, "clip"), ax_jw_num(&w, m->dp_clip);
        ax_jw_obj_end(&w);
    }
    ax_jw_key(&w, "members"), ax_jw_int(&w, r->members);
    ax_jw_key(&w, "nonmembers"), ax_jw_int(&w, r->nonmembers);
    ax_jw_key(&w, "canaries"), ax_jw_int(&w, r->canaries);
    ax_jw_obj_end(&w);
    char path[P];
    snprintf(path, sizeof path, "%s/study.json", run);
    ax_status st = ax_jw_text(&w) ? ax_write_text_atomic(path, ax_jw_text(&w), 0)
                                  : ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", path);
    ax_jw_free(&w);
    return st;
}

/* the report's paragraph on what ran */
static void intro(const ax_study_config *c, const ax_study_result *r, char *t, size_t n) {
    int dedup = 0;
    for (int i = 0; i < r->n; i++) dedup |= r->mit[i].kind == AX_MIT_DEDUP;
    size_t k = (size_t)snprintf(
        t, n, "What ran: %" PRId64 " member documents%s%s, one model per mitigation (", r->members,
        c->corpus[0] ? " of " : "", c->corpus[0] ? c->corpus : "");
    for (int i = 0, first = 1; i < r->n && k < n; i++)
        k += (size_t)snprintf(t + k, n - k, "%s%s", first ? "" : ", ", r->mit[i].spec), first = 0;
    if (k < n)
        k += (size_t)snprintf(
            t + k, n - k,
            "), each %lld steps of %lld sequences (one document per sequence) with the same seed "
            "and shape (%s); probe: 32-token prefix from each training document, greedy 32-token "
            "continuation; regurgitation: 32 free generations of 96 tokens (temperature 0.7) "
            "slid over a 16-token index of the training set.",
            (long long)c->steps, (long long)c->batch, c->model);
    if (c->privacy && k < n)
        k += (size_t)snprintf(
            t + k, n - k,
            " Membership inference: the %" PRId64 " members against %" PRId64
            " held-out non-members%s; canaries '%s' planted at repeat counts %s (%" PRId64
            " in all); every model is scanned on these same sets%s. Secrets only in secrets.json "
            "and "
            "exposure.samples.jsonl (mode 0600). Membership is scored on the members as drawn, "
            "without their canaries.",
            r->members, r->nonmembers, c->corpus[0] ? " drawn from the same pool at random" : "",
            c->canary_format, c->canary_repeats, r->canaries,
            dedup ? ", the dedup model's too (it trained on the members deduplicated)" : "");
    if (k < n) snprintf(t + k, n - k, " Each run's scans are in its folder.");
}

/* the corpus' 2 x --docs documents (their first --chars characters), encoded */
static ax_status make_pool(const ax_study_config *c, const char *tok, const char *pool,
                           const char *pool_axd) {
    AX_CHECK(
        ax_study_subset(c->corpus, (long)c->first_doc, 2 * (long)c->docs, (size_t)c->chars, pool));
    return ax_study_encode(tok, pool, pool_axd);
}

static int64_t docs_of(const char *axd) {
    ax_data_info info;
    return ax_data_info_read(axd, 0, &info) == AX_OK ? (int64_t)info.docs : -1;
}

ax_status ax_study_run(const ax_study_config *c, ax_study_result *r) {
    AX_CHECK(ax_study_check(c, r));
    AX_CHECK(ax_mkdir_p(c->out));
    ax_stop_catch();
    char tok[P], pool[P], pool_axd[P], members[P], held[P], split_json[P], train[P], secrets[P],
        index[P], index_json[P + 8];
    snprintf(tok, P, "%s", c->tokenizer[0] ? c->tokenizer : "");
    if (!c->tokenizer[0]) snprintf(tok, P, "%s/tokenizer.axt", c->out);
    snprintf(pool, P, "%s/pool.jsonl", c->out);
    snprintf(pool_axd, P, "%s/pool.axd", c->out);
    snprintf(split_json, P, "%s/split.json", c->out);
    snprintf(members, P, "%s", c->members[0] ? c->members : "");
    snprintf(held, P, "%s", c->nonmembers[0] ? c->nonmembers : "");
    if (c->corpus[0]) {
        snprintf(members, P, "%s/members.axd", c->out);
        snprintf(held, P, "%s/heldout.axd", c->out);
    }
    snprintf(train, P, "%s/%s", c->out, c->privacy ? "train.axd" : "members.axd");
    if (!c->privacy && !c->corpus[0]) snprintf(train, P, "%s", members);
    snprintf(secrets, P, "%s/secrets.json", c->out);
    snprintf(index, P, "%s/train.index", c->out);
    snprintf(index_json, sizeof index_json, "%s.json", index);

    runner s = {.c = c, .r = r};
    int models = r->n, dedups = 0;
    for (int i = 0; i < r->n; i++) dedups += r->mit[i].kind == AX_MIT_DEDUP;
    s.total = (c->corpus[0] ? 2 + !c->tokenizer[0] : 0) + c->privacy + 1 + dedups +
              models * (3 + 2 * c->privacy);
    if (c->corpus[0]) {
        if (!c->tokenizer[0])
            STAGE(&s, "tokenizer", "train the tokenizer", ((const char *[]){c->corpus, tok, NULL}),
                  ax_study_tokenizer(c->corpus, c->vocab_size, tok), "vocab %lld",
                  (long long)c->vocab_size);
        STAGE(&s, "pool", "take the documents and encode them",
              ((const char *[]){c->corpus, tok, pool_axd, NULL}), make_pool(c, tok, pool, pool_axd),
              "first %lld docs %lld chars %lld", (long long)c->first_doc, 2 * (long long)c->docs,
              (long long)c->chars);
        STAGE(&s, "split", "split members / held-out non-members",
              ((const char *[]){pool_axd, members, held, split_json, NULL}),
              ax_study_split(pool_axd, c->ngram, members, held, split_json), "ngram %lld seed 1",
              (long long)c->ngram);
    }
    r->members = docs_of(members), r->nonmembers = docs_of(held);
    if (r->members < 0 || r->nonmembers < 0) return AX_ERR_IO; /* the reader's message */
    if (c->privacy) {
        int reps[AX_STUDY_MAX_REPEATS], n_reps = 0;
        ax_study_parse_repeats(c->canary_repeats, reps, &n_reps);
        r->canaries = (int64_t)n_reps * c->per_repeat;
        STAGE(&s, "canaries", "plant canaries in the members",
              ((const char *[]){members, tok, train, secrets, NULL}),
              ax_study_canaries(c, members, tok, train, secrets), "%s|%s|%lld|within %lld",
              c->canary_format, c->canary_repeats, (long long)c->per_repeat, (long long)c->seq_len);
    }
    STAGE(&s, "index", "index the training set", ((const char *[]){train, index, index_json, NULL}),
          ax_study_index(train, index), "n 16");

    ax_report_input inputs[AX_STUDY_MAX_MITIGATIONS];
    char runs[AX_STUDY_MAX_MITIGATIONS][P];
    for (int i = 0; i < r->n; i++) {
        const ax_mitigation *m = &r->mit[i];
        char run[P - 32], data[P], ckpt[P], metrics[P], started[P], name[96], what[256];
        char f[8][P];
        snprintf(run, sizeof run, "%s/%s", c->out, m->label); /* room for the file names */
        memcpy(runs[i], run, sizeof run);                     /* the report reads them after */
        snprintf(ckpt, P, "%s/ckpt", run);
        snprintf(metrics, P, "%s/metrics.jsonl", run);
        snprintf(data, P, "%s", train);
        inputs[i] = (ax_report_input){m->label, runs[i], 0};
        if (m->kind == AX_MIT_DEDUP) {
            char dedup_json[P];
            snprintf(data, P, "%s/%s.train.axd", c->out, m->label);
            snprintf(dedup_json, P, "%s/%s.dedup.json", c->out, m->label);
            snprintf(name, sizeof name, "dedup-%s", m->label);
            snprintf(what, sizeof what, "deduplicate the training set for %s (%s)", m->label,
                     m->spec);
            STAGE(&s, name, what, ((const char *[]){train, data, dedup_json, NULL}),
                  ax_study_dedup(train, m->dedup_n, data, dedup_json), "n %lld",
                  (long long)m->dedup_n);
        }
        /* training: a run cut off continues from its checkpoint when its settings are the same
         * (RUN/.study-train records them), else it starts over */
        snprintf(name, sizeof name, "train-%s", m->label);
        snprintf(what, sizeof what, "train %s (%s)", m->label, m->spec);
        snprintf(started, P, "%s/.study-train", run);
        if (!begin(&s, name, what, (const char *[]){data, held, tok, ckpt, metrics, NULL},
                   "%s|steps %lld|seq %lld|batch %lld|lr %.17g|model %s|seed %lld", m->spec,
                   (long long)c->steps, (long long)c->seq_len, (long long)c->batch, c->lr, c->model,
                   (long long)c->seed)) {
            char *old = NULL, hex[32];
            size_t len = 0;
            snprintf(hex, sizeof hex, "0x%016" PRIx64, s.settings);
            int resume = ax_path_exists(ckpt) && ax_read_file(started, &old, &len) == AX_OK &&
                         !strncmp(old, hex, strlen(hex));
            free(old);
            ax_error_clear();
            if (resume) AX_INFO("%s: continuing %s from its last checkpoint", who(c), run);
            ax_status st = AX_OK;
            if (!resume) {
                st = ax_rm_rf(run);
                if (st == AX_OK) st = ax_mkdir_p(run);
                if (st == AX_OK) st = ax_write_text_atomic(started, hex, 0);
            }
            if (st == AX_OK) st = ax_study_train(c, m, data, held, tok, run, resume);
            AX_CHECK(end(&s, st));
        }
        AX_CHECK(run_record(c, r, m, run, data));
        snprintf(f[0], P, "%s/probe.json", run);
        snprintf(f[1], P, "%s/probe.samples.jsonl", run);
        snprintf(f[2], P, "%s/regurgitation.json", run);
        snprintf(f[3], P, "%s/regurgitation.samples.jsonl", run);
        snprintf(f[4], P, "%s/mia.json", run);
        snprintf(f[5], P, "%s/mia.samples.jsonl", run);
        snprintf(f[6], P, "%s/exposure.json", run);
        snprintf(f[7], P, "%s/exposure.samples.jsonl", run);
        int64_t samples = c->corpus[0] ? c->docs : r->members;
        snprintf(name, sizeof name, "probe-%s", m->label);
        snprintf(what, sizeof what, "probe %s", m->label);
        STAGE(&s, name, what, ((const char *[]){ckpt, train, tok, f[0], f[1], NULL}),
              ax_study_probe(run, train, tok, samples, m->kind == AX_MIT_DEDUP),
              "samples %lld prefix 32 suffix 32", (long long)samples);
        snprintf(name, sizeof name, "generate-%s", m->label);
        snprintf(what, sizeof what, "regurgitation scan of %s", m->label);
        STAGE(&s, name, what, ((const char *[]){ckpt, index, tok, f[2], f[3], NULL}),
              ax_study_generate(run, index, tok, m->kind == AX_MIT_DEDUP), "32 x 96 t 0.7");
        if (!c->privacy) continue;
        /* members: the split's documents, before the canaries went in (the model trained on
         * them with a canary segment between two sentences): scored as drawn, like the
         * non-members, so length and compressibility do not tell the sets apart */
        snprintf(name, sizeof name, "mia-%s", m->label);
        snprintf(what, sizeof what, "membership inference on %s", m->label);
        STAGE(&s, name, what, ((const char *[]){ckpt, members, held, tok, f[4], f[5], NULL}),
              ax_study_mia(run, members, held, tok), "defaults");
        snprintf(name, sizeof name, "exposure-%s", m->label);
        snprintf(what, sizeof what, "canary exposure of %s", m->label);
        STAGE(&s, name, what, ((const char *[]){ckpt, secrets, tok, f[6], f[7], NULL}),
              ax_study_exposure(run, secrets, tok), "defaults");
    }

    char what_ran[8192];
    intro(c, r, what_ran, sizeof what_ran);
    snprintf(r->report_dir, sizeof r->report_dir, "%s/report", c->out);
    snprintf(r->summary, sizeof r->summary, "%s/summary.md", c->out);
    const ax_report_opts ro = {
        .inputs = inputs,
        .n_inputs = r->n,
        .index = index_json,
        .out = r->report_dir,
        /* no training text in any output, report.json included, unless --show-text: the
         * probes' text holds the canaries */
        .text_chars = c->show_text ? 80 : 0,
        .show_text = c->show_text,
        .title = c->title ? c->title : "axmem study: memorization mitigations on one split",
        .intro = what_ran,
        .summary = r->summary}; /* the report's summary section, never any text */
    AX_INFO("%s: write the report", who(c));
    ax_error_clear();
    ax_status st = ax_report_build(&ro);
    if (st != AX_OK) {
        char m[2048];
        snprintf(m, sizeof m, "%s", ax_error_msg());
        ax_error_clear();
        return ax_errorf(st, "writing the report failed: %s", m);
    }
    return AX_OK;
}
