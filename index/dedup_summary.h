/* The summary of `data dedup` (index/dedup_run.h): the span previews and the JSON file. */
#pragma once
#include "data/axd.h"
#include "data/tokenizer.h"
#include "index/dedup_run.h"

/* Fills each span's preview: its text decoded by tok, else its token ids. */
ax_status ax_dedup_previews(const ax_axd_t *ds, const ax_tokenizer_t *tok, ax_dedup_result *r);
/* Writes r->summary (temporary + rename, mode 0600: it quotes training text): the settings,
 * tokens and documents before, after and removed, and the spans with their text (first
 * AX_DEDUP_TEXT_TOKENS tokens, decoded by tok) or ids (first AX_DEDUP_ID_TOKENS). */
#define AX_DEDUP_TEXT_TOKENS 1000
#define AX_DEDUP_ID_TOKENS 64
ax_status ax_dedup_write_summary(const ax_dedup_opts *o, const ax_axd_t *ds,
                                 const ax_tokenizer_t *tok, const ax_dedup_result *r);
