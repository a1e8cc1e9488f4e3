/* ax_report_build: load, build the document (each section once), render it in memory, then
 * write each file to DIR/.NAME.tmp and rename it into place, so a failure never leaves a
 * half-written report or a mix of old and new files. */
#include "lib/core/fsutil.h"
#include "reports/model.h"
#include "reports/sections.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { N_OUT = 4 }; /* report.html, report.md, report.json, the summary */

/* path[k] <- text[k] for the k < n; private (0600): the report may quote training text */
static ax_status write_all(int n, char path[][4096], ax_rep_buf *text) {
    char tmp[N_OUT][4200];
    ax_status st = AX_OK;
    int k;
    for (k = 0; k < n; k++) {
        const char *slash = strrchr(path[k], '/');
        int dir = slash ? (int)(slash - path[k] + 1) : 0;
        snprintf(tmp[k], sizeof tmp[k], "%.*s.%s.tmp", dir, path[k], path[k] + dir);
    }
    for (k = 0; k < n && st == AX_OK; k++)
        st = ax_write_file_private(tmp[k], text[k].s ? text[k].s : "", text[k].len);
    for (k = 0; k < n && st == AX_OK; k++) st = ax_rename_durable(tmp[k], path[k]);
    if (st != AX_OK)
        for (k = 0; k < n; k++) remove(tmp[k]);
    return st;
}

static void build(const ax_report *r, const ax_report_opts *o, ax_doc *d) {
    ax_rep_buf t = {0};
    for (int i = 0; i < r->n_runs && !o->title; i++)
        ax_rep_printf(&t, "%s%s", i ? " vs " : "axmem memorization report: ", r->runs[i].label);
    d->title = ax_doc_printf(d, "%s", o->title ? o->title : t.s ? t.s : "");
    d->mem.oom |= t.oom;
    ax_rep_buf_free(&t);
    d->show_quotes = r->show_text, d->quote_chars = r->text_chars, d->redacted = !r->text_chars;
    ax_rep_section_summary(d, r, o->intro);
    ax_rep_section_compare(d, r);
    ax_rep_section_probe(d, r);
    ax_rep_section_privacy(d, r);
    ax_rep_section_training(d, r);
}

ax_status ax_report_build(const ax_report_opts *o) {
    ax_report r;
    ax_doc d = {0};
    ax_rep_buf text[N_OUT] = {{0}};
    char path[N_OUT][4096];
    ax_status st;
    memset(&r, 0, sizeof r);
    if (!o->n_inputs)
        return ax_errorf(AX_ERR_ARG, "no runs given; pass --run LABEL=DIR or --scan LABEL=FILE");
    if (strlen(o->out) > 3000 || (o->summary && strlen(o->summary) > 3000))
        return ax_errorf(AX_ERR_ARG, "--out path is too long");
    AX_CHECK_GOTO(ax_rep_load(o, &r), out);
    build(&r, o, &d);
    ax_doc_html(&d, &text[0]);
    ax_doc_md(&d, d.n_sections, &text[1]);
    ax_doc_json(&d, &text[2]);
    ax_doc_md(&d, 1, &text[3]);
    static const char *const names[] = {"report.html", "report.md", "report.json"};
    for (int k = 0; k < 3; k++) snprintf(path[k], sizeof path[k], "%s/%s", o->out, names[k]);
    snprintf(path[3], sizeof path[3], "%s", o->summary ? o->summary : "");
    st = AX_OK;
    for (int k = 0; k < N_OUT; k++) d.mem.oom |= text[k].oom;
    if (d.mem.oom) {
        st = ax_errorf(AX_ERR_NOMEM, "out of memory writing the report");
        goto out;
    }
    AX_CHECK_GOTO(ax_mkdir_p(o->out), out);
    AX_CHECK_GOTO(write_all(o->summary ? 4 : 3, path, text), out);
out:
    ax_rep_free(&r);
    ax_doc_free(&d);
    for (int k = 0; k < N_OUT; k++) ax_rep_buf_free(&text[k]);
    return st;
}
