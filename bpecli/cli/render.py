"""What the commands show: lines of ids, JSON on stdout, the summaries on stderr, progress (bars
on a terminal, plain lines in a log), and the tables and bar charts of the tokenizer, text, shard
and bench views."""

from __future__ import annotations

import json
import math
import re
import sys
import time
from pathlib import Path
from typing import Any

import typer

from ..vocab import render_token
from .options import Format
from .streams import Named, binary_stdout

# rich, tqdm, inputs, report and shards are imported inside functions: a one-line `bpecli encode`
# loads none of them but inputs, and --help, --version and shell completion none at all.


def progress(quiet: bool):
    """The progress bars a command asks the library for: tqdm's on a terminal, plain lines in a log
    (a CI job, stderr to a file), none with --quiet."""
    if quiet:
        return None
    if sys.stderr.isatty():
        from tqdm import tqdm

        class Bar(tqdm):
            """tqdm's bar, whose rate gives way to the work's own (set_postfix_str): encode's counts
            the bytes it read, as its summary does, where the bar counts through the files."""

            def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
                self.bar_format = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"
                super().set_postfix_str(s, refresh)

        return lambda description, total, unit: Bar(total=total, unit=unit, unit_scale=unit == "B", desc=description)
    return PlainProgress


class PlainProgress:
    """Progress as plain lines on stderr, one every EVERY seconds and one at the end: no carriage
    returns or escape codes for a log to trip over.

    Example: "bpecli encoding: 12.6 of 41.8 MB (30%), 5 s, 2.5 MB/s, 1,234,567 tokens/s"
    (its rate, or the work's own when it gives one, as encode does)
    """

    EVERY = 5.0

    def __init__(self, description: str, total: int, unit: str):
        self.description, self.total, self.unit, self.done, self.extra = description, total, unit, 0, ""
        self.clock = time.monotonic
        self.started = self.said = self.clock()

    def update(self, n: int) -> None:
        self.done += n
        if self.clock() - self.said >= self.EVERY:
            self._say()

    def set_postfix_str(self, text: str) -> None:
        self.extra = text

    def close(self) -> None:
        self._say()

    def abandon(self) -> None:
        """The work failed: its error is the last line, not a progress line."""

    def _say(self) -> None:
        self.said = self.clock()
        seconds = max(self.said - self.started, 1e-9)
        if self.unit == "B":
            scale, name = _byte_unit(self.total)
            amount = f"{self.done / scale:,.1f} of {self.total / scale:,.1f} {name}"
            scale, name = _byte_unit(self.done / seconds)
            rate = f"{self.done / scale / seconds:,.1f} {name}/s"
        else:
            amount, rate = f"{self.done:,} of {self.total:,} {self.unit}s", f"{self.done / seconds:,.0f} {self.unit}s/s"
        share = f" ({100 * self.done / self.total:.0f}%)" if self.total else ""
        try:
            print(f"bpecli {self.description}: {amount}{share}, {seconds:.0f} s, {self.extra or rate}", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr closed: progress is not worth failing for
            pass


def _byte_unit(amount: float) -> tuple[float, str]:
    """The unit an amount of bytes is shown in: MB, or kB under a MB."""
    return (1e6, "MB") if amount >= 1e6 else (1e3, "kB")


def ids_line(tok, ids: list[int], format: Format, name: str, line: int | None, key: str = "line") -> str:
    """The line plain encode writes for the ids of a text, a line or a record, in format."""
    if format is Format.count:
        return str(len(ids))
    if format is Format.tokens:
        return " ".join(tok.special_ids[i] if i in tok.special_ids else render_token(tok.decoder[i]) for i in ids)
    if format is Format.json:
        from ..inputs.sources import redact

        where = {"input": redact(name)} if line is None else {"input": redact(name), key: line}
        return json.dumps({**where, "ids": ids, "count": len(ids)})
    return " ".join(map(str, ids))


def counted(n: int, word: str) -> str:
    """A count and its noun, singular for one.

    Example: (1, "shard") -> "1 shard"; (1200, "token") -> "1,200 tokens"
    """
    return f"{n:,} {word}" + ("s" if n != 1 else "")


def note(message: str) -> None:
    """A note on stderr, said even with --quiet: something the user should change."""
    typer.echo(f"bpecli: note: {message}", err=True)


def library_notes() -> None:
    """The library's warnings (its "bpecli" logger: a Dask cluster without workers) as notes;
    logging is imported only by the commands that may need it."""
    import logging

    class Notes(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            note(record.getMessage())

    logger = logging.getLogger("bpecli")
    if not logger.handlers:  # (once a process: a command run again in it adds none)
        logger.addHandler(Notes())
        logger.propagate = False


def print_json(document) -> None:
    """document as indented JSON on stdout, non-ASCII text as it is."""
    stdout = binary_stdout()
    # a file name that is not UTF-8 (its bytes kept as lone surrogates) is written as JSON's \udcff
    # escape, which json.loads and os.fsencode turn back into the very name
    stdout.write((json.dumps(document, indent=1, ensure_ascii=False) + "\n").encode("utf-8", "backslashreplace"))
    stdout.flush()


def wrote(path: Path) -> None:
    """The line that says a report was written, and its size."""
    typer.echo(f"wrote {path} ({path.stat().st_size / 1e3:,.0f} kB)", err=True)


def train_summary(tokenizer, out: Path, vocab_size: int, min_frequency: int, quiet: bool, as_json: bool) -> None:
    """What train says once the files are written: a note when it stopped short of vocab_size,
    the result (as JSON with --json), and a note when normalization is not in every file."""
    if tokenizer.vocab_size < vocab_size:  # said even with --quiet: the result is not what was asked
        why = f"no pair occurred {counted(min_frequency, 'time')} or more" if min_frequency > 1 else "the corpus ran out of pairs"
        typer.echo(f"bpecli: note: stopped after {counted(len(tokenizer.merges), 'merge')}: {why}; "
                   f"the vocabulary has {tokenizer.vocab_size:,} tokens, not {vocab_size:,}", err=True)
    if as_json:
        from ..report.tokenizer_stats import describe  # the report package loads numpy

        info = describe(tokenizer)
        print_json({"out": str(out), "vocab_size": tokenizer.vocab_size, "vocab_size_asked": vocab_size,
                    "merges": len(tokenizer.merges), "special_tokens": info["special_tokens"], "pattern": info["pattern"],
                    "normalize": info["normalize"], "add_prefix_space": info["add_prefix_space"], "template": info["template"],
                    "files": sorted(p.name for p in out.iterdir())})
    elif not quiet:
        typer.echo(f"trained {counted(tokenizer.vocab_size, 'token')} ({counted(len(tokenizer.merges), 'merge')}) into {out}", err=True)
    if tokenizer.normalize and not quiet:
        typer.echo(f"bpecli: note: {', '.join(tokenizer.normalize)} is in tokenizer.json and bpecli.json; tokenizer.tiktoken "
                   "and vocab.json/merges.txt cannot say it: normalize text yourself before tiktoken encodes it", err=True)
    if tokenizer.vocab.adds and not quiet:
        from ..formats.bpecli_json import ranks_file_lacks

        typer.echo(f"bpecli: note: {ranks_file_lacks(tokenizer.vocab)}", err=True)


def shards_summary(run, out: Path, quiet: bool, as_json: bool) -> None:
    """What encode --out says of its run: JSON on stdout with --json, else a line on stderr."""
    from ..shards.run import rates

    m = run.manifest
    # said even with --quiet: what a training loop would read is not there, or not as it reads it
    for split, called, other in (("val", "validation", "larger"), ("train", "training", "smaller")):
        if "splits" in m and not m["splits"][split]["documents"]:
            note(f"no document fell in the {called} split (--val-fraction {m['val_fraction']:g} of "
                 f"{counted(m['total_documents'], 'document')}), so there are no {split} shards; give a {other} --val-fraction")
    if m.get("shard_format") == "nanogpt" and m["dtype"] == "uint32":
        note("the .bin files hold uint32 ids (the vocabulary has ids past 65,535, or --dtype uint32); nanoGPT's "
             "train.py reads them as np.uint16: change its np.memmap dtype to np.uint32")
    if as_json:
        return print_json({
            "out": str(out), "status": run.status, "total_tokens": m["total_tokens"], "total_documents": m["total_documents"],
            "shards": len(m["shards"]), "dtype": m["dtype"], "kept_shards": run.kept_shards, "seconds": round(run.seconds, 3),
            "bytes_read": run.n_bytes, "mb_per_s": round(run.n_bytes / 1e6 / max(run.seconds, 1e-9), 2),
            "tokens_per_s": round(run.n_tokens / max(run.seconds, 1e-9)),
            **({"splits": m["splits"]} if "splits" in m else {}),
        })
    if quiet:
        return
    if run.status == "complete":
        typer.echo(f"{out} holds this run complete already ({m['total_tokens']:,} tokens in {counted(len(m['shards']), 'shard')}); "
                   "left as it is", err=True)
        return
    resumed = f", {run.kept_shards:,} kept from an interrupted run" if run.kept_shards else ""
    if "splits" in m:
        resumed += "; " + ", ".join(f"{name} {counted(split['tokens'], 'token')} ({counted(split['documents'], 'document')})"
                                    for name, split in m["splits"].items())
    typer.echo(
        f"wrote {counted(m['total_tokens'], 'token')} ({counted(m['total_documents'], 'document')}, {m['dtype']}) in "
        f"{counted(len(m['shards']), 'shard')} to {out}{resumed}; {rates(run.n_bytes, run.n_tokens, run.seconds)}",
        err=True,
    )


def console():
    """A rich console on stdout, 80 columns at most; a reader that leaves early is not an error."""
    from rich.console import Console

    class Quiet(Console):
        def on_broken_pipe(self) -> None:  # rich's own exits with status 1
            self.quiet = True
            raise BrokenPipeError  # the reader left: app._Command.invoke exits 0

    binary_stdout()  # a closed stdout is an error, not output thrown away
    return Quiet(file=Named(sys.stdout), width=min(80, Console().width), highlight=False)


def table(columns: list[str], rows, title: str | None = None):
    """A rich table; a column name starting with ">" is right-aligned. Long cells end in "…"."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name.lstrip(">"), justify="right" if name.startswith(">") else "left",
                         overflow="ellipsis", no_wrap=True, max_width=56)
    for row in rows:
        table.add_row(*row)
    return table


_EIGHTHS = " ▏▎▍▌▋▊▉"


def _bar(value: float, top: float, width: int, log: bool = False) -> str:
    """A bar of block characters, in eighths of a column: value's share of top (log10 scale if log)."""
    if log:
        value, top = math.log10(max(value, 1)) + (value > 0), math.log10(max(top, 1)) + 1
    eighths = round(8 * width * value / top) if top > 0 else 0
    eighths = max(eighths, 1 if value > 0 else 0)
    return ("█" * (eighths // 8) + _EIGHTHS[eighths % 8]).rstrip()


def bars(title: str, rows: list[tuple[str, float, str]], *, log: bool = False, width: int = 30, colour: str = "cyan"):
    """A bucketed bar chart as a rich table: a label, a bar, and the value as text, per row."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left", box=None, show_header=False, padding=(0, 1), pad_edge=False)
    table.add_column(justify="right", max_width=22, no_wrap=True, overflow="ellipsis")
    table.add_column(width=width, no_wrap=True)
    table.add_column(justify="right", no_wrap=True)
    top = max((value for _, value, _ in rows), default=0)
    for label, value, shown in rows:
        table.add_row(label, Text(_bar(value, top, width, log), style=colour), shown)
    return table


# What render_token writes for what would not show: visible spaces and escapes, dimmed on a terminal.
_MARKERS = r"(\u2423+|(?:\\(?:[ntr]|x[0-9a-f]{2}|u[0-9a-f]{4}|U[0-9a-f]{8}))+)"


def token(rendered: str) -> Any:
    """A rendered token (tokenizer.render_token) for the terminal, its markers dimmed."""
    from rich.text import Text

    text = Text()
    for n, run in enumerate(re.split(_MARKERS, rendered)):
        if run:
            text.append(run, style="dim" if n % 2 else "")
    return text


def titled(title: str, line):
    """A rich line that starts with a bold title."""
    from rich.text import Text

    out = Text(title, style="bold")
    out.append_text(line)
    return out


def joined(tokens: list[str]):
    """Rendered tokens side by side, a dim bar between two."""
    from rich.text import Text

    out = Text()
    for n, token_ in enumerate(tokens):
        if n:
            out.append("|", style="dim")
        out.append_text(token(token_))
    return out


def text_view(tok, ids: list[int], as_json: bool) -> None:
    """How a text split into tokens: coloured tokens and ids on a terminal, a token a line in a
    pipe, or JSON."""
    tokens = [tok.special_ids[i] if i in tok.special_ids else render_token(tok.decoder[i]) for i in ids]
    if as_json:
        return print_json({"count": len(ids), "ids": ids, "tokens": tokens})
    if not sys.stdout.isatty():
        stdout = binary_stdout()
        stdout.write("".join(f"{i}\t{t}\n" for i, t in zip(ids, tokens)).encode())
        stdout.write(f"{counted(len(ids), 'token')}\n".encode())
        stdout.flush()
        return
    from rich.text import Text

    colours = ["black on cyan", "black on yellow", "black on green", "black on magenta"]
    shown = console()
    shown.print(Text.assemble(*((t, colours[n % 4]) for n, t in enumerate(tokens))))
    shown.print(Text.assemble(*((f"{i} ", colours[n % 4].split()[-1]) for n, i in enumerate(ids))))
    shown.print(counted(len(ids), "token"))


def bench_view(report: dict, workers: int, repeat: int, against: bool) -> None:
    """bench's timings as a table, and the ratio to the peer with whether the ids agree."""
    shown = console()
    shown.print(f"{report['bytes'] / 1e6:.1f} MB, {counted(report['documents'], 'document')}, {counted(workers, 'worker')}, "
                f"median of {repeat}; peak memory {report['peak_memory_mib']:.0f} MiB")
    rows = [
        (name, f"{r['encode_mb_per_s']:.1f}", f"{r['encode_tokens_per_s']:,.0f}", f"{r['decode_mb_per_s']:.1f}", f"{r['tokens']:,}")
        for name, r in ((name, report[name]) for name in ["bpecli"] + ([report["peer"]] if against else []))
    ]
    shown.print(table([">", ">encode MB/s", ">tokens/s", ">decode MB/s", ">tokens"], rows))
    if against:
        shown.print(f"ratio bpecli / {report['peer']} encode throughput: [bold]{report['ratio']:.2f}x[/]")
        if report["identical"]:
            shown.print("ids identical")
        else:
            shown.print(f"ids differ: first at {report['first_difference']}", overflow="fold")


def tokenizer_view(info: dict) -> None:
    """A tokenizer's figures (report.tokenizer_figures) as tables and bar charts, beside the
    others it was compared with and measured on the corpora given."""
    from ..report.page import length_buckets
    from ..report.svg import number, percent

    shown = console()
    shown.print(f"[bold]vocab size[/] {info['vocab_size']:,}  ({info['ordinary_tokens']:,} ordinary, "
                f"{counted(info['merges'], 'merge')}, {len(info['special_tokens'])} special)")
    pattern = info["pattern"]
    shown.print(f"[bold]pattern[/] {pattern if len(pattern) < 66 else pattern[:63] + '...'}", markup=True)
    if info["normalize"]:
        shown.print(f"[bold]normalize[/] {', '.join(info['normalize'])}", markup=True)
    if info.get("add_prefix_space"):
        shown.print("[bold]add prefix space[/] a space before each text that does not start with one", markup=True)
    if info.get("template"):
        from rich.markup import escape  # a token such as [INST] is no markup

        shown.print(f"[bold]template[/] {escape(info['template'])}", markup=True)
    for special, rank in info["special_tokens"].items():
        shown.print(f"[bold]special[/] {special} = {rank}", markup=True)
    shown.print()
    shown.print(bars("kinds of tokens (log scale)", [(k["kind"], k["tokens"], f"{k['tokens']:,} {percent(k['share']):>6}")
                                                    for k in info["kinds"]], log=True))
    shown.print()
    shown.print(bars("tokens by length in bytes", [(label, count, f"{int(count):,}") for label, count in length_buckets(info["byte_lengths"])]))
    shown.print()
    rows = [(str(r["id"]), str(r["bytes"]), token(r["token"])) for r in info["longest_tokens"]]
    shown.print(table([">id", ">bytes", "token"], rows, title="longest tokens"))
    for title in ("first_merges", "last_merges"):
        line = token("")
        for merge in info[title][:6]:
            line.append("  ")
            line.append_text(token(merge["left"]))
            line.append("+", style="dim")
            line.append_text(token(merge["right"]))
        shown.print(titled(title.replace("_", " "), line), overflow="ellipsis", no_wrap=True)
    if "bytes_per_token" not in info:
        return
    names = list(info["tokenizers"])
    short_names = _short_names(names)
    shown.print()
    inputs = [c["input"] for c in info["corpus"]]
    sampled = sum(c["sample_bytes"] for c in info["corpus"])
    measured = [(short_names[n], info["bytes_per_token"][name], f"{info['bytes_per_token'][name]:.3f}") for n, name in enumerate(names)]
    shown.print(bars(f"bytes per token on {counted(len(inputs), 'input')} ({sampled / 1e6:.1f} MB of text)", measured))
    if len(inputs) > 1:
        by_input = info["bytes_per_token_by_input"]
        shown.print(table(["input"] + [">" + n for n in short_names],
                          [[Path(i).name] + [f"{by_input[name][i]:.3f}" for name in names] for i in inputs],
                          title="bytes per token by input"))
    shown.print()
    growth = info["growth"]
    sizes = sorted({p["vocab_size"] for name in names for p in growth[name]})
    shown.print(table([">vocab size"] + [">" + n for n in short_names], [
        [f"{size:,}"] + [next((f"{p['bytes_per_token']:.3f}" for p in growth[name] if p["vocab_size"] == size), "") for name in names]
        for size in sizes], title="bytes per token as the vocabulary grows (first merges only)"))
    words = info["words"]
    shown.print(f"[bold]common words[/] of the {words['words']:,} most common: " + "; ".join(
        f"{short_names[n]} keeps {words['whole'][name]:,} whole" for n, name in enumerate(names)), overflow="fold")
    if len(names) > 1 and words["examples"]:
        words_rows = [[token(e["word"]), number(e["count"])] + [joined(e["tokens"][name]) for name in names]
                      for e in words["examples"][:8]]
        shown.print(table(["word", ">count"] + short_names, words_rows, title=f"{words['split_differently']:,} of them split differently"))


def _short_names(names: list[str]) -> list[str]:
    """Tokenizer paths as column titles: the file name, with its folder when names collide."""
    short = [Path(n).name for n in names]
    if len(set(short)) < len(short):
        short = [str(Path(Path(n).parent.name) / Path(n).name) for n in names]
    return short


def shards_view(info: dict, with_tokenizer: bool, verify: bool) -> None:
    """A shard folder's figures (report.shard_figures) as tables and bar charts."""
    from ..report.svg import number, percent
    from ..shards.layout import UNBOUNDED

    shown = console()
    shown.print(f"[bold]{info['total_tokens']:,}[/] token{'s' * (info['total_tokens'] != 1)}, "
                f"[bold]{info['total_documents']:,}[/] document{'s' * (info['total_documents'] != 1)}, "
                f"{info['dtype']}, {counted(len(info['shards']), 'shard')}"
                + (f" of up to {info['shard_tokens']:,} tokens" if info["shard_tokens"] < UNBOUNDED else ", one per split"))
    splits = info["splits"]
    rows = [(name, f"{s['tokens']:,}", percent(s["tokens"] / info["total_tokens"]) if info["total_tokens"] else "-",
             f"{s['documents']:,}", f"{s['shards']:,}", number(s["bytes_per_token"]) if s["bytes_per_token"] else "-")
            for name, s in splits.items()]
    shown.print(table(["split", ">tokens", ">share", ">documents", ">shards", ">bytes/token"], rows))
    shards = info["shards"]
    if len(shards) <= 16:
        shown.print(bars("tokens per shard", [(s["file"], s["tokens"], f"{s['tokens']:,}") for s in shards]))
    else:
        sizes = sorted(s["tokens"] for s in shards)
        shown.print(f"[bold]tokens per shard[/] {len(shards):,} shards: smallest {sizes[0]:,}, median "
                    f"{sizes[len(sizes) // 2]:,}, largest {sizes[-1]:,}")
    lengths = info["document_lengths"]
    if lengths["documents"]:
        shown.print()
        shown.print(bars("documents by length in tokens (eot included)",
                         [(_bucket(b), sum(b["documents"].values()), f"{sum(b['documents'].values()):,}") for b in lengths["buckets"]]))
        shown.print(f"median {number(lengths['median'])}, mean {number(lengths['mean'])}, 90% below {number(lengths['p90'])}, "
                    f"99% below {number(lengths['p99'])}, longest {counted(lengths['max'], 'token')}")
    vocabulary = info["vocabulary"]
    shown.print()
    shown.print(f"[bold]vocabulary[/] {vocabulary['seen']:,} of {vocabulary['ids']:,} ids occur; {vocabulary['never_seen']:,} never, "
                f"{vocabulary['rare']:,} fewer than {counted(vocabulary['rare_below'], 'time')}", overflow="fold")
    covering = vocabulary["ids_covering"]
    shown.print(f"ids that make {' / '.join(covering)} of the tokens: {' / '.join(f'{n:,}' for n in covering.values())}")
    if info["bytes_per_token"] is not None:
        shown.print(f"[bold]bytes per token[/] {info['bytes_per_token']:.3f} ({info['text_bytes'] / 1e6:,.1f} MB of text)")
    by_input = info["by_input"]
    if by_input and len(by_input) > 1:
        measured = all(i["bytes_per_token"] is not None for i in by_input)
        shown.print(bars("bytes per token by input" if measured else "tokens by input",
                         [(Path(i["input"]).name, i["bytes_per_token"] if measured else i["tokens"],
                           f"{i['bytes_per_token']:.3f}" if measured else f"{i['tokens']:,}") for i in by_input[:12]]))
        if len(by_input) > 12:
            shown.print(f"... and {len(by_input) - 12:,} more inputs (--json lists them)")
    rows = [(str(n + 1), str(t["id"]), *([token(t["token"])] if with_tokenizer else []), f"{t['count']:,}", percent(t["share"]))
            for n, t in enumerate(info["most_frequent"][:10])]
    shown.print(table([">rank", ">id", *(["token"] if with_tokenizer else []), ">count", ">share"], rows,
                      title="most frequent tokens" if with_tokenizer else "most frequent ids"))
    if not with_tokenizer:
        shown.print("[dim]give the tokenizer (-t TOK) to see tokens, not ids, and bytes per token[/]")
    elif not info["same_tokenizer_files"]:
        shown.print("[dim]note: the tokenizer given is of the same size, read from other files than the shards were "
                    "written with[/]")
    if verify:
        shown.print("verified: every shard matches its sha256 in the manifest")


def _bucket(bucket: dict) -> str:
    return f"{bucket['from']:,}" if bucket["from"] == bucket["to"] else f"{bucket['from']:,}-{bucket['to']:,}"
