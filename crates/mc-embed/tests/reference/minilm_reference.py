#!/usr/bin/env python3
"""Reference all-MiniLM-L6-v2 vectors computed from first principles, for the pinned test.

Neither torch nor sentence-transformers is available where this project is built, so this
script re-derives the sentence-transformers recipe in plain numpy (float64), independently
of candle: WordPiece tokenisation of lowercase ASCII text, BERT's embedding sum and six
post-norm encoder layers with exact (erf) GELU, mean pooling over all tokens (one sentence,
so no padding), then L2 normalisation. Inputs are cut to 256 word pieces including [CLS]
and [SEP], as the model's max_seq_length says.

Usage: python3 minilm_reference.py MODEL_DIR > reference_vectors.json   (needs numpy)
"""
import json
import math
import struct
import sys
import unicodedata

import numpy as np

MAX_TOKENS = 256
HEADS = 12

SENTENCES = [
    "How do I run the tests?",
    "Use cargo test to execute the test suite",
    "The weather in Paris is sunny",
    "hello world",
    "",
    " ".join(["word"] * 300),  # 302 pieces with [CLS]/[SEP]: truncation applies
]


def load_weights(path):
    with open(path, "rb") as f:
        header_len = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(header_len))
        data = f.read()
    weights = {}
    for name, meta in header.items():
        if name == "__metadata__" or meta["dtype"] != "F32":
            continue
        start, end = meta["data_offsets"]
        array = np.frombuffer(data[start:end], dtype="<f4").reshape(meta["shape"])
        weights[name] = array.astype(np.float64)
    return weights


def is_punctuation(ch):
    code = ord(ch)
    if 33 <= code <= 47 or 58 <= code <= 64 or 91 <= code <= 96 or 123 <= code <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


def basic_split(text):
    words = []
    for chunk in text.lower().split():
        current = ""
        for ch in chunk:
            if is_punctuation(ch):
                if current:
                    words.append(current)
                    current = ""
                words.append(ch)
            else:
                current += ch
        if current:
            words.append(current)
    return words


def word_pieces(word, vocab):
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = word[start:end] if start == 0 else "##" + word[start:end]
            if piece in vocab:
                pieces.append(vocab[piece])
                break
            end -= 1
        if end == start:
            return [vocab["[UNK]"]]
        start = end
    return pieces


def token_ids(text, vocab):
    ids = [p for word in basic_split(text) for p in word_pieces(word, vocab)]
    return [vocab["[CLS]"]] + ids[: MAX_TOKENS - 2] + [vocab["[SEP]"]]


def layer_norm(x, w, prefix, eps=1e-12):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * w[prefix + ".weight"] + w[prefix + ".bias"]


def linear(x, w, prefix):
    return x @ w[prefix + ".weight"].T + w[prefix + ".bias"]


ERF = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + ERF(x / math.sqrt(2.0)))


def embed(ids, w):
    n = len(ids)
    x = (
        w["embeddings.word_embeddings.weight"][ids]
        + w["embeddings.position_embeddings.weight"][:n]
        + w["embeddings.token_type_embeddings.weight"][0]
    )
    x = layer_norm(x, w, "embeddings.LayerNorm")
    width = x.shape[1]
    head = width // HEADS
    for layer in range(6):
        p = f"encoder.layer.{layer}."

        def heads(name):
            return linear(x, w, p + "attention.self." + name).reshape(n, HEADS, head).transpose(1, 0, 2)

        q, k, v = heads("query"), heads("key"), heads("value")
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(head)
        scores -= scores.max(-1, keepdims=True)
        attn = np.exp(scores)
        attn /= attn.sum(-1, keepdims=True)
        context = (attn @ v).transpose(1, 0, 2).reshape(n, width)
        x = layer_norm(linear(context, w, p + "attention.output.dense") + x, w, p + "attention.output.LayerNorm")
        hidden = gelu(linear(x, w, p + "intermediate.dense"))
        x = layer_norm(linear(hidden, w, p + "output.dense") + x, w, p + "output.LayerNorm")
    pooled = x.mean(0)
    return pooled / np.linalg.norm(pooled)


def main():
    model_dir = sys.argv[1]
    with open(f"{model_dir}/tokenizer.json") as f:
        vocab = json.load(f)["model"]["vocab"]
    w = load_weights(f"{model_dir}/model.safetensors")
    out = []
    for text in SENTENCES:
        ids = token_ids(text, vocab)
        vector = embed(ids, w)
        out.append({"text": text, "token_ids": ids, "vector": [round(float(v), 7) for v in vector]})
    json.dump({"model": "all-MiniLM-L6-v2", "sentences": out}, sys.stdout, indent=None)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
