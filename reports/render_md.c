/* A document as Markdown for pull requests and terminals: the tables and text, each chart
 * named (they are drawn in report.html). Strings are escaped so a cell stays one cell. */
#include "reports/doc.h"

static void cell(const ax_doc *d, const ax_doc_cell *c, ax_rep_buf *tmp, ax_rep_buf *b) {
    tmp->len = 0;
    ax_doc_cell_text(d, c, 1, tmp);
    ax_rep_md(b, tmp->len ? tmp->s : "");
}

static void table(const ax_doc *d, const ax_doc_table *t, ax_rep_buf *b) {
    ax_rep_buf tmp = {0};
    int vis[256], hidden, shown = ax_doc_shown(d, t, vis, &hidden);
    for (int pass = 0; pass < 2 && !t->facts; pass++) {
        ax_rep_puts(b, "|");
        for (int k = 0; k < t->n_cols; k++) {
            if (!vis[k]) continue;
            ax_rep_puts(b, pass ? "---" : " ");
            ax_rep_md(b, pass ? "" : t->cols[k].label);
            ax_rep_puts(b, pass ? "|" : " |");
        }
        ax_rep_puts(b, "\n");
    }
    for (int i = 0; i < shown; i++) {
        for (int k = 0; k < t->n_cols; k++) {
            if (!vis[k]) continue;
            ax_rep_puts(b, t->facts ? (k ? ": " : "- ") : k ? " " : "| ");
            cell(d, &t->cells[i * t->n_cols + k], &tmp, b);
            ax_rep_puts(b, t->facts ? "" : " |");
        }
        ax_rep_puts(b, "\n");
    }
    if (hidden) ax_rep_puts(b, "\nMemorized text not shown: axmem report --show-text shows it.\n");
    if (shown < t->n_rows)
        ax_rep_printf(b, "\nThe first %d of %d rows; report.json has all.\n", shown, t->n_rows);
    ax_rep_puts(b, "\n");
    ax_rep_buf_free(&tmp);
}

void ax_doc_md(const ax_doc *d, int n_sections, ax_rep_buf *b) {
    ax_rep_puts(b, "# ");
    ax_rep_md(b, d->title);
    ax_rep_puts(b, "\n\n**");
    ax_rep_md(b, d->conclusion);
    ax_rep_puts(b, d->conclusion[0] ? "** " : "");
    ax_rep_md(b, d->headline);
    ax_rep_puts(b, d->conclusion[0] ? "\n\n" : "**\n\n");
    for (int i = 0; i < d->n_sections && i < n_sections; i++) {
        const ax_doc_section *s = &d->sec[i];
        if (s->heading[0]) {
            ax_rep_puts(b, s->level > 2 ? "### " : "## ");
            ax_rep_md(b, s->heading);
            ax_rep_puts(b, "\n\n");
        }
        for (int j = 0; j < s->n_blocks; j++) {
            const ax_doc_block *k = &s->b[j];
            if (k->kind == AX_BLOCK_TABLE) {
                table(d, k->table, b);
                continue;
            }
            ax_rep_puts(b, k->kind == AX_BLOCK_CHART     ? "Chart (in report.html): "
                           : k->style == AX_PARA_WARNING ? "**Warning:** "
                                                         : "");
            ax_rep_md(b, k->kind == AX_BLOCK_CHART ? k->chart->title : k->text);
            ax_rep_puts(b, "\n\n");
        }
    }
}
