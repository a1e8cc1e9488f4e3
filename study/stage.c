/* Stage records: hashing files and folders, writing and checking OUT/stages/NAME.json. */
#include "study/stage.h"
#include "lib/core/fsutil.h"
#include "lib/core/json.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static ax_status hash_file(const char *path, uint64_t *out) {
    FILE *f = NULL;
    AX_CHECK(ax_fopen_regular(path, NULL, &f));
    XXH3_state_t *s = XXH3_createState();
    char buf[1 << 16];
    size_t got;
    if (!s) {
        fclose(f);
        return ax_errorf(AX_ERR_NOMEM, "out of memory hashing %s", path);
    }
    XXH3_64bits_reset(s);
    while ((got = fread(buf, 1, sizeof buf, f)) > 0) XXH3_64bits_update(s, buf, got);
    ax_status st = ferror(f) ? ax_errorf(AX_ERR_IO, "cannot read %s", path) : AX_OK;
    *out = XXH3_64bits_digest(s);
    XXH3_freeState(s);
    fclose(f);
    return st;
}

static ax_status hash_dir(const char *path, uint64_t *out) {
    DIR *d = opendir(path);
    if (!d) return ax_errorf(AX_ERR_IO, "cannot read the folder %s", path);
    char **names = NULL;
    size_t n = 0, cap = 0;
    ax_status st = AX_OK;
    for (struct dirent *e; st == AX_OK && (e = readdir(d));) {
        if (e->d_name[0] == '.') continue; /* ., .., and temporaries (.NAME.tmp) */
        if (n == cap) {
            char **g = realloc(names, (cap = cap ? 2 * cap : 16) * sizeof *g);
            if (!g)
                st = ax_errorf(AX_ERR_NOMEM, "out of memory listing %s", path);
            else
                names = g;
        }
        if (st == AX_OK && !(names[n++] = strdup(e->d_name)))
            st = ax_errorf(AX_ERR_NOMEM, "out of memory listing %s", path);
    }
    closedir(d);
    if (st == AX_OK && n) qsort(names, n, sizeof *names, by_name);
    XXH3_state_t *s = XXH3_createState();
    if (!s && st == AX_OK) st = ax_errorf(AX_ERR_NOMEM, "out of memory hashing %s", path);
    if (s) XXH3_64bits_reset(s);
    for (size_t i = 0; i < n && st == AX_OK; i++) {
        char sub[4096];
        uint64_t h = 0;
        snprintf(sub, sizeof sub, "%s/%s", path, names[i]);
        st = ax_study_hash_path(sub, &h);
        XXH3_64bits_update(s, names[i], strlen(names[i]) + 1);
        XXH3_64bits_update(s, &h, sizeof h);
    }
    if (s) *out = XXH3_64bits_digest(s), XXH3_freeState(s);
    for (size_t i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

ax_status ax_study_hash_path(const char *path, uint64_t *out) {
    struct stat sb;
    if (stat(path, &sb)) return ax_errorf(AX_ERR_IO, "%s does not exist", path);
    return S_ISDIR(sb.st_mode) ? hash_dir(path, out) : hash_file(path, out);
}

static void record_path(const char *out, const char *name, char *p, size_t n) {
    snprintf(p, n, "%s/stages/%s.json", out, name);
}

int ax_study_stage_done(const char *out, const char *name, uint64_t settings,
                        const char *const *files, int n) {
    char p[4200], *text = NULL;
    size_t len = 0;
    ax_json *v = NULL;
    record_path(out, name, p, sizeof p);
    if (!ax_path_exists(p)) return 0;
    int done = ax_read_file_max(p, 1 << 20, &text, &len) == AX_OK &&
               ax_json_parse(text, len, p, &v) == AX_OK;
    uint64_t h = 0, want = 0;
    const ax_json *files_v = done ? ax_json_get(v, "files") : NULL;
    done = done && ax_json_get_hex64(v, "settings", p, &h) == AX_OK && h == settings && files_v &&
           files_v->type == AX_JSON_OBJ && (int)files_v->n == n;
    for (int i = 0; done && i < n; i++)
        done = ax_json_get_hex64(files_v, files[i], p, &want) == AX_OK &&
               ax_study_hash_path(files[i], &h) == AX_OK && h == want;
    ax_error_clear(); /* a stage not done is no error */
    ax_json_free(v);
    free(text);
    return done;
}

ax_status ax_study_stage_mark(const char *out, const char *name, uint64_t settings,
                              const char *const *files, int n) {
    char p[4200], hex[32];
    snprintf(p, sizeof p, "%s/stages", out);
    AX_CHECK(ax_mkdir_p(p));
    record_path(out, name, p, sizeof p);
    ax_jw w;
    ax_jw_init(&w);
    ax_jw_obj_begin(&w);
    ax_jw_key(&w, "stage"), ax_jw_str(&w, name);
    snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)settings);
    ax_jw_key(&w, "settings"), ax_jw_str(&w, hex);
    ax_jw_key(&w, "files");
    ax_jw_obj_begin(&w);
    ax_status st = AX_OK;
    for (int i = 0; i < n && st == AX_OK; i++) {
        uint64_t h = 0;
        st = ax_study_hash_path(files[i], &h);
        snprintf(hex, sizeof hex, "0x%016llx", (unsigned long long)h);
        ax_jw_key(&w, files[i]), ax_jw_str(&w, hex);
    }
    ax_jw_obj_end(&w);
    ax_jw_obj_end(&w);
    if (st == AX_OK)
        st = ax_jw_text(&w) ? ax_write_text_atomic(p, ax_jw_text(&w), 0)
                            : ax_errorf(AX_ERR_NOMEM, "out of memory writing %s", p);
    ax_jw_free(&w);
    return st;
}

void ax_study_stage_clear(const char *out, const char *name) {
    char p[4200];
    record_path(out, name, p, sizeof p);
    remove(p);
}
