"""bpecli: train byte-level BPE tokenizers and turn corpora into token ids and shards.

This is the public API of bpecli.
"""

from .errors import BpecliError as BpecliError
from .pretokenize import PATTERNS as PATTERNS
from .tokenizer import Tokenizer as Tokenizer
from .tokenizer import load as load
from .vocab import Template as Template

__version__ = "0.1.0"
__all__ = ["BpecliError", "PATTERNS", "Template", "Tokenizer", "load", "train", "train_bpe"]


def __getattr__(name: str):
    """train and train_bpe load the training package (and numpy) on first use, so that a shell
    one-liner that only encodes starts fast."""
    if name in ("train", "train_bpe"):
        from . import training

        return getattr(training, name)
    raise AttributeError(f"module 'bpecli' has no attribute {name!r}")
