/* libFuzzer target: config files (lib/core/config.c: "name = value" lines or a JSON object) and,
 * when the input starts with 'A', the same table's argv parser (arguments split at NUL). */
#include "fuzz_util.h"
#include "lib/core/config.h"

typedef struct {
    int64_t steps, seed;
    double lr;
    char out[AX_CFG_STR_MAX];
    int fast;
    ax_cfg_strlist inputs, pos;
} cfg;

static const ax_cfg_entry entries[] = {
    {"steps", AX_CFG_INT, offsetof(cfg, steps), "100", 1, 1e12, "steps"},
    {"seed", AX_CFG_INT, offsetof(cfg, seed), "0", 1, 0, "seed"},
    {"lr", AX_CFG_FLOAT, offsetof(cfg, lr), "3e-4", 0, 1, "lr"},
    {"out", AX_CFG_STR, offsetof(cfg, out), "runs/x", 1, 0, "out"},
    {"fast", AX_CFG_BOOL, offsetof(cfg, fast), "false", 1, 0, "fast"},
    {"input", AX_CFG_STRLIST, offsetof(cfg, inputs), "", 1, 0, "inputs"},
};
static const ax_cfg_positional pos = {"TEXT", offsetof(cfg, pos), 1, 0, "text"};
static const ax_cfg_table table = {"axmem fuzz [flags]", "fuzz", entries, 6, &pos};
static char path[512];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    if (fz_seed_dir()) {
        static const char lines[] = "# a comment\nsteps = 1e3\nlr = 0.001 # trailing\n"
                                    "out = \"a b\"\nfast = yes\ninput = x.txt\ninput = y.txt\n";
        static const char object[] = "{\"steps\": 7, \"lr\": 0.5, \"out\": \"o\", \"fast\": "
                                     "false, \"input\": [\"a\", \"b\"], \"seed\": -3}";
        static const char args[] = "A--steps\0"
                                   "12\0--lr=.5\0--no-fast\0--input\0a\0b\0--\0--text";
        fz_write_seed("lines.cfg", lines, sizeof lines - 1);
        fz_write_seed("object.json", object, sizeof object - 1);
        fz_write_seed("argv.bin", args, sizeof args - 1);
        exit(0);
    }
    fz_init("config");
    fz_path(path, sizeof path, "fuzz.cfg");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cfg c;
    if (ax_cfg_set_defaults(&table, &c) != AX_OK) abort();
    ax_error_clear();
    if (size > 0 && data[0] == 'A') { /* argv mode: at most 64 arguments */
        char *buf = malloc(size + 1), *argv[66] = {"fuzz"};
        memcpy(buf, data + 1, size - 1);
        buf[size - 1] = 0;
        int argc = 1;
        for (size_t i = 0; i < size - 1 && argc < 65; argc++) {
            argv[argc] = buf + i;
            i += strlen(buf + i) + 1;
        }
        int help = 0;
        uint8_t was_set[6];
        fz_note("argv", ax_cfg_parse_argv(&table, &c, argc, argv, was_set, &help));
        free(buf);
    } else {
        fz_write(path, data, size);
        uint8_t was_set[6] = {0};
        fz_note("config file", ax_cfg_load_file(&table, &c, path, was_set));
    }
    if (c.lr < 0 || c.lr > 1 || c.steps < 1 || c.steps > 1000000000000LL) abort();
    if (strnlen(c.out, AX_CFG_STR_MAX) == AX_CFG_STR_MAX) abort();
    ax_cfg_free(&table, &c);
    ax_error_clear();
    return 0;
}
