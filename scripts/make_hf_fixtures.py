#!/usr/bin/env python3
"""Builds the Hugging Face model fixtures under tests/fixtures/hf/ (developer tool, not CI).

Tiny RANDOM models (no downloads) of each architecture axmem imports (LlamaForCausalLM,
MistralForCausalLM, GPTNeoXForCausalLM, GPT2LMHeadModel), saved by transformers, with the logits
transformers computes on fixed token ids, so CI checks `axmem model import` against the
reference without installing torch:

  DIR/config.json, DIR/model.safetensors (or shards + model.safetensors.index.json)
  DIR/ids.i32      int32 [B, T] token ids (little-endian)
  DIR/logits.f32   float32 [B, T, vocab] reference logits

Variants: tied + grouped-query attention (fp32), untied with full K/V heads (fp32, sharded),
MistralForCausalLM with GQA (bf16 weights; its logits come from the bf16 weights upcast to
fp32, which is what the import computes with), tied + GQA in fp16 (the same way);
GPT-NeoX (Pythia-like: parallel residual, rotary_pct 0.25, gelu, untied embed_out) in fp32, a
sequential-residual one with rotary_pct 0.5 sharded, one without attention biases in fp16;
GPT-2 (tied, gelu_new, learned positions, n_positions 32) in fp32, one with n_inner and exact
gelu in bf16; plus a 1-layer Pythia-like model with the GPT-NeoX tokenizer fixture for the
fine-tune-then-probe test.

Usage: pip install torch transformers safetensors
       scripts/make_hf_fixtures.py [OUT_DIR [NAME...]]  (default tests/fixtures/hf, all)
       scripts/make_hf_fixtures.py --check-export AXMEM  (import + export each fixture with the
           axmem binary and load the export with transformers: same logits)"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import torch
import transformers

B, T = 2, 12


def randomize(model):
    with torch.no_grad():  # norms away from 1, biases away from 0: a mapping mistake shows
        for name, p in model.named_parameters():
            if re.search(r'(norm|ln_[12f])\.weight$', name) or name.endswith('norm.weight'):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            else:
                p.normal_(0, 0.15)
    return model.eval()


def build(kind, tied, kv, seed, V=300, hidden=64, layers=2, **extra):
    torch.manual_seed(seed)
    if kind == 'neox':
        cfg = transformers.GPTNeoXConfig(
            vocab_size=V, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=kv,
            intermediate_size=extra.get('ffn', 64), max_position_embeddings=64,
            rotary_pct=extra.get('rotary_pct', 0.25), rotary_emb_base=5000.0 + seed,
            layer_norm_eps=1e-5, hidden_act=extra.get('act', 'gelu'), tie_word_embeddings=tied,
            use_parallel_residual=extra.get('parallel', True),
            attention_bias=extra.get('attention_bias', True), bos_token_id=0, eos_token_id=0)
        return randomize(transformers.GPTNeoXForCausalLM(cfg))
    if kind == 'gpt2':
        cfg = transformers.GPT2Config(
            vocab_size=V, n_embd=hidden, n_layer=layers, n_head=kv, n_positions=32,
            n_inner=extra.get('ffn'), activation_function=extra.get('act', 'gelu_new'),
            layer_norm_epsilon=1e-5, tie_word_embeddings=tied, bos_token_id=0, eos_token_id=0)
        return randomize(transformers.GPT2LMHeadModel(cfg))
    common = dict(vocab_size=V, hidden_size=hidden, intermediate_size=96, num_hidden_layers=layers,
                  num_attention_heads=4, num_key_value_heads=kv, max_position_embeddings=64,
                  rope_theta=5000.0 + seed, rms_norm_eps=1e-5, tie_word_embeddings=tied)
    if kind == 'mistral':
        cfg = transformers.MistralConfig(sliding_window=None, **common)
        model = transformers.MistralForCausalLM(cfg)
    else:
        cfg = transformers.LlamaConfig(attention_bias=extra.get('attention_bias', False),
                                       mlp_bias=extra.get('mlp_bias', False), **common)
        model = transformers.LlamaForCausalLM(cfg)
    return randomize(model)


def ids_for(seed, V=300):
    return torch.from_numpy(np.random.default_rng(seed).integers(0, V, (B, T))).long()


def logits(model, ids):
    with torch.no_grad():
        return model(input_ids=ids).logits.float().numpy()


def save(out, name, model, ids, dtype, shard):
    d = os.path.join(out, name)
    shutil.rmtree(d, ignore_errors=True)  # no stale shards of an earlier layout
    os.makedirs(d)
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
                          max_shard_size=shard if isinstance(shard, str) else '200KB' if shard else '1GB')
    ids.numpy().astype('<i4').tofile(os.path.join(d, 'ids.i32'))
    ref.astype('<f4').tofile(os.path.join(d, 'logits.f32'))
    for junk in ('generation_config.json',):
        if os.path.exists(os.path.join(d, junk)):
            os.remove(os.path.join(d, junk))
    print(name, sorted(os.listdir(d)))


VARIANTS = [  # name, kind, tied, kv heads (NeoX / GPT-2: heads), dtype, sharded (or shard size), extra
    ('llama_tied_gqa', 'llama', True, 2, 'f32', False, {}),
    ('llama_untied_sharded', 'llama', False, 4, 'f32', True, {}),
    ('mistral_gqa_bf16', 'mistral', False, 1, 'bf16', False, {}),
    ('llama_tied_f16', 'llama', True, 2, 'f16', False, {}),
    # GPT-NeoX: C 32, 2 heads of 16 (rotary 4 dims at 0.25, 8 at 0.5), F 64
    # hub=True: rewritten as the hub's Pythia / gpt2 files look (hub_style)
    ('neox_parallel', 'neox', False, 2, 'f32', False, dict(hidden=32, hub=True)),
    ('neox_sequential_sharded', 'neox', False, 2, 'f32', '60KB',
     dict(hidden=32, parallel=False, rotary_pct=0.5)),
    ('neox_noattnbias_f16', 'neox', False, 2, 'f16', False, dict(hidden=32, attention_bias=False)),
    # GPT-2: C 32, 4 heads of 8, F 128 (4C) or n_inner 48
    ('gpt2_tied', 'gpt2', True, 4, 'f32', False, dict(hidden=32)),
    ('gpt2_gelu_bf16', 'gpt2', True, 4, 'bf16', False,
     dict(hidden=32, ffn=48, act='gelu', hub=True)),
    # appended (seeds follow the list order): what axmem can train and export besides the
    # hub's settings: GPT-NeoX tied, tanh gelu, rotary over the whole head; GPT-2 untied
    ('neox_tied_tanh_fullrot', 'neox', True, 2, 'f32', False,
     dict(hidden=32, layers=1, act='gelu_new', rotary_pct=1.0)),
    ('gpt2_untied', 'gpt2', False, 4, 'f32', False, dict(hidden=32, layers=1, ffn=64)),
    # Llama with attention and MLP biases (the engine's biases), grouped-query
    ('llama_bias_gqa', 'llama', False, 2, 'f32', False,
     dict(hidden=32, layers=1, attention_bias=True, mlp_bias=True)),
]
# the README walk-through's model directory: one small layer, tied, with a tokenizer.json
# (the byte-level BPE fixture of tests/fixtures/tokenizers, vocabulary 420)
WALK = ('llama_walkthrough', 'tests/fixtures/tokenizers/gpt2.json', 420)
# the Pythia-style fine-tune-then-probe test's model: 1 layer, the GPT-NeoX tokenizer fixture
# (403 ids), vocabulary padded to 416 as Pythia pads its own; with the documents it is
# fine-tuned on as text (members.jsonl) and as Pythia's training data ships, a Megatron
# dataset of the tokenizers library's ids, uint16, end-of-text 0 after each document
# (document.bin / .idx), so the test runs the README's Pythia commands
PYTHIA = ('pythia_walkthrough', 'tests/fixtures/tokenizers/neox.json', 416)
MEMBERS = ["Record %d: zebra %d quartz melody %d violet harbor %d lantern copper %d" %
           (i, i * 13, i * 7 + 3, i * 29 + 1, i * 5 + 11) for i in range(4)]


def pythia_data(d, tok_path):
    from tokenizers import Tokenizer
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from make_megatron_fixture import write_dataset
    tok = Tokenizer.from_file(tok_path)
    with open(os.path.join(d, 'members.jsonl'), 'w') as f:
        for text in MEMBERS:
            f.write(json.dumps({'text': text}) + '\n')
    docs = [[tok.encode(text, add_special_tokens=False).ids + [0]] for text in MEMBERS]
    write_dataset(os.path.join(d, 'document'), 8, docs)


def hub_style(d, kind):
    """Rewrites a saved fixture the way the hub's original files look, which transformers 5 no
    longer writes: Pythia's config keys (rotary_pct, rotary_emb_base, no rope_parameters) and
    the buffers old GPT-NeoX saves carry (causal mask as BOOL, masked_bias scalar, rotary
    inv_freq); GPT-2 as GPT2Model names it (no "transformer." prefix) with its attn.bias mask
    buffers. The import skips the buffers and reads both namings."""
    from safetensors.torch import load_file, save_file
    cfg_path, st_path = os.path.join(d, 'config.json'), os.path.join(d, 'model.safetensors')
    cfg, ts = json.load(open(cfg_path)), load_file(st_path)
    n_pos = cfg.get('max_position_embeddings', cfg.get('n_positions'))
    mask = torch.tril(torch.ones(n_pos, n_pos, dtype=torch.bool)).view(1, 1, n_pos, n_pos)
    if kind == 'neox':
        rp = cfg.pop('rope_parameters')
        cfg['rotary_pct'], cfg['rotary_emb_base'] = rp['partial_rotary_factor'], rp['rope_theta']
        D = cfg['hidden_size'] // cfg['num_attention_heads']
        rd = int(D * cfg['rotary_pct'])
        for l in range(cfg['num_hidden_layers']):
            pre = f'gpt_neox.layers.{l}.attention.'
            ts[pre + 'bias'] = mask.clone()
            ts[pre + 'masked_bias'] = torch.tensor(-1e9)
            ts[pre + 'rotary_emb.inv_freq'] = 1.0 / (
                cfg['rotary_emb_base'] ** (torch.arange(0, rd, 2).float() / rd))
    else:
        ts = {k[len('transformer.'):] if k.startswith('transformer.') else k: v
              for k, v in ts.items()}
        for l in range(cfg['n_layer']):
            ts[f'h.{l}.attn.bias'] = mask.float()
            ts[f'h.{l}.attn.masked_bias'] = torch.tensor(-1e4)
    save_file(ts, st_path, metadata={'format': 'pt'})
    json.dump(cfg, open(cfg_path, 'w'), indent=2, sort_keys=True)


def check_export(axmem, root):
    names = [v[0] for v in VARIANTS] + [WALK[0], PYTHIA[0]]
    for name in names:
        src = os.path.join(root, name)
        V = json.load(open(os.path.join(src, 'config.json')))['vocab_size']
        with tempfile.TemporaryDirectory() as tmp:
            step = subprocess.run([axmem, 'model', 'import', '--hf', src, '--out',
                                   os.path.join(tmp, 'ck')], check=True, capture_output=True,
                                  text=True).stdout.strip()
            out = os.path.join(tmp, 'hf')
            subprocess.run([axmem, 'model', 'export', '--ckpt', step, '--out', out], check=True)
            model = transformers.AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32)
            want = json.load(open(os.path.join(src, 'config.json')))['architectures']
            want = ['LlamaForCausalLM' if a == 'MistralForCausalLM' else a for a in want]
            assert model.config.architectures == want, (name, model.config.architectures)
            ids = torch.from_numpy(np.fromfile(os.path.join(src, 'ids.i32'), '<i4').reshape(B, T)).long()
            ref = np.fromfile(os.path.join(src, 'logits.f32'), '<f4').reshape(B, T, V)
            got = logits(model.eval(), ids)
            err = np.abs(got - ref).max() / np.abs(ref).max()
            print(f'{name}: {want[0]}: transformers on the export: max rel error {err:.2e}')
            assert err < 1e-4, name


def main():
    if len(sys.argv) == 3 and sys.argv[1] == '--check-export':
        check_export(sys.argv[2], 'tests/fixtures/hf')
        return
    out = sys.argv[1] if len(sys.argv) > 1 else 'tests/fixtures/hf'
    only = sys.argv[2:]  # names to (re)build; default all
    for i, (name, kind, tied, kv, dtype, shard, extra) in enumerate(VARIANTS):
        if not only or name in only:
            hub = extra.pop('hub', False)
            save(out, name, build(kind, tied, kv, 100 + i, **extra), ids_for(200 + i), dtype,
                 shard)
            if hub:
                hub_style(os.path.join(out, name), kind)
    name, tok, V = WALK
    if not only or name in only:
        save(out, name, build('llama', True, 4, 150, V=V, hidden=32, layers=1), ids_for(250, V),
             'f32', False)
        shutil.copy(tok, os.path.join(out, name, 'tokenizer.json'))
    name, tok, V = PYTHIA
    if not only or name in only:
        save(out, name, build('neox', False, 2, 160, V=V, hidden=32, layers=1), ids_for(260, V),
             'f32', False)
        shutil.copy(tok, os.path.join(out, name, 'tokenizer.json'))
        pythia_data(os.path.join(out, name), tok)


if __name__ == '__main__':
    main()
