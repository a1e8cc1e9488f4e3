#!/usr/bin/env python3
"""Builds the Hugging Face model fixtures under tests/fixtures/hf/ (developer tool, not CI).

Tiny RANDOM Llama-family models (no downloads), saved by transformers, with the logits
transformers computes on fixed token ids, so CI checks `axmem model import` against the
reference without installing torch:

  DIR/config.json, DIR/model.safetensors (or shards + model.safetensors.index.json)
  DIR/ids.i32      int32 [B, T] token ids (little-endian)
  DIR/logits.f32   float32 [B, T, vocab] reference logits

Variants: tied + grouped-query attention (fp32), untied with full K/V heads (fp32, sharded),
MistralForCausalLM with GQA (bf16 weights; its logits come from the bf16 weights upcast to
fp32, which is what the import computes with), tied + GQA in fp16 (the same way).

Usage: pip install torch transformers safetensors
       scripts/make_hf_fixtures.py [OUT_DIR]            (default tests/fixtures/hf)
       scripts/make_hf_fixtures.py --check-export AXMEM  (import + export each fixture with the
           axmem binary and load the export with transformers: same logits)"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers

B, T = 2, 12


def build(kind, tied, kv, seed, V=300, hidden=64, layers=2):
    torch.manual_seed(seed)
    common = dict(vocab_size=V, hidden_size=hidden, intermediate_size=96, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=kv, max_position_embeddings=64,
                  rope_theta=5000.0 + seed, rms_norm_eps=1e-5, tie_word_embeddings=tied)
    if kind == 'mistral':
        cfg = transformers.MistralConfig(sliding_window=None, **common)
        model = transformers.MistralForCausalLM(cfg)
    else:
        cfg = transformers.LlamaConfig(attention_bias=False, mlp_bias=False, **common)
        model = transformers.LlamaForCausalLM(cfg)
    with torch.no_grad():  # norms away from 1 so a mapping mistake shows in the logits
        for name, p in model.named_parameters():
            if 'norm' in name:
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0, 0.15)
    return model.eval()


def ids_for(seed, V=300):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, V, (B, T))).long()


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits.float().numpy()


def save(out, name, model, ids, dtype, shard):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    if dtype in ('bf16', 'f16'):
        # round the weights to bf16 / fp16 but compute in fp32 (what the import does); casting
        # the whole module would round the rotary inv_freq buffer too
        half = torch.bfloat16 if dtype == 'bf16' else torch.float16
        with torch.no_grad():
            for p in model.parameters():
                p.copy_(p.to(half).float())
        ref = logits(model, ids)
        model = model.to(half)
    else:
        ref = logits(model, ids)
    model.save_pretrained(d, safe_serialization=True,
                          max_shard_size='200KB' if shard else '1GB')
    ids.numpy().astype('<i4').tofile(os.path.join(d, 'ids.i32'))
    ref.astype('<f4').tofile(os.path.join(d, 'logits.f32'))
    for junk in ('generation_config.json',):
        if os.path.exists(os.path.join(d, junk)):
            os.remove(os.path.join(d, junk))
    print(name, sorted(os.listdir(d)))


VARIANTS = [  # name, kind, tied, kv heads, dtype, sharded
    ('llama_tied_gqa', 'llama', True, 2, 'f32', False),
    ('llama_untied_sharded', 'llama', False, 4, 'f32', True),
    ('mistral_gqa_bf16', 'mistral', False, 1, 'bf16', False),
    ('llama_tied_f16', 'llama', True, 2, 'f16', False),
]
# the README walk-through's model directory: one small layer, tied, with a tokenizer.json
# (the byte-level BPE fixture of tests/fixtures/tokenizers, vocabulary 420)
WALK = ('llama_walkthrough', 'tests/fixtures/tokenizers/gpt2.json', 420)


def check_export(axmem, root):
    for i, (name, kind, *_rest) in enumerate(VARIANTS):
        V = 300
        src = os.path.join(root, name)
        with tempfile.TemporaryDirectory() as tmp:
            step = subprocess.run([axmem, 'model', 'import', '--hf', src, '--out',
                                   os.path.join(tmp, 'ck')], check=True, capture_output=True,
                                  text=True).stdout.strip()
            out = os.path.join(tmp, 'hf')
            subprocess.run([axmem, 'model', 'export', '--ckpt', step, '--out', out], check=True)
            model = transformers.AutoModelForCausalLM.from_pretrained(out, torch_dtype=torch.float32)
            ids = torch.from_numpy(np.fromfile(os.path.join(src, 'ids.i32'), '<i4').reshape(B, T)).long()
            ref = np.fromfile(os.path.join(src, 'logits.f32'), '<f4').reshape(B, T, V)
            got = logits(model, ids)
            err = np.abs(got - ref).max() / np.abs(ref).max()
            print(f'{name}: transformers on the export: max rel error {err:.2e}')
            assert err < 1e-5, name


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--check-export':
        check_export(sys.argv[2], 'tests/fixtures/hf')
        return
    out = sys.argv[1] if len(sys.argv) > 1 else 'tests/fixtures/hf'
    for i, (name, kind, tied, kv, dtype, shard) in enumerate(VARIANTS):
        save(out, name, build(kind, tied, kv, 100 + i), ids_for(200 + i), dtype, shard)
    name, tok, V = WALK
    save(out, name, build('llama', True, 4, 150, V=V, hidden=32, layers=1), ids_for(250, V),
         'f32', False)
    shutil.copy(tok, os.path.join(out, name, 'tokenizer.json'))


if __name__ == '__main__':
    main()
