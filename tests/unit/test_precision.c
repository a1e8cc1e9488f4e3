/* --precision (lib/backend/backend.h): resolving the word on a backend, device specs
 * "DEVICE[:PRECISION]" (how the model opens its context), and the CPU's refusal of bf16. */
#include <criterion/criterion.h>
#include <string.h>

#include "lib/backend/backend.h"
#include "lib/core/config.h"

Test(precision, resolve_on_cpu) {
    const ax_backend *cpu = ax_backend_cpu();
    ax_precision p = AX_PREC_BF16;
    cr_assert_eq(ax_precision_resolve(cpu, "auto", &p), AX_OK);
    cr_assert_eq(p, AX_PREC_FP32, "auto is fp32 on the CPU");
    p = AX_PREC_BF16;
    cr_assert_eq(ax_precision_resolve(cpu, NULL, &p), AX_OK);
    cr_assert_eq(p, AX_PREC_FP32);
    cr_assert_eq(ax_precision_resolve(cpu, "fp32", &p), AX_OK);
    cr_assert_eq(p, AX_PREC_FP32);
    ax_error_clear();
    cr_assert_eq(ax_precision_resolve(cpu, "bf16", &p), AX_ERR_UNSUPPORTED);
    cr_assert(strstr(ax_error_msg(),
                     "--precision bf16 needs --device cuda; the CPU backend computes in fp32"),
              "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_precision_resolve(cpu, "fp16", &p), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--precision fp16"), "%s", ax_error_msg());
    cr_assert_str_eq(ax_precision_name(AX_PREC_BF16), "bf16");
    cr_assert_str_eq(ax_precision_name(AX_PREC_FP32), "fp32");
}

Test(precision, contexts_from_device_specs) {
    ax_ctx *ctx = NULL;
    const char *fp32_specs[] = {NULL, "cpu", "cpu:auto", "cpu:fp32", "cpu:"};
    for (size_t i = 0; i < sizeof fp32_specs / sizeof fp32_specs[0]; i++) {
        cr_assert_eq(ax_ctx_open(fp32_specs[i], 64, &ctx), AX_OK, "%s", fp32_specs[i]);
        cr_assert_eq(ctx->be, ax_backend_cpu());
        cr_assert_eq(ctx->precision, AX_PREC_FP32);
        cr_assert_geq(ctx->scratch.cap, 64);
        ax_ctx_free(ctx);
    }
    ax_error_clear();
    cr_assert_neq(ax_ctx_open("cpu:bf16", 0, &ctx), AX_OK);
    cr_assert_null(ctx);
    cr_assert(strstr(ax_error_msg(), "the CPU backend computes in fp32"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_ctx_open("tpu:fp32", 0, &ctx), AX_ERR_ARG);
    cr_assert(strstr(ax_error_msg(), "--device tpu"), "%s", ax_error_msg());
    ax_error_clear();
    cr_assert_eq(ax_ctx_create_prec(ax_backend_cpu(), AX_PREC_BF16, 0, &ctx), AX_ERR_UNSUPPORTED);
    cr_assert_null(ctx);
    /* a CUDA build: "cuda" alone is auto = bf16 there (when a device exists) */
    ax_error_clear();
    if (ax_ctx_open("cuda", 0, &ctx) == AX_OK) {
        cr_assert_eq(ctx->precision, AX_PREC_BF16);
        ax_ctx_free(ctx);
        cr_assert_eq(ax_ctx_open("cuda:fp32", 0, &ctx), AX_OK);
        cr_assert_eq(ctx->precision, AX_PREC_FP32);
        ax_ctx_free(ctx);
    }
}

/* the flag plumbing: --device and --precision become the spec the model opens */
Test(precision, device_spec_from_flags) {
    struct {
        char device[AX_CFG_STR_MAX];
        char precision[AX_CFG_STR_MAX];
    } fl = {"cuda", "bf16"};
    cr_assert_str_eq(AX_CFG_DEVICE_SPEC(&fl), "cuda:bf16");
    fl.precision[0] = '\0';
    cr_assert_str_eq(AX_CFG_DEVICE_SPEC(&fl), "cuda:auto");
}
