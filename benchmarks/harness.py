"""Running the jobs: each in a fresh Python, interleaved with its peers, several times; the medians,
the ratios, the peak memory summed over a job's processes, and whether the ids agree."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time


def run_job(code: str, values: dict, sample_memory: bool = False) -> dict:
    """Run code in a new Python; wall time (or the job's own `took`), its result, and if asked
    the peak PSS in MiB (see _sample_memory)."""
    prelude = "import time, json, hashlib\n" + "".join(f"{k} = {v!r}\n" for k, v in values.items())
    # whole: from the process's launch to the end of its work (`ended = finished()`, which says so
    # on stdout: what the harness does after it to hash the ids is not in the job's peak memory),
    # less the harness's own preparation
    epilogue = (
        "\nif 'ended' not in dir(): finished()"
        "\nif 'ids' in dir(): print(json.dumps({'took': took, 'n': len(ids), 'setup': globals().get('setup', 0.0), "
        "'whole': ended - LAUNCHED - globals().get('harness', 0.0) if 'ended' in dir() else None, "
        "'sha': hashlib.sha256(__import__('numpy').asarray(ids, dtype='<i8').tobytes()).hexdigest()}))\n"
    )
    start = time.perf_counter()
    prelude += f"LAUNCHED = {time.time()!r}\ndef finished():\n    print({ENDED!r}, flush=True)\n    return time.time()\n"
    proc = subprocess.Popen([sys.executable, "-c", prelude + code + epilogue], stdout=subprocess.PIPE, text=True)
    peak = [0]
    ended = threading.Event()
    sampler = threading.Thread(target=_sample_memory, args=(proc, peak, ended), daemon=True)
    if sample_memory:
        sampler.start()
    lines = []
    for line in proc.stdout:
        if line.rstrip("\n").endswith(ENDED):  # (after any output of the job's own without a newline)
            ended.set()
        else:
            lines.append(line)
    out = "".join(lines)
    proc.wait()
    if sample_memory:
        sampler.join()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark job failed with status {proc.returncode}")
    lines = [line for line in out.splitlines() if line.startswith("{")]  # peers may print too
    result = json.loads(lines[-1]) if lines else {}
    return {"seconds": result.get("took", wall), "peak_mib": peak[0] / 2**20, **result}


# The line a job prints when its work is done (before the harness's own hashing of its ids)
ENDED = "bpecli-benchmark-job-ended"


def _sample_memory(proc: subprocess.Popen, peak: list, ended: threading.Event) -> None:
    """The largest sum of PSS (each shared page split among the processes sharing it, so forked
    workers are not counted twice) over proc and its descendants, every 50 ms until its work
    has ended."""
    while proc.poll() is None and not ended.is_set():
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



def compare(jobs: dict[str, str], values: dict, repeat: int, size: int, *, baseline: str | None = None) -> None:
    """Run each job repeat times, interleaved, and print the medians and ratios (size bytes of
    input make the MB/s); baseline: a checkout of bpecli whose "bpecli" job runs beside this one's."""
    if baseline and "bpecli" in jobs:  # the baseline right after this code, as a peer
        ours = {"bpecli": jobs["bpecli"], "baseline": f"import sys; sys.path.insert(0, {baseline!r})\n" + jobs["bpecli"]}
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
        same = len(set().union(*shas.values())) == 1
        print("ids identical:", same)
        if not same:  # which job gave other ids than the first
            print("  other ids than " + ours + ":", ", ".join(name for name, s in shas.items() if s != shas[ours]))

