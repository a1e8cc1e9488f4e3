#!/usr/bin/env bash
# GPT-NeoX and GPT-2 through the CLI (issue 13). First the exports of the fp32 NeoX (Pythia hub
# layout) and GPT-2 fixtures are read by an independent safetensors reader (python json +
# struct, not the C one): the architecture in config.json, every tensor F32 and contiguous,
# exactly the source's tensors but its buffers, with the source's values.
# Then the Pythia-style end to end ("How we will check it"): a tiny GPT-NeoX model from the
# Hugging Face fixtures (tests/fixtures/hf/pythia_walkthrough: GPTNeoXForCausalLM, parallel
# residual, rotary_pct 0.25, with the GPT-NeoX tokenizer fixture) is imported, fine-tuned with
# `train --init` on four documents (goldfish off) until it memorizes them, and `memscan probe`
# finds every one of them memorized (exact greedy suffix) while it found none before the
# fine-tune, and a control document the fine-tune never saw is not. The fine-tuned model is
# exported back as GPTNeoXForCausalLM and re-imported with identical probe results; the README's
# Pythia commands (import-megatron of the same documents, index, probe) find them too. Models
# axmem trains from scratch with --arch gpt2 / neox export as GPT-2 / GPT-NeoX and re-import
# with the same probe results. When python's transformers is installed it also loads the three
# exports and predicts every member's suffix from its prefix (skipped, and said so, without it).
# Usage: tests/cli/hf_arch.sh [path/to/axmem]   (a few seconds)
set -uo pipefail
cd "$(dirname "$0")/../.."
AX=$(realpath "${1:-build/bin/axmem}")
T=$(mktemp -d /tmp/axmem-hfarch.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
HF=tests/fixtures/hf/pythia_walkthrough
TOK=$HF/tokenizer.json
passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() {
  failed=$((failed + 1))
  echo "FAIL $1"
  sed 's/^/    /' "$T/err" 2>/dev/null | tail -n 15
}

for fx in neox_parallel:GPTNeoXForCausalLM gpt2_tied:GPT2LMHeadModel; do
  name=${fx%%:*} arch=${fx#*:}
  if "$AX" model import --hf tests/fixtures/hf/$name --out "$T/x-$name" >/dev/null 2>"$T/err" &&
    "$AX" model export --ckpt "$T/x-$name/step-000000" --out "$T/x-$name.hf" 2>"$T/err" &&
    python3 - "$T/x-$name.hf" tests/fixtures/hf/$name "$arch" >"$T/err" 2>&1 <<'PY'
import json, struct, sys
def read(path):
    b = open(path, "rb").read()
    (n,) = struct.unpack_from("<Q", b, 0)
    h = json.loads(b[8:8 + n]); h.pop("__metadata__", None)
    data, out, end = b[8 + n:], {}, 0
    for k, v in sorted(h.items(), key=lambda kv: kv[1]["data_offsets"][0]):
        s, e = v["data_offsets"]
        size = {"F32": 4, "BOOL": 1}[v["dtype"]]
        numel = 1
        for d in v["shape"]:
            numel *= d
        assert s == end and e - s == size * numel, k
        if v["dtype"] == "F32":
            out[k] = (v["shape"], struct.unpack_from("<%df" % numel, data, s))
        else:
            out[k] = (v["shape"], None)
        end = e
    assert end == len(data)
    return out
exp, src = read(sys.argv[1] + "/model.safetensors"), read(sys.argv[2] + "/model.safetensors")
cfg = json.load(open(sys.argv[1] + "/config.json"))
assert cfg["architectures"] == [sys.argv[3]], cfg
buffers = (".attention.bias", ".attention.masked_bias", ".inv_freq", ".attn.bias", ".attn.masked_bias")
want = {k for k in src if not k.endswith(buffers)}
assert set(exp) == want, set(exp) ^ want
for k, (shape, vals) in exp.items():
    assert (shape, vals) == src[k], k
print(len(exp), "tensors")
PY
  then ok "model export of $name: an independent reader finds $arch with the source's tensors"
  else bad "model export of $name: independent reader"; fi
done

# the members are the fixture's documents (also shipped as a Megatron dataset: document.*)
cp $HF/members.jsonl "$T/members.jsonl"
echo '{"text": "Ledger 9: walrus 404 amber chorus 77 indigo meadow 15 candle iron 62"}' >"$T/control.jsonl"

# per-document exact matches of a probe: "doc:exact ..." over every sample, sorted
probe() { # CKPT DATA OUT [more probe flags]
  local ck=$1 data=$2 out=$3
  shift 3
  "$AX" memscan probe --ckpt "$ck" --data "$data" --tokenizer $TOK --samples 8 --prefix 8 \
    --suffix 8 "$@" --out "$out.json" >/dev/null 2>>"$T/err" && python3 - "$out.samples.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
docs = {}
for r in rows:
    docs.setdefault(r["doc"], []).append(bool(r["exact"]))
print(" ".join("%d:%d/%d" % (d, sum(v), len(v)) for d, v in sorted(docs.items())))
PY
}
# "doc:k/n ..." -> every document's n samples exact (all) or none exact (none), N documents
count_is() { # all|none N SUMMARY
  python3 -c '
import sys
want, n, s = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
ks = [tuple(map(int, p.split(":")[1].split("/"))) for p in s]
ok = len(ks) == n and all((k == m) if want == "all" else (k == 0) for k, m in ks)
sys.exit(0 if ok else 1)' "$@"; }

: >"$T/err"
if "$AX" model import --hf $HF --out "$T/ck" >/dev/null 2>>"$T/err" &&
  "$AX" data encode --tokenizer $TOK --input "$T/members.jsonl" --out "$T/members.axd" >/dev/null 2>>"$T/err" &&
  "$AX" data encode --tokenizer $TOK --input "$T/control.jsonl" --out "$T/control.axd" >/dev/null 2>>"$T/err"; then
  ok "import the GPT-NeoX fixture, encode members and control with its tokenizer.json"
else
  bad "import / encode"
  echo "hf_arch: $passed passed, $failed failed"
  exit 1
fi

before=$(probe "$T/ck" "$T/members.axd" "$T/p0")
# doc packing, batch 4 = the 4 documents: every step sees all of them
"$AX" train --init "$T/ck" --data "$T/members.axd" --packing doc --seq-len 40 --batch 4 \
  --steps 80 --warmup 0 --lr 1e-2 --goldfish none --threads 1 --out "$T/ft" >/dev/null 2>>"$T/err" \
  && ok "train --init fine-tunes the imported GPT-NeoX model (goldfish off)" \
  || bad "train --init on the imported GPT-NeoX model"
after=$(probe "$T/ft" "$T/members.axd" "$T/p1")
ctrl=$(probe "$T/ft" "$T/control.axd" "$T/p2")
echo "     members before: [$before] after: [$after]; control after: [$ctrl]"
count_is none 4 "$before" && ok "probe: no member memorized before the fine-tune" \
  || bad "probe before the fine-tune: [$before]"
count_is all 4 "$after" && ok "probe: every member document memorized after the fine-tune" \
  || bad "probe after the fine-tune: [$after]"
count_is none 1 "$ctrl" && ok "probe: the control document is not memorized" \
  || bad "probe of the control document: [$ctrl]"

# the README's Pythia commands on the same documents as Pythia's data ships: a Megatron
# dataset (uint16, end-of-text 0) imported without re-tokenizing, indexed, probed with the index
# (--vocab-size: the tokenizer's 403, which --tokenizer must match; the model's 416 cover it)
if "$AX" data import-megatron --prefix $HF/document --vocab-size 403 --out "$T/pile.axd" >/dev/null 2>>"$T/err" &&
  "$AX" memscan index --data "$T/pile.axd" --n 8 --out "$T/pile.idx" >/dev/null 2>>"$T/err" &&
  pile=$(probe "$T/ft" "$T/pile.axd" "$T/p4" --index "$T/pile.idx") && count_is all 4 "$pile"; then
  ok "README Pythia commands: import-megatron + index + probe find the same documents memorized"
else
  bad "README Pythia commands on the Megatron copy of the documents: [${pile:-}]"
fi

# export as GPTNeoXForCausalLM, re-import: the same probe results
step=$(ls -d "$T"/ft/ckpt/step-* 2>/dev/null | tail -n 1)
if [ -n "$step" ] && "$AX" model export --ckpt "$step" --out "$T/exp" >/dev/null 2>>"$T/err" &&
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); sys.exit(0 if c["architectures"]==["GPTNeoXForCausalLM"] and c["use_parallel_residual"] and c["rotary_pct"]==0.25 else 1)' "$T/exp/config.json" 2>>"$T/err" &&
  "$AX" model import --hf "$T/exp" --out "$T/ck2" >/dev/null 2>>"$T/err" &&
  again=$(probe "$T/ck2" "$T/members.axd" "$T/p3") && [ "$again" = "$after" ]; then
  ok "export as GPTNeoXForCausalLM and re-import: the same probe results"
else
  bad "export / re-import of the fine-tuned model (${again:-})"
fi

# models axmem trains from scratch with --arch gpt2 / neox export as GPT2LMHeadModel /
# GPTNeoXForCausalLM: memorize the members, export, re-import: the same probe results. An HF
# directory does not say the run put end-of-text before each document (--packing doc), which
# the probe then prompts with, and GPT-2's learned positions are not shift-invariant, so the
# re-import gets one step at learning rate 0 under --packing doc (the weights unchanged) to be
# prompted as the original.
for a in gpt2:GPT2LMHeadModel neox:GPTNeoXForCausalLM; do
  arch=${a%%:*} hf=${a#*:}
  if "$AX" train --arch $arch --layers 1 --dim 32 --heads 2 --ffn 64 --data "$T/members.axd" \
      --packing doc --seq-len 40 --batch 4 --steps 150 --warmup 0 --lr 1e-2 --threads 1 \
      --out "$T/s-$arch" >/dev/null 2>>"$T/err" &&
    mem=$(probe "$T/s-$arch" "$T/members.axd" "$T/s-$arch-p") && count_is all 4 "$mem" &&
    step=$(ls -d "$T"/s-$arch/ckpt/step-* | tail -n 1) &&
    "$AX" model export --ckpt "$step" --out "$T/exp-$arch" >/dev/null 2>>"$T/err" &&
    python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["architectures"] != [sys.argv[2]])' \
      "$T/exp-$arch/config.json" $hf 2>>"$T/err" &&
    "$AX" model import --hf "$T/exp-$arch" --out "$T/s-$arch-ck2" >/dev/null 2>>"$T/err" &&
    "$AX" train --init "$T/s-$arch-ck2" --data "$T/members.axd" --packing doc --seq-len 40 \
      --batch 4 --steps 1 --warmup 0 --lr 0 --threads 1 --out "$T/s-$arch-rt" >/dev/null 2>>"$T/err" &&
    again=$(probe "$T/s-$arch-rt" "$T/members.axd" "$T/s-$arch-p2") && [ "$again" = "$mem" ]; then
    ok "train --arch $arch: memorizes, exports as $hf, re-imports with the same probe results"
  else
    bad "train --arch $arch -> export $hf -> re-import ([${mem:-}] vs [${again:-}])"
  fi
done

# transformers on the exports, when installed: after end-of-text 0 and each member's prefix,
# the most likely next tokens (teacher-forced: generate() would infer an attention mask from
# pad id 0 and shift GPT-2's positions) are its suffix, as axmem's probe found
python3 - "$T/members.jsonl" "$TOK" "$T/exp" "$T/exp-gpt2" "$T/exp-neox" >"$T/err" 2>&1 <<'PY'
import json, sys
try:
    import torch, transformers
    from tokenizers import Tokenizer
except ImportError as e:
    print("skip:", e)
    sys.exit(2)
tok = Tokenizer.from_file(sys.argv[2])
docs = [[0] + tok.encode(json.loads(l)["text"]).ids for l in open(sys.argv[1])]
bad = 0
for d in sys.argv[3:]:
    model = transformers.AutoModelForCausalLM.from_pretrained(d, dtype=torch.float32).eval()
    for ids in docs:
        with torch.no_grad():
            top = model(torch.tensor([ids[:17]])).logits[0].argmax(-1).tolist()
        if top[8:16] != ids[9:17]:
            print(d, "predicts", top[8:16], "not", ids[9:17])
            bad += 1
sys.exit(1 if bad else 0)
PY
case $? in
  0) ok "transformers loads the three exports (NeoX fine-tuned, GPT-2 and NeoX trained) and predicts every member's suffix" ;;
  2) echo "skip transformers check of the exports ($(tail -n 1 "$T/err"))" ;;
  *) bad "transformers on the exports" ;;
esac
echo "hf_arch: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
