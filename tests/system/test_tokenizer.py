"""The tokenizer in a process without numpy."""

import pytest


@pytest.mark.system
def test_pre_tokens_up_to_numpy_piece_bytes_merge_without_numpy(gpt2_vocab):
    """A one-liner loads numpy only for a pre-token longer than NUMPY_PIECE, which merges in the
    bulk engine's linked list (the two merge alike: see tests/unit/encoding/test_reference.py)."""
    import subprocess
    import sys

    from bpecli.encoding.reference import NUMPY_PIECE

    code = ("import sys, bpecli; tok = bpecli.load(sys.argv[1]); n = int(sys.argv[2]); "
            "ids = tok.encode('x' * n); print('numpy' in sys.modules, len(ids))")
    for size, numpy_loaded in ((NUMPY_PIECE, "False"), (NUMPY_PIECE + 1, "True")):
        done = subprocess.run([sys.executable, "-c", code, str(gpt2_vocab), str(size)], capture_output=True, text=True,
                              check=True)
        assert done.stdout.split()[0] == numpy_loaded
