#!/usr/bin/env python3
"""bench/bench_decode.c's KV-cached greedy decoding in tuned PyTorch (issue 14 item 6): the same
Llama-style GPT-2-124M shape (torch_model.py), B sequences starting from tokens 1000 + b, one
untimed step at position 0, then positions 1 .. P-1 timed, each step's argmax fed back; the
caches are preallocated [B, H, P, D] per layer (no allocation in the loop); fp32,
torch.inference_mode. Prints, in the form bench/peers/compare_torch.sh parses:

    torch_decode: B=32 positions=64 threads=2 tokens/s 290.0 step_ms 110.3 (BLAS_INFO=mkl)

Usage: python3 bench/peers/torch_decode.py [--threads 2] [--batch 32] [--positions 64]
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_model  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--positions", type=int, default=64)
    ap.add_argument("--check", action="store_true",
                    help="also check the cached decode against a full forward of the sequences")
    ap.add_argument("--layers", type=int, default=torch_model.SHAPE["layers"],
                    help="fewer layers for a quick check (not the benchmark's shape)")
    a = ap.parse_args()
    if a.batch < 1 or a.positions < 2:
        sys.exit("torch_decode: --batch >= 1 and --positions >= 2")
    torch = torch_model.setup(a.threads)
    torch_model.SHAPE["layers"] = a.layers
    torch.manual_seed(1)
    s = torch_model.SHAPE
    B, P, H, D = a.batch, a.positions, s["heads"], s["dim"] // s["heads"]
    model = torch_model.build(torch)(P).eval()
    caches = [(torch.zeros(B, H, P, D), torch.zeros(B, H, P, D)) for _ in range(s["layers"])]
    tok = torch.arange(1000, 1000 + B)
    seq = [tok]
    with torch.inference_mode():
        model.decode_step(tok, 0, caches)  # warm-up, as bench_decode
        t0 = time.perf_counter()
        for pos in range(1, P):
            logits = model.decode_step(tok, pos, caches)
            tok = logits.argmax(dim=-1)
            if a.check:
                seq.append(tok)
        dt = (time.perf_counter() - t0) / (P - 1)
        if a.check:  # positions 0 .. P-1 hold seq[0] (twice: the warm-up and pos 1 both see it)
            full = model(torch.stack([seq[0]] + seq[:-1], dim=1))[:, -1]
            err = (full - logits).abs().max().item()
            same = bool((full.argmax(dim=-1) == tok).all())
            print(f"torch_decode: check against a full forward: max |logit diff| {err:.2e}, "
                  f"argmax {'equal' if same else 'DIFFERENT'}")
            if err > 1e-3 or not same:
                sys.exit(1)
    print(f"torch_decode: B={B} positions={P} threads={a.threads} tokens/s {B / dt:.1f} "
          f"step_ms {1e3 * dt:.1f} ({torch_model.blas(torch)})", flush=True)


if __name__ == "__main__":
    main()
