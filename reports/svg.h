/* A document's charts as inline SVG (render_html.c draws the title and legend around them in
 * HTML, so text stays readable at any width). No scripts, a fixed palette. */
#pragma once
#include "reports/buf.h"
#include "reports/doc.h"

void ax_svg_chart(ax_rep_buf *b, const ax_doc_chart *c);
/* the i-th series colour (the legend's swatches match it) */
const char *ax_svg_color(int i);
