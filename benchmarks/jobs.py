"""The jobs the benchmarks time: Python source run in a fresh process each (see harness.run_job),
bpecli's beside each peer's. A job reads the names the harness defines (CORPUS, OUT, SPECIAL,
GPT2_VOCAB, TOKENIZER, VOCAB), sets took (and `ended = finished()` at the end of its work, setup,
harness where it can) and ids."""

TRAIN_JOBS = {
    "bpecli": """
from bpecli import train
train([CORPUS], vocab_size=10000, special_tokens=[SPECIAL], workers=2).save(OUT)
""",
    "hf-tokenizers": """
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=10000, special_tokens=[SPECIAL], show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train([CORPUS], trainer)
tok.save(OUT + ".json")
""",
    "rustbpe": """
import rustbpe
from bpecli import PATTERNS
documents = (d for d in open(CORPUS, encoding="utf-8", newline="").read().split(SPECIAL) if d)
tok = rustbpe.Tokenizer()
tok.train_from_iterator(documents, vocab_size=10000, pattern=PATTERNS["gpt2"])  # no special token: 1 merge more
""",
}

ENCODE_JOBS = {
    "bpecli": """
from bpecli import Tokenizer
from bpecli.parallel.local import keep_freed_memory
keep_freed_memory()  # as `bpecli encode` does
tok = Tokenizer.load(GPT2_VOCAB)
text = open(CORPUS, encoding="utf-8", newline="").read()
t = time.perf_counter(); ids = tok.encode(text, allowed_special="all"); took = time.perf_counter() - t; ended = finished()
""",
    "tiktoken": """
import tiktoken
from bpecli.tokenizer import load
ours = load(GPT2_VOCAB)
enc = tiktoken.Encoding("gpt2", pat_str=ours.pattern, mergeable_ranks=ours.ranks, special_tokens=ours.special_tokens)
text = open(CORPUS, encoding="utf-8", newline="").read()
t = time.perf_counter(); ids = enc.encode(text, allowed_special="all"); took = time.perf_counter() - t; ended = finished()
""",
}

SHARD_JOB = """
import glob
import numpy as np
t0 = time.perf_counter()
from bpecli import Tokenizer
from bpecli.parallel.local import keep_freed_memory
from bpecli.shards import write_shards
keep_freed_memory()  # as `bpecli encode` does
tok = Tokenizer.load(TOKENIZER)
setup = time.perf_counter() - t0  # importing bpecli and loading the tokenizer (write_shards builds its tables)
t = time.perf_counter()
write_shards(tok, [CORPUS], OUT, workers={workers}, eot=tok.special_tokens[SPECIAL], shard_tokens=10_000_000)
took = time.perf_counter() - t; ended = finished()
ids = np.concatenate([np.load(f) for f in sorted(glob.glob(OUT + "/shard_*.npy"))])
"""

SHARD_JOBS = {
    "bpecli": SHARD_JOB.format(workers=2),
    "tiktoken-2-threads": """
import tiktoken
from bpecli.tokenizer import load
ours = load(TOKENIZER)
enc = tiktoken.Encoding("peer", pat_str=ours.pattern, mergeable_ranks=ours.ranks, special_tokens=ours.special_tokens)
eot = ours.special_tokens[SPECIAL]
t = time.perf_counter()
docs = [d for d in open(CORPUS, encoding="utf-8", newline="").read().split(SPECIAL) if d]
batch = enc.encode_ordinary_batch(docs, num_threads=2)
took = time.perf_counter() - t; ended = finished()
ids = [i for doc in batch for i in doc + [eot]]
""",
    "bpecli-1-worker": SHARD_JOB.format(workers=1),
}


COUNT_JOBS = {  # pre-tokenization and counting alone, in training's parts, to see it scale with workers
    f"bpecli-{workers}-worker": f"""
import os
from bpecli.inputs.parts import document_parts
from bpecli.training.counting import count_pretokens
from bpecli.pretokenize import PATTERNS
from bpecli.training.pipeline import counting_part_bytes
t = time.perf_counter()
parts = document_parts([(CORPUS, CORPUS)], separators=[SPECIAL], part_bytes=counting_part_bytes(os.path.getsize(CORPUS), 2))
count_pretokens(parts, pattern=PATTERNS["gpt2"], separators=[SPECIAL], workers={workers})
took = time.perf_counter() - t; ended = finished(); ids = []
"""
    for workers in (2, 1)
}

STARTUP_JOB = {  # the command's own wall time, measured around its process
    "bpecli-one-liner": """
import os, subprocess, sys
t = time.perf_counter()
subprocess.run([os.path.join(os.path.dirname(sys.executable), "bpecli"), "encode", "-t", GPT2_VOCAB],
               input=b"hello world", check=True, capture_output=True)
took = time.perf_counter() - t; ended = finished(); ids = []
""",
    "python-startup": """
import subprocess, sys
t = time.perf_counter(); subprocess.run([sys.executable, "-c", "pass"], check=True); took = time.perf_counter() - t; ended = finished(); ids = []
""",
}


DASK_CLUSTER = """
from distributed import LocalCluster
cluster = LocalCluster(n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None)
cluster.get_client().run(lambda: __import__("bpecli.shards"))  # workers import bpecli before the clock starts
SCHEDULER = cluster.scheduler_address
"""

DASK_JOBS = {  # the same work on the local pool and on a LocalCluster of as many worker processes
    "count": {"count-dask": DASK_CLUSTER + COUNT_JOBS["bpecli-2-worker"].replace("workers=2", "scheduler=SCHEDULER"),
              "count-local": COUNT_JOBS["bpecli-2-worker"]},
    "shards": {"shards-dask": DASK_CLUSTER + SHARD_JOB.format(workers="2, scheduler=SCHEDULER"),
               "shards-local": SHARD_JOB.format(workers=2)},
    # one worker: a core is left for the scheduler and the client, as on a real cluster
    "shards, 1 worker": {"shards-dask": DASK_CLUSTER.replace("n_workers=2", "n_workers=1")
                         + SHARD_JOB.format(workers="1, scheduler=SCHEDULER"),
                         "shards-local": SHARD_JOB.format(workers=1)},
}

MEMORY_JOBS = {
    "bpecli": """
from bpecli import train
t = time.perf_counter()
train([CORPUS], vocab_size=VOCAB, special_tokens=[SPECIAL], workers=2).save(OUT)
took = time.perf_counter() - t; ended = finished()
""",
    "rustbpe": """
import rustbpe
from bpecli import PATTERNS

def documents():  # streamed, as a careful user of train_from_iterator would
    carry = ""
    with open(CORPUS, encoding="utf-8", newline="") as f:
        while block := f.read(1 << 24):
            *whole, carry = (carry + block).split(SPECIAL)
            yield from (d for d in whole if d)
    if carry:
        yield carry

t = time.perf_counter()
rustbpe.Tokenizer().train_from_iterator(documents(), vocab_size=VOCAB, pattern=PATTERNS["gpt2"])
took = time.perf_counter() - t; ended = finished()
""",
}


MEMORY_JOBS["hf-tokenizers"] = """
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
t = time.perf_counter()
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=[SPECIAL], show_progress=False,
                              initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
tok.train([CORPUS], trainer)
tok.save(OUT + ".json")
took = time.perf_counter() - t; ended = finished()
"""

GIGATOKEN_TRAIN_JOBS = {
    "bpecli": MEMORY_JOBS["bpecli"],
    "gigatoken": """
import gigatoken
t = time.perf_counter()
vocab, merges = gigatoken.train_bpe(CORPUS, vocab_size=VOCAB, special_tokens=[SPECIAL])
took = time.perf_counter() - t; ended = finished()
""",
}
MEMORY_JOBS["gigatoken"] = GIGATOKEN_TRAIN_JOBS["gigatoken"]

GIGATOKEN_SHARD_JOB = r"""
_harness = time.perf_counter()
from bpecli.tokenizer import load
from bpecli.formats.hugging_face import write_tokenizer_json
from pathlib import Path
ours = load(TOKENIZER)
Path(OUT).mkdir(parents=True, exist_ok=True)
write_tokenizer_json(ours.vocab, Path(OUT) / "tokenizer.json")
# gigatoken accepts only the regexes it has a fast pre-tokenizer for, spelled as it knows them
import json
document = json.loads((Path(OUT) / "tokenizer.json").read_text())
known = {"gpt2": r"'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
         "cl100k": r"'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s+"}
from bpecli import PATTERNS
name = next(n for n, p in PATTERNS.items() if p == ours.pattern)
document["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = known[name]
(Path(OUT) / "tokenizer.json").write_text(json.dumps(document))
harness = time.perf_counter() - _harness  # writing gigatoken's tokenizer.json: not gigatoken's time
t0 = time.perf_counter()
import numpy as np  # the job's own: gigatoken returns awkward arrays, and the shard is written with numpy
import gigatoken
tok = gigatoken.Tokenizer(OUT + "/tokenizer.json")
setup = time.perf_counter() - t0  # importing it and numpy, loading the tokenizer and building its tables
eot = ours.special_tokens[SPECIAL]
t = time.perf_counter()
docs = tok.encode_files(gigatoken.TextFileSource([CORPUS], separator=SPECIAL))
flat = np.asarray(__import__("awkward").flatten(docs), dtype=np.uint32)
lengths = np.asarray(__import__("awkward").num(docs), dtype=np.int64)
ends = np.cumsum(lengths)
ids = np.insert(flat, ends, eot)
keep = np.repeat(lengths > 0, lengths + 1)  # empty documents are skipped, as bpecli does
ids = ids[keep].astype(np.uint16 if max(ours.decoder) < 65536 else np.uint32)
np.save(OUT + "/shard.npy", ids)
took = time.perf_counter() - t; ended = finished()
"""

GIGATOKEN_SHARD_JOBS = {"bpecli": SHARD_JOB.format(workers=2), "gigatoken": GIGATOKEN_SHARD_JOB}

QUICKTOK_SHARD_JOB = r"""
import os
import numpy as np
t0 = time.perf_counter()
import quicktok
enc = quicktok.get_encoding("cl100k_base")
setup = time.perf_counter() - t0
eot = 100257  # cl100k_base's <|endoftext|>
t = time.perf_counter()
with open(CORPUS, encoding="utf-8", newline="") as f:
    docs = [d for d in f.read().split(SPECIAL) if d]  # empty documents are skipped, as bpecli does
flat, offsets = enc.encode_batch(docs, 2, False)
os.makedirs(OUT, exist_ok=True)
flat = np.asarray(flat, dtype=np.uint32)
ids = np.insert(flat, np.asarray(offsets[1:], dtype=np.int64), eot)
np.save(OUT + "/shard.npy", ids)
took = time.perf_counter() - t; ended = finished()
"""

# The merge lists the trainer must keep giving: sha256(repr(merges))[:8] of train(..., special_tokens=[SPECIAL]).
KNOWN_MERGES = {("kernel-docs", 10_000): "05becf1f", ("largest", 32_000): "63746aac", ("kernel-docs", 200_000): "7f6faafc"}

HASH_JOB = """
import hashlib
from bpecli import train
merges = train([CORPUS], vocab_size=VOCAB, special_tokens=[SPECIAL], workers=2).trained_merges
print(hashlib.sha256(repr(list(merges)).encode()).hexdigest()[:8])
"""

