"""bpecli: train byte-level BPE tokenizers and turn corpora into token ids and shards.

This is the public API of bpecli.
"""

from .encoding.decoder import DecodeStream as DecodeStream
from .errors import BpecliError as BpecliError
from .pretokenize import PATTERNS as PATTERNS
from .tokenizer import Tokenizer as Tokenizer
from .tokenizer import load as load

__version__ = "0.1.0"
__all__ = ["BpecliError", "DecodeStream", "PATTERNS", "ShardRun", "Tokenizer", "load", "train", "train_bpe", "write_shards"]


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
