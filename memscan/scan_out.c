#include "memscan/scan_out.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ax_ms_scan_header(ax_jw *w, const char *kind, const ax_ckpt_t *ck, const char *ds_path,
                       uint64_t ds_checksum, uint64_t docs, uint64_t tokens) {
    const ax_json *gf = ax_json_get(ax_ckpt_config(ck), "goldfish");
    char hex[32];
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)ds_checksum);
    ax_jw_obj_begin(w);
    ax_jw_key(w, "schema"), ax_jw_str(w, "axmem-scan");
    ax_jw_key(w, "version"), ax_jw_int(w, 1);
    ax_jw_key(w, "kind"), ax_jw_str(w, kind);
    ax_jw_key(w, "checkpoint");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, ax_ckpt_path(ck));
    ax_jw_key(w, "step"), ax_jw_int(w, ax_ckpt_step(ck));
    ax_jw_key(w, "goldfish"), ax_jw_str(w, gf && gf->type == AX_JSON_STR ? gf->str : "none");
    ax_jw_obj_end(w);
    ax_jw_key(w, "dataset");
    ax_jw_obj_begin(w);
    ax_jw_key(w, "path"), ax_jw_str(w, ds_path);
    ax_jw_key(w, "xxh3"), ax_jw_str(w, hex);
    ax_jw_key(w, "docs"), ax_jw_uint(w, docs);
    ax_jw_key(w, "tokens"), ax_jw_uint(w, tokens);
    ax_jw_obj_end(w);
}

void ax_ms_text_field(ax_jw *w, const char *key, const ax_tokenizer_t *tok, const int32_t *ids,
                      size_t n) {
    uint8_t *bytes = NULL;
    size_t len = 0;
    if (!tok || ax_tokenizer_decode(tok, ids, n, &bytes, &len) != AX_OK) return;
    ax_jw_key(w, key);
    ax_jw_strn(w, (const char *)bytes, len);
    free(bytes);
}

void ax_ms_samples_path(const char *explicit_path, const char *out, char *dst, size_t n) {
    if (explicit_path[0]) {
        snprintf(dst, n, "%s", explicit_path);
        return;
    }
    const char *slash = strrchr(out, '/');
    snprintf(dst, n, "%.*ssamples.jsonl", slash ? (int)(slash - out + 1) : 0, out);
}

ax_status ax_ms_write_json(const ax_jw *w, const char *flag, const char *path) {
    FILE *f = fopen(path, "w");
    int ok = f && ax_jw_text(w) && fprintf(f, "%s\n", ax_jw_text(w)) >= 0;
    if (f && fclose(f)) ok = 0;
    return ok ? AX_OK : ax_errorf(AX_ERR_IO, "cannot write %s %s", flag, path);
}
