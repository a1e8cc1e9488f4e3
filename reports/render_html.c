/* A document as one self-contained HTML page (inline CSS and SVG, no scripts, no external
 * resources) that can be mailed or archived as one file. Every string is escaped: sample text
 * is training data and may hold markup. Laid out for any width from a phone's up: a wide
 * table scrolls inside its own box, numbers never wrap, a chart's title and legend are HTML
 * text at the page's size whatever the chart's scale. */
#include "reports/doc.h"
#include "reports/svg.h"

#include <stdlib.h>

static const char *CSS =
    "body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;"
    "color:#1a1a1a;max-width:1100px;margin:24px auto;padding:0 16px}"
    "h1{font-size:1.6em;margin:.2em 0}h2{margin-top:1.6em;border-bottom:1px solid #ddd}"
    ".headline{font-size:1.15em;background:#f3f7fb;border-left:4px solid #0072B2;"
    "padding:10px 14px}.note{background:#fff6e5;border-left:4px solid #E69F00;padding:8px 14px}"
    ".tbl{overflow-x:auto;margin:8px 0 16px}table{border-collapse:collapse;font-size:.92em}"
    "th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}"
    "th{background:#f5f5f5}table.facts th{font-weight:500}"
    "th[scope=row]{min-width:9em}td.num{text-align:right;font-variant-numeric:tabular-nums}"
    ".facts td.num{text-align:left}"
    ".n{white-space:nowrap}"
    "tr.flag td{background:#fde2e2}td.txt{font-family:ui-monospace,Menlo,Consolas,monospace;"
    "font-size:.9em;min-width:16em;max-width:420px;overflow-wrap:anywhere}"
    "figure{margin:12px 0 24px;max-width:720px}figcaption{font-weight:600;margin-bottom:4px}"
    ".chart{width:100%;height:auto;display:block}"
    ".chart text{font-size:12px;fill:#333}.chart .yl{text-anchor:end}"
    ".chart .xl,.chart .al,.chart .bv{text-anchor:middle}.chart .grid{stroke:#e6e6e6}"
    ".chart .axis{stroke:#888}.chart .ci{stroke:#222;stroke-width:1.5;fill:none}"
    ".legend{list-style:none;padding:0;margin:6px 0 0;display:flex;flex-wrap:wrap;"
    "gap:4px 18px;font-size:13px}.legend i{display:inline-block;width:12px;height:12px;"
    "margin-right:6px;vertical-align:-1px}.muted{color:#666;font-size:.9em}";

/* a number on one line (its note may wrap), a quote clipped */
static void cell(const ax_doc *d, const ax_doc_cell *c, ax_rep_buf *tmp, ax_rep_buf *b) {
    tmp->len = 0;
    ax_doc_cell_text(d, c, 0, tmp);
    ax_rep_puts(b, c->kind == AX_CELL_NUM ? "<span class=\"n\">" : "");
    ax_rep_html(b, tmp->len ? tmp->s : "");
    ax_rep_puts(b, c->kind == AX_CELL_NUM ? "</span>" : "");
    if (c->kind == AX_CELL_NUM && c->text)
        ax_rep_puts(b, c->text[0] == ',' ? "" : " "), ax_rep_html(b, c->text);
}

static void table(const ax_doc *d, const ax_doc_table *t, ax_rep_buf *b) {
    ax_rep_buf tmp = {0};
    int vis[256], hidden, shown = ax_doc_shown(d, t, vis, &hidden);
    ax_rep_puts(b, t->facts ? "<div class=\"tbl\"><table class=\"facts\">"
                            : "<div class=\"tbl\"><table><tr>");
    for (int k = 0; k < t->n_cols && !t->facts; k++)
        if (vis[k])
            ax_rep_puts(b, "<th>"), ax_rep_html(b, t->cols[k].label), ax_rep_puts(b, "</th>");
    ax_rep_puts(b, t->facts ? "\n" : "</tr>\n");
    for (int i = 0; i < shown; i++) {
        ax_rep_puts(b, t->flag[i] ? "<tr class=\"flag\">" : "<tr>");
        for (int k = 0; k < t->n_cols; k++) {
            const ax_doc_cell *c = &t->cells[i * t->n_cols + k];
            if (!vis[k]) continue;
            ax_rep_puts(b, t->facts && !k             ? "<th>"
                           : c->kind == AX_CELL_NUM   ? "<td class=\"num\">"
                           : c->kind == AX_CELL_QUOTE ? "<td class=\"txt\">"
                                                      : "<td>");
            cell(d, c, &tmp, b);
            ax_rep_puts(b, (t->facts || t->row_heads) && !k ? "</th>" : "</td>");
        }
        ax_rep_puts(b, "</tr>\n");
    }
    ax_rep_puts(b, "</table></div>\n");
    if (hidden)
        ax_rep_puts(b, "<p class=\"muted\">Memorized text not shown: axmem report --show-text "
                       "shows it.</p>\n");
    if (shown < t->n_rows)
        ax_rep_printf(b, "<p class=\"muted\">The first %d of %d rows; report.json has all.</p>\n",
                      shown, t->n_rows);
    ax_rep_buf_free(&tmp);
}

static void chart(const ax_doc_chart *c, ax_rep_buf *b) {
    ax_rep_puts(b, "<figure id=\"");
    ax_rep_html(b, c->id);
    ax_rep_puts(b, "\"><figcaption>");
    ax_rep_html(b, c->title);
    ax_rep_puts(b, "</figcaption>");
    ax_svg_chart(b, c);
    if (c->n_series > 1) {
        ax_rep_puts(b, "<ul class=\"legend\">");
        for (int k = 0; k < c->n_series; k++) {
            ax_rep_printf(b, "<li><i style=\"background:%s\"></i>", ax_svg_color(k));
            ax_rep_html(b, c->s[k].name);
            ax_rep_puts(b, "</li>");
        }
        ax_rep_puts(b, "</ul>");
    }
    ax_rep_puts(b, "</figure>\n");
}

void ax_doc_html(const ax_doc *d, ax_rep_buf *b) {
    static const char *const para[] = {"<p>", "<p class=\"muted\">", "<p class=\"note\">",
                                       "<p class=\"note\">Warning: "};
    ax_rep_puts(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                   "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                   "<title>");
    ax_rep_html(b, d->title);
    ax_rep_printf(b, "</title><style>%s</style></head>\n<body>\n<h1>", CSS);
    ax_rep_html(b, d->title);
    ax_rep_puts(b, "</h1>\n<p class=\"headline\"><strong>");
    ax_rep_html(b, d->conclusion);
    ax_rep_puts(b, d->conclusion[0] ? "</strong> " : "</strong>");
    ax_rep_html(b, d->headline);
    ax_rep_puts(b, "</p>\n");
    for (int i = 0; i < d->n_sections; i++) {
        const ax_doc_section *s = &d->sec[i];
        if (s->heading[0]) {
            ax_rep_printf(b, "<h%d id=\"", s->level);
            ax_rep_html(b, s->id);
            ax_rep_puts(b, "\">");
            ax_rep_html(b, s->heading);
            ax_rep_printf(b, "</h%d>\n", s->level);
        }
        for (int j = 0; j < s->n_blocks; j++) {
            const ax_doc_block *k = &s->b[j];
            if (k->kind == AX_BLOCK_PARA) {
                ax_rep_puts(b, para[k->style]);
                ax_rep_html(b, k->text);
                ax_rep_puts(b, "</p>\n");
            } else if (k->kind == AX_BLOCK_TABLE) {
                table(d, k->table, b);
            } else {
                chart(k->chart, b);
            }
        }
    }
    ax_rep_puts(b, "</body></html>\n");
}
