"""bpecli: train byte-level BPE tokenizers and turn corpora into token ids and shards.

This is the public API of bpecli:

- load(path_or_name) -> Tokenizer: a bpecli folder, vocab.json + merges.txt, tokenizer.json, a
  .tiktoken file, or an encoding tiktoken knows by name ("cl100k_base").
- Tokenizer: tiktoken's Encoding API (encode, decode, encode_batch, decode_bytes...), save(), and
  decode_stream() for ids that arrive one at a time (a DecodeStream).
- train(inputs, vocab_size=...) -> Tokenizer, and train_bpe(counts, vocab_size=...) -> merges.
- write_shards(tokenizer, inputs, out_dir, ...) -> ShardRun: a corpus into token shards, as
  `bpecli encode --out` writes them.
- Template: the special tokens a tokenizer puts around each text (Hugging Face's post-processors,
  `bpecli train --bos/--eos`), as Tokenizer.template gives it.
- PATTERNS: the pre-tokenizer regexes of GPT-2, cl100k and o200k, by name.
- BpecliError: what bpecli raises for bad input, files or options; its message says what to do.
"""

from .encoding.decoder import DecodeStream as DecodeStream
from .errors import BpecliError as BpecliError
from .pretokenize import PATTERNS as PATTERNS
from .tokenizer import Tokenizer as Tokenizer
from .tokenizer import load as load
from .vocab import Template as Template

__version__ = "0.1.0"
__all__ = ["BpecliError", "DecodeStream", "PATTERNS", "ShardRun", "Template", "Tokenizer", "load", "train", "train_bpe",
           "write_shards"]


def __getattr__(name: str):
    """train, train_bpe, write_shards and ShardRun load numpy on first use, so that a shell
    one-liner that only encodes starts fast."""
    if name in ("train", "train_bpe"):
        from . import training

        return getattr(training, name)
    if name in ("write_shards", "ShardRun"):
        from . import shards

        return getattr(shards, name)
    raise AttributeError(f"module 'bpecli' has no attribute {name!r}")
