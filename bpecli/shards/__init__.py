"""Shards: a corpus encoded into token files for training (.npy, llm.c's .bin, nanoGPT's .bin)
with a manifest, written atomically and resumably (run.py, writer.py, journal.py), read back
(formats.py) and verified (verification.py)."""

from .formats import read_shard as read_shard
from .api import ShardRun as ShardRun
from .api import write_shards as write_shards
from .verification import verify as verify
