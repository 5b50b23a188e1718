"""bpecli: train byte-level BPE tokenizers and turn corpora into token ids and shards.

This is the public API of bpecli.
"""

from .errors import BpecliError as BpecliError
from .files import load as load
from .pretokenize import PATTERNS as PATTERNS
from .tokenizer import Tokenizer as Tokenizer
from .trainer import train as train
from .trainer import train_bpe as train_bpe

__version__ = "0.1.0"
