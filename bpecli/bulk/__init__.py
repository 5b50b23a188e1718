"""The numpy bulk engine: pieces packed two uint64 each (packing.py), a vocabulary's lookup tables
(tables.py), BPE of many pieces in numpy rounds (merge.py), and the encoder that puts them
together for many documents at once (engine.py). The regex path (encoding/text.py) hands it long
texts and many documents."""

from .engine import BulkEncoder as BulkEncoder
from .engine import join_encoded as join_encoded
from .merge import encode_piece as encode_piece
from .tables import VocabTables as VocabTables
