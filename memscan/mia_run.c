/* `axmem memscan mia` as a library call (memscan/mia_run.h): the settings table, the run, and
 * the scan writer (DIR/mia.json in schema axmem-scan v1 + DIR/mia.samples.jsonl, published
 * together by memscan/scan_out.h). */
#include "memscan/mia_run.h"
#include "data/axd.h"
#include "data/tokenizer.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"
#include "lib/dist/grid.h"
#include "memscan/model_load.h"

#include <math.h>
#include <omp.h>
#include <sys/stat.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define F(field) offsetof(ax_ms_mia_opts, field)
static const ax_cfg_entry entries[] = {
    AX_CFG_CKPT_ENTRY(F),
    {"members", AX_CFG_STR, F(members), "", 1, 0,
     "documents the model was trained on (.axd; e.g. the train set of `axmem data split`)"},
    {"nonmembers", AX_CFG_STR, F(nonmembers), "", 1, 0,
     "documents it was not trained on, from the same distribution (the held-out set; not the "
     "--members file nor a copy of it)"},
    {"ref-ckpt", AX_CFG_STR, F(ref_ckpt), "", 1, 0,
     "optional reference model (same tokenizer, not trained on the members): adds the ref score"},
    AX_CFG_TOKENIZER_ENTRY(
        F,
        "the datasets' tokenizer: adds the zlib score and the model-free zlib_bpb (they compress "
        "the decoded text)"),
    {"max-docs", AX_CFG_INT, F(max_docs), "1000", 0, 1e8,
     "documents per set (a seeded random subset; 0 = all)"},
    {"tokens-per-doc", AX_CFG_INT, F(tokens_per_doc), "128", 1, 1e5,
     "score each document's first T tokens"},
    {"k", AX_CFG_INT, F(k), "20", 1, 100, "min-k% and min-k%++: percent of lowest tokens"},
    {"bootstrap", AX_CFG_INT, F(bootstrap), "1000", 1, 1e6,
     "bootstrap replicates for the AUC's 95% interval"},
    {"batch", AX_CFG_INT, F(batch), "8", 1, 1e5, "documents per forward per rank"},
    AX_CFG_SEED_ENTRY(F, "0", "picks the document subsets and the bootstrap"),
    AX_MS_MODEL_ENTRIES(F),
    AX_CFG_THREADS_ENTRY(F),
    AX_CFG_OUT_ENTRY(F, "", "output folder: mia.json and mia.samples.jsonl (required)"),
};
#undef F

const ax_cfg_table ax_ms_mia_table = {
    .usage = "axmem memscan mia --ckpt DIR --members A.axd --nonmembers B.axd --out DIR [flags]",
    .summary =
        "Membership inference: can an attacker tell training documents from unseen ones by the\n"
        "model's scores? Per document: loss, zlib ratio (zlib level 6), min-k% prob, min-k%++\n"
        "(full next-token distribution) and, with --ref-ckpt, the loss difference and ratio to a\n"
        "reference model; each oriented so higher = member. Per score: ROC AUC with a bootstrap\n"
        "95% interval, TPR at 0.1% and 1% FPR (only with at least 1000 and 100 non-members: fewer\n"
        "cannot resolve the rate), and the ROC curve. Model-free baselines, which read no model:\n"
        "the document's length in tokens and, with --tokenizer, zlib bits per byte of its text\n"
        "(higher value = member); an AUC of theirs far from 0.5 means the two sets differ in\n"
        "distribution, so part of the model's AUC may be that shift (a warning says so).\n"
        "Documents are read after an end-of-text token, as training sequences read them.\n"
        "--members and --nonmembers must be different sets: the same file, an identical copy,\n"
        "or non-members that are member documents are refused.",
    .entries = entries,
    .n = (int)(sizeof entries / sizeof entries[0]),
};

static void ds_block(ax_jw *w, const char *key, const char *path, const ax_axd_t *ds, int used) {
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ax_axd_checksum(ds));
    ax_jw_key(w, key);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, path);
    ax_jw_key(w, "xxh3"), ax_jw_str(w, hex);
    ax_jw_key(w, "docs"), ax_jw_uint(w, ax_axd_n_docs(ds));
    ax_jw_key(w, "tokens"), ax_jw_uint(w, ax_axd_n_tokens(ds));
    ax_jw_key(w, "scored_docs"), ax_jw_int(w, used);
    ax_jw_obj_end(w);
}

/* "needs >= 1000 non-members to resolve 0.1% FPR; have 38" into buf for a rate the
 * non-members cannot resolve; 0 (buf empty) when they can */
static int tpr_note(double fpr, long nonmembers, char *buf, size_t n) {
    long need = ax_fpr_min_nonmembers(fpr);
    buf[0] = '\0';
    if (nonmembers >= need) return 0;
    snprintf(buf, n, "needs >= %ld non-members to resolve %g%% FPR; have %ld", need, fpr * 100,
             nonmembers);
    return 1;
}

/* the warning for model-free score k (s->free_far[k] > 0): what its AUC says about the two
 * sets and the model's AUCs */
static void shift_warning(const ax_ms_mia_summary *s, int k, char *buf, size_t n) {
    const ax_ms_ci *a = &s->free_auc[k];
    snprintf(buf, n,
             "model-free score %s (it reads no model) has AUC %.3f (95%% CI %.3f-%.3f)%s: "
             "members and non-members %s in distribution, so part of the model scores' AUCs may "
             "be that shift, not membership; compare them with it, and draw the non-members at "
             "random from the members' distribution (a held-out set filtered by n-gram overlap "
             "is not such a sample)",
             ax_mia_free_names[k], a->mean, a->lo, a->hi,
             s->free_far[k] == 2 ? ", its interval excluding 0.5"
                                 : ", |AUC - 0.5| >= 0.1 though its interval holds 0.5",
             s->free_far[k] == 2 ? "differ" : "may differ");
}

static ax_status write_samples(const ax_mia_result *r, ax_ms_scan_out *so) {
    ax_status st = AX_OK;
    for (int i = 0; st == AX_OK && i < r->n; i++) {
        const ax_mia_doc *d = &r->d[i];
        ax_jw w;
        ax_jw_init(&w);
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "i"), ax_jw_int(&w, i);
        ax_jw_key(&w, "member"), ax_jw_bool(&w, d->member);
        ax_jw_key(&w, "doc"), ax_jw_uint(&w, d->doc);
        ax_jw_key(&w, "tokens"), ax_jw_int(&w, d->n_tokens);
        ax_jw_key(&w, "loss"), ax_jw_num(&w, d->loss);
        if (r->has[AX_MIA_REF]) ax_jw_key(&w, "ref_loss"), ax_jw_num(&w, d->ref_loss);
        if (r->has[AX_MIA_ZLIB]) {
            ax_jw_key(&w, "zlib_bytes"), ax_jw_num(&w, d->zlib_bytes);
            ax_jw_key(&w, "text_bytes"), ax_jw_num(&w, d->text_bytes);
        }
        ax_jw_key(&w, "doc_tokens"), ax_jw_uint(&w, d->doc_tokens);
        ax_jw_key(&w, "scores");
        ax_jw_obj_begin(&w);
        for (int k = 0; k < AX_MIA_N; k++)
            if (r->has[k]) ax_jw_key(&w, ax_mia_names[k]), ax_jw_num(&w, d->score[k]);
        ax_jw_obj_end(&w);
        ax_jw_key(&w, "model_free");
        ax_jw_obj_begin(&w);
        for (int k = 0; k < AX_MIA_FREE_N; k++)
            if (r->has_free[k])
                ax_jw_key(&w, ax_mia_free_names[k]), ax_jw_num(&w, d->free_score[k]);
        ax_jw_obj_end(&w);
        ax_jw_obj_end(&w);
        st = ax_ms_scan_out_line(so, &w);
        ax_jw_free(&w);
    }
    return st;
}

/* the TPR at one FPR: the number, or null and the reason beside it */
static void tpr_json(ax_jw *w, const char *key, double fpr, double tpr, long nn) {
    char note[160], nkey[64];
    ax_jw_key(w, key), ax_jw_num(w, tpr);
    if (tpr_note(fpr, nn, note, sizeof note)) {
        snprintf(nkey, sizeof nkey, "%s_note", key);
        ax_jw_key(w, nkey), ax_jw_str(w, note);
    }
}

/* one score's AUC, interval, TPRs and ROC curve: an object left open for the caller to close */
static void metric_json(ax_jw *w, const ax_mia_metrics *m) {
    ax_jw_obj_begin(w);
    ax_jw_key(w, "auc"), ax_jw_num(w, m->auc);
    ax_ms_json_pair(w, "auc_ci95", m->auc_lo, m->auc_hi);
    tpr_json(w, "tpr_at_fpr_0.001", 0.001, m->tpr_at_0_1, m->nn);
    tpr_json(w, "tpr_at_fpr_0.01", 0.01, m->tpr_at_1, m->nn);
    ax_jw_key(w, "roc"); /* [fpr, tpr] pairs from (0,0) to (1,1) */
    ax_jw_arr_begin(w);
    for (long i = 0; i < m->n_roc; i++) ax_ms_json_pair(w, NULL, m->roc[i].fpr, m->roc[i].tpr);
    ax_jw_arr_end(w);
}

static void metrics_json(ax_jw *w, const ax_mia_result *r) {
    ax_jw_key(w, "metrics");
    ax_jw_obj_begin(w);
    for (int k = 0; k < AX_MIA_N; k++) {
        if (!r->has[k]) continue;
        ax_jw_key(w, ax_mia_names[k]);
        metric_json(w, &r->m[k]);
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
}

static const char *const free_defs[AX_MIA_FREE_N] = {
    "8 * len(zlib.compress(text, 6)) / len(text), text = the bytes the document's scored tokens "
    "decode to",
    "the document's tokens in its dataset (all of them, end-of-text excluded)"};

/* the model-free baselines, each with its definition and how far from chance it is, and the
 * warnings they raise */
static void model_free_json(ax_jw *w, const ax_mia_result *r, const ax_ms_mia_summary *sum) {
    ax_jw_key(w, "model_free");
    ax_jw_obj_begin(w);
    for (int k = 0; k < AX_MIA_FREE_N; k++) {
        if (!r->has_free[k]) continue;
        ax_jw_key(w, ax_mia_free_names[k]);
        metric_json(w, &r->free_m[k]);
        ax_jw_key(w, "definition"), ax_jw_str(w, free_defs[k]);
        ax_jw_key(w, "orientation"), ax_jw_str(w, "higher value = member");
        ax_jw_key(w, "far_from_chance"), ax_jw_int(w, sum->free_far[k]);
        ax_jw_obj_end(w);
    }
    ax_jw_obj_end(w);
    ax_jw_key(w, "warnings");
    ax_jw_arr_begin(w);
    for (int k = 0; k < AX_MIA_FREE_N; k++) {
        char msg[1024];
        if (!sum->has_free[k] || !sum->free_far[k]) continue;
        shift_warning(sum, k, msg, sizeof msg);
        ax_jw_str(w, msg);
    }
    ax_jw_arr_end(w);
}

static ax_status write_outputs(const ax_ms_mia_opts *fl, const ax_ms_model *mm,
                               const ax_ms_model *ref, const ax_axd_t *mem, const ax_axd_t *non,
                               const ax_mia_result *r, ax_ms_mia_summary *sum) {
    ax_ms_scan_out so;
    ax_status st = ax_ms_scan_out_open_in(&so, fl->out, "mia");
    if (st == AX_OK) st = write_samples(r, &so);
    ax_jw w;
    ax_jw_init(&w);
    ax_ms_scan_header(&w, "membership-inference", mm->ck, fl->members, ax_axd_checksum(mem),
                      ax_axd_n_docs(mem), ax_axd_n_tokens(mem));
    ds_block(&w, "members", fl->members, mem, r->n_mem);
    ds_block(&w, "nonmembers", fl->nonmembers, non, r->n_non);
    ax_jw_key(&w, "reference");
    if (ref->ck) {
        ax_jw_obj_begin(&w);
        ax_jw_key(&w, "path"), ax_jw_str(&w, ax_ckpt_path(ref->ck));
        ax_jw_key(&w, "step"), ax_jw_int(&w, ax_ckpt_step(ref->ck));
        ax_jw_obj_end(&w);
    } else {
        ax_jw_null(&w);
    }
    ax_jw_key(&w, "config");
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "tokens_per_doc"), ax_jw_int(&w, fl->tokens_per_doc);
    ax_jw_key(&w, "k_percent"), ax_jw_int(&w, fl->k);
    ax_jw_key(&w, "max_docs"), ax_jw_int(&w, fl->max_docs);
    ax_jw_key(&w, "bootstrap"), ax_jw_int(&w, fl->bootstrap);
    ax_jw_key(&w, "seed"), ax_jw_int(&w, fl->seed);
    ax_jw_key(&w, "grid"), ax_jw_str(&w, ax_grid_spec(mm->grid));
    ax_jw_key(&w, "prompt_eot"), ax_jw_bool(&w, 1);
    ax_jw_key(&w, "orientation"), ax_jw_str(&w, "higher score = member");
    ax_jw_key(&w, "zlib_level"), ax_jw_int(&w, AX_ZLIB_LEVEL);
    ax_jw_key(&w, "tpr_min_nonmembers"); /* a TPR at FPR f needs >= this many non-members */
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "tpr_at_fpr_0.001"), ax_jw_int(&w, ax_fpr_min_nonmembers(0.001));
    ax_jw_key(&w, "tpr_at_fpr_0.01"), ax_jw_int(&w, ax_fpr_min_nonmembers(0.01));
    ax_jw_obj_end(&w);
    ax_jw_obj_end(&w);
    ax_jw_key(&w, "counts");
    ax_jw_obj_begin(&w);
    long tm = 0, tn = 0;
    for (int i = 0; i < r->n; i++) *(r->d[i].member ? &tm : &tn) += r->d[i].n_tokens;
    ax_jw_key(&w, "members"), ax_jw_int(&w, r->n_mem);
    ax_jw_key(&w, "nonmembers"), ax_jw_int(&w, r->n_non);
    ax_jw_key(&w, "member_tokens"), ax_jw_int(&w, tm);
    ax_jw_key(&w, "nonmember_tokens"), ax_jw_int(&w, tn);
    ax_jw_obj_end(&w);
    metrics_json(&w, r);
    model_free_json(&w, r, sum);
    return ax_ms_scan_out_finish(&so, &w, st, &sum->written, sum->scan, sum->samples_path);
}

static ax_status check_vocab(const char *flag, const char *path, const ax_axd_t *ds,
                             const ax_ms_model *mm) {
    if (ax_axd_vocab_size(ds) <= (uint32_t)mm->cfg.vocab) return AX_OK;
    return ax_errorf(AX_ERR_MISMATCH,
                     "%s %s has vocabulary %u but the model %s has %d; use datasets encoded with "
                     "the model's tokenizer",
                     flag, path, ax_axd_vocab_size(ds), ax_ckpt_path(mm->ck), mm->cfg.vocab);
}

/* --members and --nonmembers must be two document sets: the same file (by path or inode) or
 * the same payload would score every document as both a member and a non-member, an AUC of
 * 0.5 that says nothing about the model. The file check runs before the datasets are read. */
static ax_status same_sets(const ax_ms_mia_opts *fl, const char *how) {
    return ax_errorf(AX_ERR_ARG,
                     "--members %s and --nonmembers %s %s: every document would be both a member "
                     "and a non-member; pass documents the model was not trained on as "
                     "--nonmembers (e.g. the --out-holdout set of axmem data split)",
                     fl->members, fl->nonmembers, how);
}

static ax_status check_same_file(const ax_ms_mia_opts *fl) {
    struct stat a, b;
    if (strcmp(fl->members, fl->nonmembers) && (stat(fl->members, &a) || stat(fl->nonmembers, &b) ||
                                                a.st_dev != b.st_dev || a.st_ino != b.st_ino))
        return AX_OK; /* a file that cannot be read is reported when it is opened */
    return same_sets(fl, "are the same file");
}

static ax_status check_same_documents(const ax_ms_mia_opts *fl, const ax_axd_t *mem,
                                      const ax_axd_t *non) {
    char how[96];
    if (ax_axd_checksum(mem) != ax_axd_checksum(non)) return AX_OK;
    snprintf(how, sizeof how, "hold the same documents (payload checksum 0x%016llx)",
             (unsigned long long)ax_axd_checksum(mem));
    return same_sets(fl, how);
}

ax_status ax_ms_mia_run(const ax_ms_mia_opts *fl, ax_ms_mia_summary *sum) {
    ax_ms_model mm = {0}, ref = {0};
    ax_axd_t *mem = NULL, *non = NULL;
    ax_tokenizer_t *tok = NULL;
    ax_mia_result res = {0};
    ax_status st = AX_OK;
    memset(sum, 0, sizeof *sum);
    if (!fl->ckpt[0] || !fl->members[0] || !fl->nonmembers[0] || !fl->out[0])
        return ax_errorf(AX_ERR_ARG, "--ckpt, --members, --nonmembers and --out are required; see "
                                     "axmem memscan mia --help");
    if (fl->threads > 0) omp_set_num_threads((int)fl->threads);
    int T = (int)fl->tokens_per_doc, B = (int)fl->batch;
    if ((int64_t)B * T > (1 << 28))
        return ax_errorf(AX_ERR_ARG,
                         "--batch %d x --tokens-per-doc %d positions per forward is too many; "
                         "lower --batch",
                         B, T);
    AX_CHECK(check_same_file(fl));
    AX_CHECK_GOTO(ax_axd_open(fl->members, 1, &mem), out);
    AX_CHECK_GOTO(ax_axd_open(fl->nonmembers, 1, &non), out);
    AX_CHECK_GOTO(check_same_documents(fl, mem, non), out);
    if (fl->tokenizer[0]) {
        AX_CHECK_GOTO(ax_tokenizer_load(fl->tokenizer, &tok), out);
        AX_CHECK_GOTO(ax_axd_check_tokenizer(mem, tok, fl->tokenizer), out);
        AX_CHECK_GOTO(ax_axd_check_tokenizer(non, tok, fl->tokenizer), out);
    }
    /* the model holds `batch` sequences of T positions per rank */
    AX_CHECK_GOTO(ax_ms_model_open(fl->ckpt, fl->grid, AX_CFG_DEVICE_SPEC(fl), B * T, T, &mm), out);
    AX_CHECK_GOTO(check_vocab("--members", fl->members, mem, &mm), out);
    AX_CHECK_GOTO(check_vocab("--nonmembers", fl->nonmembers, non, &mm), out);
    if (fl->ref_ckpt[0]) {
        AX_CHECK_GOTO(
            ax_ms_model_open(fl->ref_ckpt, fl->grid, AX_CFG_DEVICE_SPEC(fl), B * T, T, &ref), out);
        AX_CHECK_GOTO(check_vocab("--members", fl->members, mem, &ref), out);
        AX_CHECK_GOTO(check_vocab("--nonmembers", fl->nonmembers, non, &ref), out);
    }
    ax_mia_config c = {.max_docs = (int)fl->max_docs,
                       .T = T,
                       .k_frac = (double)fl->k / 100.0,
                       .batch = B,
                       .seed = (uint64_t)fl->seed,
                       .progress = 1};
    AX_CHECK_GOTO(ax_mia_score(mm.model, ref.model, mem, non, tok, &c, &res), out);
    sum->members = res.n_mem, sum->nonmembers = res.n_non;
    if (ax_grid_rank(mm.grid) == 0) {
        AX_CHECK_GOTO(ax_mia_metrics_compute(&res, (int)fl->bootstrap, (uint64_t)fl->seed + 7, 200),
                      out);
        for (int k = 0; k < AX_MIA_N; k++) {
            sum->has[k] = res.has[k];
            sum->auc[k] = (ax_ms_ci){res.m[k].auc, res.m[k].auc_lo, res.m[k].auc_hi};
            sum->tpr_at_0_1[k] = res.m[k].tpr_at_0_1, sum->tpr_at_1[k] = res.m[k].tpr_at_1;
        }
        for (int k = 0; k < AX_MIA_FREE_N; k++) {
            const ax_mia_metrics *m = &res.free_m[k];
            sum->has_free[k] = res.has_free[k];
            sum->free_auc[k] = (ax_ms_ci){m->auc, m->auc_lo, m->auc_hi};
            sum->free_far[k] = res.has_free[k] ? ax_mia_far_from_chance(m) : 0;
        }
        st = write_outputs(fl, &mm, &ref, mem, non, &res, sum);
    }
out:
    ax_mia_result_free(&res);
    ax_ms_model_close(&ref);
    ax_ms_model_close(&mm);
    ax_tokenizer_free(tok);
    ax_axd_free(mem), ax_axd_free(non);
    return st;
}

/* "0.123" or "n/a" (a rate the non-members cannot resolve) */
static const char *tpr_text(double v, char *buf, size_t n) {
    if (isnan(v))
        snprintf(buf, n, "n/a");
    else
        snprintf(buf, n, "%.3f", v);
    return buf;
}

void ax_ms_mia_print(const ax_ms_mia_opts *o, const ax_ms_mia_summary *s, FILE *f) {
    if (!s->written) return;
    char a[16], b[16], note[160];
    fprintf(f, "mia: %d members, %d non-members, %lld tokens each at most\n", s->members,
            s->nonmembers, (long long)o->tokens_per_doc);
    for (int k = 0; k < AX_MIA_N; k++)
        if (s->has[k])
            fprintf(f, "  %-9s AUC %.3f (95%% CI %.3f-%.3f)  TPR@0.1%%FPR %s  TPR@1%%FPR %s\n",
                    ax_mia_names[k], s->auc[k].mean, s->auc[k].lo, s->auc[k].hi,
                    tpr_text(s->tpr_at_0_1[k], a, sizeof a), tpr_text(s->tpr_at_1[k], b, sizeof b));
    for (int j = 0; j < 2; j++)
        if (tpr_note(j ? 0.01 : 0.001, s->nonmembers, note, sizeof note))
            fprintf(f, "  TPR@%s%%FPR n/a: %s\n", j ? "1" : "0.1", note);
    fprintf(f, "model-free baselines (read no model; AUC far from 0.5 = the sets differ):\n");
    for (int k = 0; k < AX_MIA_FREE_N; k++)
        if (s->has_free[k])
            fprintf(f, "  %-9s AUC %.3f (95%% CI %.3f-%.3f)%s\n", ax_mia_free_names[k],
                    s->free_auc[k].mean, s->free_auc[k].lo, s->free_auc[k].hi,
                    s->free_far[k] ? "  WARNING: far from chance" : "");
    if (!s->has_free[AX_MIA_FREE_ZLIB_BPB]) fprintf(f, "  (zlib_bpb needs --tokenizer)\n");
    for (int k = 0; k < AX_MIA_FREE_N; k++) {
        char msg[1024];
        if (!s->has_free[k] || !s->free_far[k]) continue;
        shift_warning(s, k, msg, sizeof msg);
        fprintf(stderr, "warning: memscan mia: %s\n", msg);
    }
    fprintf(f, "wrote %s and %s\n", s->scan, s->samples_path);
}
