"""Tokenizer files: reading any format bpecli knows, and writing them all into a folder."""

from .folder import TOKENIZER_FILES as TOKENIZER_FILES
from .folder import check_writable as check_writable
from .folder import load as load
from .folder import save as save
