"""Special tokens in text: the one rule for what ends a document, and splitting text at them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import regex

# The separator of the corpora people share (GPT-2's, tiktoken's, the CS336 fixtures').
DEFAULT_EOT = "<|endoftext|>"


def document_separators(special_tokens: Iterable[str]) -> list[str]:
    """What ends a document in text, for encoding and every report alike: each special token, and
    <|endoftext|> even where the tokenizer has no such token.

    Training splits only at the special tokens it is given and counts any other text, the literal
    <|endoftext|> included, as Hugging Face's BpeTrainer and the CS336 reference do: the merges
    stay theirs.

    Example: ["<s>"] -> ["<s>", "<|endoftext|>"]
    """
    return sorted(set(special_tokens) | {DEFAULT_EOT})


def end_of_document(special_tokens: Mapping[str, int]) -> str | None:
    """The special token that marks where a document ends, for readers that take one (transformers'
    eos_token): <|endoftext|> if the tokenizer has it, else its first special token.

    Example: {"<s>": 1000, "</s>": 1001} -> "<s>"
    """
    if DEFAULT_EOT in special_tokens:
        return DEFAULT_EOT
    return min(special_tokens, key=special_tokens.__getitem__, default=None)


def special_splitter(special_tokens: Iterable[str]) -> regex.Pattern | None:
    """A regex that captures any special token, longest first so that overlapping ones split right."""
    ordered = sorted(set(special_tokens), key=len, reverse=True)
    if not ordered:
        return None
    return regex.compile("(" + "|".join(regex.escape(t) for t in ordered) + ")")


def special_byte_splitter(special_tokens: Iterable[str]) -> re.Pattern | None:
    """special_splitter for UTF-8 bytes: it cuts them where the other cuts their text."""
    ordered = sorted({t.encode("utf-8") for t in special_tokens}, key=len, reverse=True)
    if not ordered:
        return None
    return re.compile(b"(" + b"|".join(map(re.escape, ordered)) + b")")


def split_documents(text: str, splitter: regex.Pattern | None) -> list[str]:
    """The text between special tokens (the tokens themselves dropped).

    Example: "a<|endoftext|>b" -> ["a", "b"]
    """
    if splitter is None:
        return [text]
    return splitter.split(text)[::2]
