"""Tokenizer files, one module per format: GPT-2's vocab.json + merges.txt (gpt2.py), Hugging Face's
tokenizer.json (hugging_face.py), tiktoken's ranks (tiktoken.py), bpecli.json, and transformers'
config (transformers.py); a folder of them all (folder.py). They read and write a vocab.Vocab."""

from .folder import TOKENIZER_FILES as TOKENIZER_FILES
from .folder import check_writable as check_writable
from .folder import load as load
from .folder import save as save
