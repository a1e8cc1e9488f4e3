#!/usr/bin/env python3
"""bench/bench_train.c's training step in tuned PyTorch (issue 14 item 6): the same Llama-style
GPT-2-124M shape (torch_model.py), B sequences of T tokens, forward + backward + AdamW
(betas 0.9/0.95, eps 1e-8, weight decay 0.1, gradient clipping at 1.0), fp32, eager mode.
Prints per T the median step and tokens/s, in the form bench/peers/compare_torch.sh parses:

    torch_train: B=4 T=64 threads=2 tokens/s 87.0 step_s 2.942 (median of 6; BLAS_INFO=mkl)

Usage: python3 bench/peers/torch_train.py [--threads 2] [--steps 6] [--batch 4] [--seq-len 64 256]
"""
import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--steps", type=int, default=6, help="timed steps (after one warm-up)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, nargs="+", default=[64, 256])
    ap.add_argument("--layers", type=int, default=torch_model.SHAPE["layers"],
                    help="fewer layers for a quick check (not the benchmark's shape)")
    a = ap.parse_args()
    torch = torch_model.setup(a.threads)
    torch_model.SHAPE["layers"] = a.layers
    torch.manual_seed(1)
    blas = torch_model.blas(torch)
    for T in a.seq_len:
        model = torch_model.build(torch)(T)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.95), eps=1e-8,
                                weight_decay=0.1, foreach=True)
        V = torch_model.SHAPE["vocab"]
        g = torch.Generator().manual_seed(7)
        inp = torch.randint(0, V, (a.batch, T), generator=g)
        tgt = torch.randint(0, V, (a.batch, T), generator=g)
        times = []
        for s in range(-1, a.steps):  # step -1 warms the allocator and the BLAS
            t0 = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(inp).view(-1, V), tgt.view(-1))
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if s >= 0:
                times.append(time.perf_counter() - t0)
        med = statistics.median(times)
        print(f"torch_train: B={a.batch} T={T} threads={a.threads} tokens/s "
              f"{a.batch * T / med:.1f} step_s {med:.3f} (median of {a.steps}; {blas}; "
              f"{torch_model.n_params(model) / 1e6:.1f}M params, loss {loss.item():.3f})",
              flush=True)


if __name__ == "__main__":
    main()
