"""The model of bench/bench_train.c and bench/bench_decode.c in PyTorch, for the side-by-side
scripts torch_train.py and torch_decode.py (issue 14 item 6).

Llama-style GPT-2-124M shape, fp32: 12 layers, width 768, 12 heads (head dim 64), SwiGLU FFN
2048 (one up matrix holding gate and up, as axmem's), vocabulary 50257, tied embeddings,
RMSNorm (eps 1e-5), RoPE (theta 10000, rotate-half pairs i, i + D/2), no biases.

setup() applies the tuning the issue asks for before torch is imported: OMP_NUM_THREADS,
OMP_WAIT_POLICY=PASSIVE (a spinning pool fights axmem's or another process's for 2 cores) and
OPENBLAS_CORETYPE=SkylakeX where the CPU has AVX-512, Haswell (OpenBLAS's AVX2 + FMA kernels)
where it has only AVX2 (Debian's python3-torch on OpenBLAS otherwise fell back to its SSE3
kernel on the AVX-512 machines, and SkylakeX kernels on an AVX2 CPU would die on an illegal
instruction; harmless for the pip wheel, which uses MKL / oneDNN); then
torch.set_num_threads. blas() names the BLAS torch was built with.
"""
import os
import sys

SHAPE = dict(layers=12, dim=768, heads=12, ffn=2048, vocab=50257, theta=10000.0, eps=1e-5)


def openblas_coretype():
    """SkylakeX with AVX-512, Haswell with AVX2 + FMA, else None (OpenBLAS's own choice)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    except OSError:
        return None
    if "avx512f" in flags:
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


def setup(threads):
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    core = openblas_coretype()
    if core:
        os.environ.setdefault("OPENBLAS_CORETYPE", core)
    os.environ.setdefault("MKL_NUM_THREADS", str(threads))
    try:
        import torch
    except ImportError as e:
        sys.exit(f"torch is not installed ({e}): pip install torch, or apt install python3-torch")
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    return torch


def blas_library(torch):
    """The BLAS shared object this process has loaded after a matmul (from /proc/self/maps),
    e.g. /usr/lib/x86_64-linux-gnu/openblas-openmp/libblas.so.3; None when none is mapped (MKL
    linked in, or no /proc)."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    try:
        with open("/proc/self/maps") as f:
            libs = {l.split()[-1] for l in f if "blas" in l.rsplit("/", 1)[-1]}
    except OSError:
        return None
    return sorted(libs)[0] if libs else None


def reference_blas(torch):
    """True when Debian's python3-torch runs on the reference BLAS (libblas3's
    /usr/lib/x86_64-linux-gnu/blas/libblas.so.3): 50-100x slower than OpenBLAS, no peer at its
    best (seen 2026-12-02: 4.4 tokens/s against axmem's 317 at T = 64)."""
    lib = blas_library(torch) or ""
    return "/blas/" in lib and "openblas" not in lib


def blas(torch):
    """The BLAS line of torch.__config__.show(), e.g. 'BLAS_INFO=mkl', and the library loaded."""
    import re
    cfg = torch.__config__.show()
    m = re.search(r"BLAS_INFO=(\w+)", cfg)
    lib = blas_library(torch)
    return (f"BLAS_INFO={m.group(1) if m else 'unknown'}" + (", oneDNN" if "MKL-DNN" in cfg else "")
            + (f", {lib}" if lib else ""))


def build(torch):
    nn, F = torch.nn, torch.nn.functional
    s = SHAPE
    C, H, Fn = s["dim"], s["heads"], s["ffn"]
    D = C // H

    def attention(q, k, v, causal):
        """softmax(q k^T / sqrt(D)) v; PyTorch >= 2.0's fused kernel where it exists (Debian
        bookworm's python3-torch is 1.13, which has none: explicit matmuls there)."""
        if hasattr(F, "scaled_dot_product_attention"):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        s_ = (q @ k.transpose(-2, -1)) * (q.shape[-1] ** -0.5)
        if causal:
            T = q.shape[-2]
            keep = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
            s_ = s_.masked_fill(~keep, float("-inf"))
        return s_.softmax(dim=-1) @ v

    class RMSNorm(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(C))

        def forward(self, x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + s["eps"]) * self.weight

    def rope(x, cos, sin):  # x [B, H, T, D]; cos, sin [T, D/2]
        x1, x2 = x[..., : D // 2], x[..., D // 2:]
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.norm1, self.norm2 = RMSNorm(), RMSNorm()
            self.qkv = nn.Linear(C, 3 * C, bias=False)
            self.out = nn.Linear(C, C, bias=False)
            self.up = nn.Linear(C, 2 * Fn, bias=False)
            self.down = nn.Linear(Fn, C, bias=False)

        def attn_in(self, x, cos, sin):
            B, T, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).view(B, T, 3, H, D).permute(2, 0, 3, 1, 4)
            return rope(q, cos, sin), rope(k, cos, sin), v

        def mlp(self, x):
            g, u = self.up(self.norm2(x)).chunk(2, dim=-1)
            return x + self.down(F.silu(g) * u)

        def forward(self, x, cos, sin):
            B, T, _ = x.shape
            q, k, v = self.attn_in(x, cos, sin)
            y = attention(q, k, v, True)
            x = x + self.out(y.transpose(1, 2).reshape(B, T, C))
            return self.mlp(x)

        def decode(self, x, cos, sin, kc, vc, pos):
            """x [B, 1, C] at position pos; kc, vc [B, H, Tmax, D] caches, filled here."""
            B = x.shape[0]
            q, k, v = self.attn_in(x, cos, sin)
            kc[:, :, pos: pos + 1] = k
            vc[:, :, pos: pos + 1] = v
            y = attention(q, kc[:, :, : pos + 1], vc[:, :, : pos + 1], False)
            x = x + self.out(y.transpose(1, 2).reshape(B, 1, C))
            return self.mlp(x)

    class Model(nn.Module):
        def __init__(self, max_t):
            super().__init__()
            self.wte = nn.Embedding(s["vocab"], C)
            self.blocks = nn.ModuleList(Block() for _ in range(s["layers"]))
            self.normf = RMSNorm()
            inv = 1.0 / (s["theta"] ** (torch.arange(0, D // 2, dtype=torch.float64) * 2 / D))
            ang = torch.outer(torch.arange(max_t, dtype=torch.float64), inv)
            self.register_buffer("cos", ang.cos().float(), persistent=False)
            self.register_buffer("sin", ang.sin().float(), persistent=False)
            nn.init.normal_(self.wte.weight, std=0.02)
            for b in self.blocks:
                for lin in (b.qkv, b.out, b.up, b.down):
                    nn.init.normal_(lin.weight, std=0.02)

        def logits(self, x):
            return F.linear(self.normf(x), self.wte.weight)  # tied LM head

        def forward(self, idx):
            T = idx.shape[1]
            x = self.wte(idx)
            for b in self.blocks:
                x = b(x, self.cos[:T], self.sin[:T])
            return self.logits(x)

        def decode_step(self, tok, pos, caches):
            x = self.wte(tok)[:, None, :]
            cos, sin = self.cos[pos: pos + 1], self.sin[pos: pos + 1]
            for b, (kc, vc) in zip(self.blocks, caches):
                x = b.decode(x, cos, sin, kc, vc, pos)
            return self.logits(x)[:, 0]

    return Model


def n_params(model):
    return sum(p.numel() for p in model.parameters())
