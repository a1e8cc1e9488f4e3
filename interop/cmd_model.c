/* axmem model import|export: Hugging Face model directories <-> axmem checkpoints. */
#include "cli/commands.h"
#include "interop/hf_model.h"
#include "lib/core/cliargs.h"
#include "lib/core/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *TOP_HELP =
    "usage: axmem model SUBCOMMAND [flags]\n\n"
    "  import --hf DIR --out CKPT_DIR   Hugging Face LlamaForCausalLM, MistralForCausalLM,\n"
    "         [--kv-heads K]            GPTNeoXForCausalLM (Pythia) or GPT2LMHeadModel\n"
    "                                   (config.json's \"architectures\", else its\n"
    "                                   \"model_type\"; + model.safetensors or shards with\n"
    "                                   their index; fp32/fp16/bf16) -> CKPT_DIR/step-000000;\n"
    "                                   --kv-heads copies each K/V head of a grouped-query\n"
    "                                   model up to K heads (same function), for grids whose\n"
    "                                   Y divides K but not the model's K/V head count\n"
    "  export --ckpt CKPT --out DIR     axmem checkpoint -> config.json + fp32\n"
    "                                   model.safetensors, as the architecture its config\n"
    "                                   describes (Llama, GPT-NeoX or GPT-2). CKPT: a\n"
    "                                   training run or a checkpoint directory (import's\n"
    "                                   --out), whose newest complete step is exported, or\n"
    "                                   a step-NNNNNN directory\n";

/* --a X --b Y with both required, and optionally --opt Z (nopt NULL: none); 2 on a usage error
 * (printed), 1 on help, 0 when parsed */
static int two_flags(const char *sub, int argc, char **argv, const char *na, const char **a,
                     const char *nb, const char **b, const char *nopt, const char **opt) {
    *a = *b = NULL;
    if (opt) *opt = NULL;
    for (int i = 1; i < argc; i++) {
        const char *v;
        int r;
        if (ax_cli_is_help(argv[i])) {
            printf("%s", TOP_HELP);
            return 1;
        }
        if ((r = ax_cli_flag(argc, argv, &i, na, &v)) == 1)
            *a = v;
        else if (r == 0 && (r = ax_cli_flag(argc, argv, &i, nb, &v)) == 1)
            *b = v;
        else if (r == 0 && nopt && (r = ax_cli_flag(argc, argv, &i, nopt, &v)) == 1)
            *opt = v;
        if (r != 1) {
            fprintf(stderr, "axmem model %s: %s '%s'; see axmem model --help\n", sub,
                    r < 0 ? "missing value for" : "unknown argument", argv[i]);
            return 2;
        }
    }
    if (!*a || !*b || !**a || !**b) {
        fprintf(stderr, "axmem model %s: %s and %s are required; see axmem model --help\n", sub, na,
                nb);
        return 2;
    }
    return 0;
}

static int cmd_import(int argc, char **argv) {
    const char *hf, *out, *kv;
    int rc = two_flags("import", argc, argv, "--hf", &hf, "--out", &out, "--kv-heads", &kv);
    if (rc) return rc == 1 ? 0 : rc;
    long kv_heads = 0;
    if (kv) {
        char *end;
        kv_heads = strtol(kv, &end, 10);
        if (*end || end == kv || kv_heads < 1 || kv_heads > 4096) {
            fprintf(stderr, "axmem model import: --kv-heads '%s' is not a count in [1, 4096]\n",
                    kv);
            return 2;
        }
    }
    char step[4200];
    if (ax_hf_import(hf, out, (int)kv_heads, step, sizeof step) != AX_OK) {
        fprintf(stderr, "axmem model import: %s\n", ax_error_msg());
        return 1;
    }
    AX_INFO("imported %s into %s", hf, step);
    printf("%s\n", step);
    return 0;
}

static int cmd_export(int argc, char **argv) {
    const char *ck, *out;
    int rc = two_flags("export", argc, argv, "--ckpt", &ck, "--out", &out, NULL, NULL);
    if (rc) return rc == 1 ? 0 : rc;
    char step[4200];
    if (ax_hf_export(ck, out, step, sizeof step) != AX_OK) {
        fprintf(stderr, "axmem model export: %s\n", ax_error_msg());
        return 1;
    }
    AX_INFO("exported %s to %s", step, out);
    return 0;
}

int ax_cmd_model(int argc, char **argv) {
    static const ax_cli_sub subs[] = {{"import", cmd_import}, {"export", cmd_export}};
    return ax_cli_dispatch("model", TOP_HELP, subs, 2, argc, argv);
}
