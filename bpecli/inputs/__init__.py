"""Inputs: where they come from (sources.py), how they are cut into parts of whole documents
(parts.py), and the documents of a part (documents.py), the same for training and for shards."""
