"""Benchmarks next to a peer in the same run, run by hand (never as tests): the commands.

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
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpora import (
    GPT2_VOCAB, REAL_SIZES, SPECIAL, cl100k_file, corpus_path, pathological_corpora, real_corpus, synthetic_shard_folder,
)
from harness import compare
from jobs import (
    COUNT_JOBS, DASK_JOBS, ENCODE_JOBS, GIGATOKEN_SHARD_JOBS, GIGATOKEN_TRAIN_JOBS, HASH_JOB, KNOWN_MERGES, MEMORY_JOBS,
    QUICKTOK_SHARD_JOB, SHARD_JOBS, STARTUP_JOB, TRAIN_JOBS,
)


def report_benchmark(repeat: int, tokens: int) -> None:
    """Median wall time of `bpecli inspect DIR --report` (ids alone, and with the tokenizer)."""
    folder = synthetic_shard_folder(tokens)
    command = str(Path(sys.executable).parent / "bpecli")
    gpt2_vocab = str(GPT2_VOCAB)
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
    baseline = args.baseline and str(Path(args.baseline).resolve())
    if args.what == "report":
        return report_benchmark(args.repeat, args.tokens)
    if args.what == "pathological":
        gpt2_vocab = str(GPT2_VOCAB)
        for name, path in pathological_corpora().items():
            print(f"{name}: {path}, {args.repeat} runs each")
            compare(ENCODE_JOBS, {"CORPUS": path, "GPT2_VOCAB": gpt2_vocab, "SPECIAL": SPECIAL}, args.repeat, os.path.getsize(path),
                    baseline=baseline)
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
    gpt2_vocab = str(GPT2_VOCAB)
    values = {"CORPUS": corpus, "SPECIAL": SPECIAL, "GPT2_VOCAB": gpt2_vocab,
              "TOKENIZER": cl100k_file() if args.what == "shards-cl100k" else gpt2_vocab, "VOCAB": args.vocab}
    print(f"corpus {corpus} ({os.path.getsize(corpus) / 1e6:.1f} MB), {args.repeat} runs each, {os.cpu_count()} cores")
    if args.what == "gigatoken":
        size = os.path.getsize(corpus)
        print(f"train, vocab {args.vocab:,}, 2 workers vs gigatoken.train_bpe")
        compare(GIGATOKEN_TRAIN_JOBS, values, args.repeat, size, baseline=baseline)
        for name, tokenizer in (("GPT-2", gpt2_vocab), ("cl100k_base", cl100k_file())):
            print(f"encode --out, {name}, 2 workers vs gigatoken encode_files + np.save")
            compare(GIGATOKEN_SHARD_JOBS, {**values, "TOKENIZER": tokenizer}, args.repeat, size, baseline=baseline)
        return
    if args.what == "encode-peers":
        size = os.path.getsize(corpus)
        print("encode --out, GPT-2, 2 workers vs gigatoken encode_files + np.save")
        compare(GIGATOKEN_SHARD_JOBS, {**values, "TOKENIZER": gpt2_vocab}, args.repeat, size, baseline=baseline)
        print("encode --out, cl100k_base, 2 workers vs gigatoken and quicktok encode_batch, 2 threads (+ np.save)")
        jobs = {**GIGATOKEN_SHARD_JOBS, "quicktok": QUICKTOK_SHARD_JOB}
        compare(jobs, {**values, "TOKENIZER": cl100k_file()}, args.repeat, size, baseline=baseline)
        return
    if args.what == "train-sizes":
        for vocab in map(int, args.vocabs.split(",")):
            print(f"train, vocab {vocab:,}, 2 workers, whole process")
            jobs = {"bpecli": MEMORY_JOBS["bpecli"], **{peer: MEMORY_JOBS[peer] for peer in args.peers.split(",")}}
            compare(jobs, {**values, "VOCAB": vocab}, args.repeat, os.path.getsize(corpus), baseline=baseline)
        return
    if args.what == "memory":
        jobs = {"bpecli": MEMORY_JOBS["bpecli"], **{peer: MEMORY_JOBS[peer] for peer in args.peers.split(",")}}
        compare(jobs, values, args.repeat, os.path.getsize(corpus), baseline=baseline)
        return
    if args.what == "dask":
        for name, jobs in DASK_JOBS.items():
            print(name)
            compare(jobs, values, args.repeat, os.path.getsize(corpus), baseline=baseline)
        return
    jobs = {"train": TRAIN_JOBS, "encode": ENCODE_JOBS, "shards": SHARD_JOBS, "shards-cl100k": SHARD_JOBS,
            "count": COUNT_JOBS, "startup": STARTUP_JOB, "memory": MEMORY_JOBS}[args.what]
    compare(jobs, values, args.repeat, os.path.getsize(corpus), baseline=baseline)


if __name__ == "__main__":
    main()
