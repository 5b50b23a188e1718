"""Pre-tokenizing: the patterns (patterns.py), and for each preset a vectorised splitter that finds
its pieces in UTF-8 bytes with numpy (gpt2.py, cl100k.py, o200k.py, over the character classes of
characters.py). The regex stays the reference, and the path for every other pattern."""

from .patterns import PATTERNS as PATTERNS
from .patterns import SAFE_CUT as SAFE_CUT
from .patterns import compiled as compiled
from .patterns import is_preset as is_preset
from .patterns import resolve_pattern as resolve_pattern
from .patterns import safe_blocks as safe_blocks
from .specials import DEFAULT_EOT as DEFAULT_EOT
from .specials import document_separators as document_separators
from .specials import end_of_document as end_of_document
from .specials import special_byte_splitter as special_byte_splitter
from .specials import special_splitter as special_splitter
from .specials import split_documents as split_documents
from .patterns import splitter as splitter
from .patterns import uncovered_error as uncovered_error


def vectorised_splitter(pattern: str):
    """The vectorised pre-tokenizer for a pattern (gpt2_piece_starts, cl100k_piece_starts,
    o200k_piece_starts), or None: the regex then does the work. (Imported here, when asked for:
    they need numpy, which `import bpecli` does not load.)"""
    if pattern == PATTERNS["gpt2"]:
        from .gpt2 import gpt2_piece_starts

        return gpt2_piece_starts
    if pattern == PATTERNS["cl100k"]:
        from .cl100k import cl100k_piece_starts

        return cl100k_piece_starts
    if pattern == PATTERNS["o200k"]:
        from .o200k import o200k_piece_starts

        return o200k_piece_starts
    return None
