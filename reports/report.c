/* ax_report_build: load, summarise, render all three documents in memory, then write each to
 * OUT/.NAME.tmp and rename it into place, so a failure never leaves a half-written report or
 * a mix of old and new files. */
#include "lib/core/fsutil.h"
#include "reports/model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static ax_status default_title(ax_report *r, const char *title) {
    ax_rep_buf b = {0};
    if (title) {
        ax_rep_puts(&b, title);
    } else {
        ax_rep_puts(&b, "axmem memorization report: ");
        for (int i = 0; i < r->n_runs; i++)
            ax_rep_printf(&b, "%s%s", i ? " vs " : "", r->runs[i].label);
    }
    if (b.oom) {
        ax_rep_buf_free(&b);
        return ax_errorf(AX_ERR_NOMEM, "out of memory writing the report");
    }
    r->title = b.s;
    return AX_OK;
}

enum { N_OUT = 3 };
static const char *const names[N_OUT] = {"report.html", "report.md", "report.json"};

static ax_status write_all(const char *out, const char *const text[N_OUT]) {
    char tmp[N_OUT][4096], dst[N_OUT][4096];
    ax_status st = AX_OK;
    int k;
    for (k = 0; k < N_OUT; k++) {
        snprintf(tmp[k], sizeof tmp[k], "%s/.%s.tmp", out, names[k]);
        snprintf(dst[k], sizeof dst[k], "%s/%s", out, names[k]);
    }
    /* private (0600): the report may quote training text */
    for (k = 0; k < N_OUT && st == AX_OK; k++)
        st = ax_write_file_private(tmp[k], text[k], strlen(text[k]));
    for (k = 0; k < N_OUT && st == AX_OK; k++) st = ax_rename_durable(tmp[k], dst[k]);
    if (st != AX_OK)
        for (k = 0; k < N_OUT; k++) remove(tmp[k]);
    return st;
}

ax_status ax_report_build(const ax_report_opts *o) {
    ax_report r;
    ax_rep_buf html = {0}, md = {0}, json = {0};
    ax_jw jw;
    ax_jw_init(&jw);
    ax_status st;
    if (!o->n_inputs) {
        memset(&r, 0, sizeof r);
        st = ax_errorf(AX_ERR_ARG, "no runs given; pass --run LABEL=DIR or --scan LABEL=FILE");
        goto out;
    }
    if (strlen(o->out) > 3000) {
        memset(&r, 0, sizeof r);
        st = ax_errorf(AX_ERR_ARG, "--out path is too long");
        goto out;
    }
    AX_CHECK_GOTO(ax_rep_load(o, &r), out);
    AX_CHECK_GOTO(default_title(&r, o->title), out);
    AX_CHECK_GOTO(ax_rep_summarise(&r), out);
    ax_rep_write_html(&r, &html);
    ax_rep_write_md(&r, &md);
    ax_rep_write_json(&r, &jw);
    if (html.oom || md.oom || !ax_jw_text(&jw)) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory writing the report");
        goto out;
    }
    AX_CHECK_GOTO(ax_mkdir_p(o->out), out);
    ax_rep_puts(&json, ax_jw_text(&jw));
    ax_rep_puts(&json, "\n");
    if (json.oom) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory writing the report");
        goto out;
    }
    {
        const char *text[N_OUT] = {html.s, md.s, json.s};
        AX_CHECK_GOTO(write_all(o->out, text), out);
    }
out:
    ax_rep_free(&r);
    ax_rep_buf_free(&html), ax_rep_buf_free(&md), ax_rep_buf_free(&json);
    ax_jw_free(&jw);
    return st;
}
