/* `axmem report`: scan results of one or more runs -> one document (reports/doc.h), rendered
 * as a self-contained HTML page (inline CSS and SVG), Markdown and versioned JSON. Reads scan
 * files only; never loads a model. */
#pragma once
#include "lib/core/status.h"

typedef struct {
    const char *label; /* the run's name in tables and charts */
    const char *path;  /* a run directory, or one scan file */
    int is_file;       /* 1: path is a scan.json / regurgitation.json file (--scan) */
} ax_report_input;

typedef struct {
    const ax_report_input *inputs; /* inputs with the same label and is_file merge */
    int n_inputs;
    const char *index;   /* memscan index sidecar (INDEX.json), or NULL */
    const char *out;     /* output directory, created if missing */
    const char *title;   /* NULL: a default title */
    int text_chars;      /* characters of decoded sample text shown; 0: no text in any output */
    int redact;          /* 1: no training text in any output (report.json included) */
    int show_text;       /* 1: HTML and Markdown quote memorized text and canary secrets (clipped
                            to text_chars); 0: they quote none, and no output holds a secret */
    const char *intro;   /* a paragraph in the summary (what was run), or NULL */
    const char *summary; /* non-NULL: the summary section alone as Markdown to this file too */
} ax_report_opts;

/* Loads every input, then writes out/report.html, report.md and report.json (and o->summary;
 * mode 0600: they may quote training text), each to a temporary file renamed into place.
 * Failures record a message naming the file. */
ax_status ax_report_build(const ax_report_opts *o);
