#!/usr/bin/env python3
"""Builds the Hugging Face tokenizer fixtures under tests/fixtures/tokenizers/ (run once;
the outputs are committed, so CI needs no Python packages).

Trains tiny BPE tokenizers with the `tokenizers` library (pip install tokenizers) on a
bundled text, no downloads:
  gpt2.json      byte-level BPE, ByteLevel pre-tokenizer (GPT-2 / GPT-NeoX regex)
  gpt2_prefix.json  the same model with add_prefix_space = true
  neox.json      GPT-NeoX / Pythia style: byte-level BPE behind an NFC normalizer, with
                 added (normalized, not special) tokens: a run of spaces, two more
  llama3.json    byte-level BPE behind a Split pre-tokenizer with the Llama-3 regex,
                 ignore_merges = true
  qwen2.json     the Qwen2 variant: NFC + Split with Llama-3's regex but single digits
  llama2.json    byte-fallback BPE with the Llama-2 (SentencePiece-converted) normalizer:
                 Prepend("▁") + Replace(" ", "▁"), <0xNN> byte tokens
  llama2_meta.json  the same model with the newer Metaspace pre-tokenizer instead
  gpt2_added_ids.json  gpt2.json with added tokens whose written ids are not the ones the
                 library gives them (it numbers added tokens itself on loading and only
                 warns): ids of other vocab entries or of another added token, a gap, an
                 in-vocab token claiming another entry's id, a repeat; its expected ids are
                 the library's encoding of that file as written
and writes, for each, NAME.expected: the library's ids for every test text (one line of
space-separated ids per text, texts in tests/fixtures/tokenizers/texts.txt separated by
lines holding only "\\f"), and the library's decode of those ids (NAME.decoded, same layout).
"""
import json
import os
import sys

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "tokenizers")

TRAIN = """The quick brown fox jumps over the lazy dog. It's what we've said, and they'll say it's
true: don't, won't, I'm, you'd. Numbers 12345 and 2026-11-30, 3.14159, 1,000,000 dollars.
    Indented code: def f(x):\n\treturn x * 2  # doubles
Ünïcödé wörds: café, naïve, façade, Zürich, São Paulo, résumé. Ελληνικά κείμενα. Русский текст.
中文文本，日本語のテキスト、한국어 텍스트. Emoji 🙂🚀 and ✓ marks. The the the THE tHe.
""" * 3 + "".join(f"word{i} number {i * 37} " for i in range(60))

TEXTS = [
    "Hello world! It's a test; we'll see, they're HERE and You'RE there, I'M sure.",
    "  leading spaces, trailing spaces   \n\n\tTabs\tand\r\nCRLF lines\n   \n",
    "digits 1234567 and 3.14 and 2026-11-30 ١٢٣ ½ Ⅻ",
    "中文文本，日本語のテキスト、한국어 텍스트. Emoji 🙂🚀👩‍👩‍👧 ✓ café naïve Zürich",
    "Special <|endoftext|> in the middle<|pad|>and at the end<|endoftext|>",
    "<s> llama specials </s> and <unk> plus <|begin_of_text|>x<|end_of_text|>",
    "Mixed\u00a0nbsp\u2003em-space\u3000ideographic and zero\u200bwidth",
    "",
    " ",
    "a",
    "\n",
    "'s 'S 'll 'LL 'Ve",
    "<|endoftext|><|endoftext|>x<s></s>\t<unk>",
    "combining: cafe\u0301 n\u0303 \u0928\u093f\u0930 skin \U0001F44D\U0001F3FD flags \U0001F1EF\U0001F1F5",
    "x''s ' ''  !!! ?!... ---->>> (a) [b] {c} \\ / 1,234.56 0x1F 12ab34 ab12cd",
    "\r\r\n\n  \t x\u00a0\u00a0y \u2028z\u0085w\x0b\x0cv",
    "NFC: cafe\u0301 A\u030a \u212b \u1100\u1161\u11a8 \uac00\u11a8 \u0344 a\u0328\u0301 a\u0301\u0328 "
    "\u0b47\u0b3e \u1e0b\u0323 q\u0307\u0323 \u00c5\u0301 \u0958 e\u0301\u0301 \u2126 x          y caf\u00e9! cafe\u0301! end<x",
    "a" * 300 + " " + "ab" * 150 + " " + "the " * 40 + "\u4e2d" * 50,
]

GPT2_RE = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3_RE = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
             r"|\s*[\r\n]+|\s+(?!\S)|\s+")


def bytelevel(specials, vocab_size=420):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([TRAIN], tr)
    return tok


def gpt2():
    return bytelevel(["<|endoftext|>", "<|pad|>"])


def neox():
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tr = trainers.BpeTrainer(vocab_size=400, special_tokens=["<|endoftext|>", "<|padding|>"],
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([TRAIN], tr)
    # normalized tokens are matched after the others, in NFC text: "end<" never wins over
    # "<|endoftext|>" although it starts first; "e\u0301!" is matched in its NFC form
    tok.add_tokens([AddedToken("        ", normalized=True), AddedToken("end<", normalized=True),
                    AddedToken("e\u0301!", normalized=True)])
    return tok


QWEN2_RE = LLAMA3_RE.replace(r"\p{N}{1,3}", r"\p{N}")


def llama3(qwen=False):
    tok = Tokenizer(models.BPE(ignore_merges=not qwen))
    if qwen:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2_RE if qwen else LLAMA3_RE), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"] if qwen else ["<|begin_of_text|>", "<|end_of_text|>"]
    tr = trainers.BpeTrainer(vocab_size=440, special_tokens=specials,
                             initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator([TRAIN], tr)
    return tok


def llama2(metaspace):
    # train on words with Metaspace splitting, then rebuild the vocabulary the way converted
    # SentencePiece models lay it out: <unk> <s> </s>, <0x00>..<0xFF>, then the pieces
    base = Tokenizer(models.BPE(unk_token="<unk>"))
    base.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tr = trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
                             limit_alphabet=60, show_progress=False)
    base.train_from_iterator([TRAIN], tr)
    m = json.loads(base.to_str())["model"]
    vocab = {"<unk>": 0, "<s>": 1, "</s>": 2}
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for piece, _ in sorted(m["vocab"].items(), key=lambda kv: kv[1]):
        if piece not in vocab:
            vocab[piece] = len(vocab)
    merges = [tuple(x.split(" ")) if isinstance(x, str) else tuple(x) for x in m["merges"]]
    tok = Tokenizer(models.BPE(vocab, merges, unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tok.add_special_tokens(["<unk>", "<s>", "</s>"])
    if metaspace:
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="first", split=False)
        tok.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="first", split=False)
    else:
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
        tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    return tok


def added_ids(base):
    """base's file with added tokens that claim ids the library does not give them; returns the
    file's text (written as is: re-serializing would renumber the tokens)."""
    j = json.loads(base.to_str())
    vocab = j["model"]["vocab"]
    assert "he" in vocab and "Ġthe" in vocab and vocab["<|endoftext|>"] == 0

    def tok(content, id, special, normalized=False):
        return {"id": id, "content": content, "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": normalized, "special": special}
    j["added_tokens"] += [
        tok("<s>", 5, True),                    # another vocab entry's id
        tok("</s>", 0, True),                   # <|endoftext|>'s id
        tok("<unk>", 999, False, True),         # a gap past the vocabulary, matched after normalizing
        tok("he", vocab["Ġthe"], False),         # in the vocab, claiming another entry's id
        tok("<s>", 7, True),                    # a repeat with yet another id
        tok("<|end_of_text|>", len(vocab) + 3, True),  # the id the library gives it
    ]
    return json.dumps(j, ensure_ascii=False)


def main():
    only = set(sys.argv[1:])  # fixture names to write (all when none)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "texts.txt"), "w", encoding="utf-8", newline="") as f:
        f.write("\n\f\n".join(TEXTS))
    g = gpt2()
    gp = Tokenizer.from_str(g.to_str())
    gp.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=True)
    texts = {"gpt2_added_ids": added_ids(g)}
    toks = {"gpt2": g, "gpt2_prefix": gp, "neox": neox, "llama3": llama3, "qwen2": lambda: llama3(True),
            "llama2": lambda: llama2(False), "llama2_meta": lambda: llama2(True),
            "gpt2_added_ids": lambda: Tokenizer.from_str(texts["gpt2_added_ids"])}
    for name, tok in toks.items():
        if only and name not in only:
            continue
        tok = tok() if callable(tok) else tok
        with open(os.path.join(OUT, name + ".json"), "w", encoding="utf-8") as f:
            f.write(texts[name] if name in texts else tok.to_str(pretty=False))
        ids = [tok.encode(t, add_special_tokens=False).ids for t in TEXTS]
        with open(os.path.join(OUT, name + ".expected"), "w") as f:
            f.write("".join(" ".join(map(str, x)) + "\n" for x in ids))
        with open(os.path.join(OUT, name + ".decoded"), "w", encoding="utf-8", newline="") as f:
            f.write("\n\f\n".join(tok.decode(x, skip_special_tokens=False) for x in ids))
        print(name, tok.get_vocab_size(), "tokens", sum(map(len, ids)), "ids", file=sys.stderr)


if __name__ == "__main__":
    main()
