"""A tiny offline tokenizer for the VLM corpus: a ``tokenizers`` WordLevel model, no hub download.

The vocabulary is the special tokens first (their ids are fixed by position), then a few hundred
words and characters that prompts use, then filler tokens up to ``vocab_size`` so that the tokenizer
and the text config agree on the vocabulary size (the embedding table's row count).
"""

from __future__ import annotations

import string

WORDS = ["user", "assistant", "system", "what", "is", "in", "this", "image", "describe", "the", "a", "an", "of", "and", "to", "picture", "photo", "please", "answer", "question", "model", "turn", "start", "end", "you", "are", "helpful", "yes", "no", "it", "there", "on", "with", "for", "color", "shape"]


def build_tokenizer(vocab_size: int, specials: list[str], *, bos: str | None, eos: str, pad: str, unk: str,
                    extra: dict[str, str] | None = None):
    """A fast tokenizer whose first ids are ``specials`` in order; ``extra`` sets more named special tokens.

    Every entry of ``specials`` is an added special token, so a placeholder such as ``<image>`` is never split.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab: dict[str, int] = {}
    for tok in [*specials, *WORDS, *(w.capitalize() for w in WORDS), *(w.upper() for w in WORDS), *string.ascii_letters, *string.digits, *string.punctuation, "\n"]:
        vocab.setdefault(tok, len(vocab))
    if len(vocab) > vocab_size:
        raise ValueError(f"vocab_size {vocab_size} < {len(vocab)} base tokens")
    i = 0
    while len(vocab) < vocab_size:
        vocab.setdefault(f"tok{i}", len(vocab))
        i += 1
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token=unk))
    # Split on whitespace and punctuation but keep "\n" as a token: chat templates put it after turns.
    tk.pre_tokenizer = pre_tokenizers.Sequence([pre_tokenizers.Split("\n", behavior="isolated"),
                                                pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Punctuation()])
    tk.decoder = decoders.WordPiece(prefix="##")
    kw = dict(tokenizer_object=tk, eos_token=eos, pad_token=pad, unk_token=unk, **(extra or {}))
    if bos is not None:
        kw["bos_token"] = bos
    tok = PreTrainedTokenizerFast(**kw)
    tok.add_special_tokens({"additional_special_tokens": [s for s in specials if s not in (bos, eos, pad, unk)]})
    if len(tok) != vocab_size:
        raise ValueError(f"tokenizer has {len(tok)} tokens, expected {vocab_size}")
    return tok
