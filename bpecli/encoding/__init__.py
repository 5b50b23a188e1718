"""Encoding and decoding for the Tokenizer: BPE of one pre-token in Python (reference.py), the
regex path from text to ids (text.py), and ids back to bytes and text (decoder.py)."""
