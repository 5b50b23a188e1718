"""Training: the pipeline from a corpus to a tokenizer (pipeline.py), the counting of pre-tokens
in parallel (counting.py), and the merge loop (merges.py, over words.py and pairs.py)."""

from .merges import train_bpe as train_bpe
from .pipeline import train as train
