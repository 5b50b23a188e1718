"""The report as one self-contained HTML file: the figures drawn as inline SVG, styled by inline
CSS, with the figures themselves embedded as JSON; no network, no external file, a few lines of
inline script for highlighting tokens."""

from __future__ import annotations

import json
import os
import time
from html import escape
from pathlib import Path

from .. import folders
from ..errors import OutputError, arg
from ..tokenizer import Tokenizer
from ..vocab import token_parts
from .svg import colour, columns, hbars, legend, lines, number, percent, short

# The first line of every report: a file that starts otherwise is not ours to overwrite.
SIGNATURE = "<!DOCTYPE html>\n<!-- bpecli report -->"
FIGURES_ID = "bpecli-figures"


def write_report(path: str | Path, html: str) -> Path:
    """Write a report atomically; an existing file is replaced only if it is a bpecli report."""
    path = Path(path)
    if path.is_dir():
        raise OutputError(f"{arg('report')} {path} is a folder; name a file, e.g. {path / 'report.html'}")
    if os.path.lexists(path):  # looked at without following a link or waiting on a FIFO
        try:
            with folders.open_regular(path, follow_links=False) as (f, _):
                why = "" if f.read(len(SIGNATURE)).decode("utf-8", "replace") == SIGNATURE else "is not a bpecli report"
        except (OSError, folders.Unreadable) as e:  # "is a FIFO, ...", "a link, ..."
            why = f"is {str(e).removeprefix('is ')}" if isinstance(e, folders.Unreadable) else f"cannot be read ({folders.why(e)})"
        if why:
            raise OutputError(f"{arg('report')} {path} exists and {why}; bpecli replaces only a report it wrote: "
                              "remove it or name another file")
    temporary = None
    try:
        # a new name of its own beside the report: never a file or link that was there
        name = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.partial")
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        temporary = name  # (set once made: only what was made is removed)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(temporary, path)
    except BaseException as e:  # a full disk, Ctrl-C: no half-written page stays behind
        try:
            if temporary is not None:
                temporary.unlink(missing_ok=True)
        except OSError:
            pass
        if isinstance(e, OSError):
            raise OutputError(f"cannot write {arg('report')} {path} ({e.strerror or e}); name a file in a folder you can write to") from None
        raise
    return path


# ---- tokens ------------------------------------------------------------------------------------

def chip(token: bytes | str, *, token_id: int | None = None, special: bool = False) -> str:
    """A token as a chip: its text, with what would not show (spaces, newlines, stray bytes) as
    dimmed markers (see vocab.token_parts)."""
    title = f' title="id {token_id}"' if token_id is not None else ""
    if special or isinstance(token, str):
        return f'<span class="tok special"{title}>{escape(str(token))}</span>'
    inner = "".join(f'<span class="mk">{escape(text)}</span>' if marker else escape(text) for text, marker in token_parts(token))
    return f'<span class="tok"{title}>{inner}</span>'


def _chip_of(tok: Tokenizer | None, token_id: int) -> str:
    if tok is None or token_id not in tok.decoder:
        return f'<span class="tok id">#{token_id}</span>'
    if token_id in tok.special_ids:
        return chip(tok.special_ids[token_id], token_id=token_id, special=True)
    return chip(tok.decoder[token_id], token_id=token_id)


def _coloured(tok: Tokenizer, ids: list[int]) -> str:
    """Text split into tokens, each on a background of its own; newlines break the line."""
    out = []
    for n, token_id in enumerate(ids):
        token = tok.decoder[token_id]
        special = tok.special_ids.get(token_id)
        body = chip(token if special is None else special, token_id=token_id, special=special is not None)
        out.append(body.replace('class="tok', f'data-id="{token_id}" class="c{n % 5} tok', 1))
        out.append("<br>" * min(2, token.count(b"\n")))
    return "".join(out)


# ---- the page ----------------------------------------------------------------------------------

def _page(title: str, subtitle: str, cards: list[tuple[str, str]], sections: list[str], figures: dict) -> str:
    data = json.dumps(figures, ensure_ascii=False).replace("<", "\\u003c")
    from .. import __version__

    made = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    stat = "".join(f'<div class="card stat"><div class="v">{value}</div><div class="k">{escape(key)}</div></div>'
                   for key, value in cards)
    return f"""{SIGNATURE}
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(title)}</title>
<style>{_CSS}</style></head>
<body><main>
<header><div class="brand">bpecli report</div><h1>{escape(title)}</h1><p class="sub">{subtitle}</p></header>
<div class="stats">{stat}</div>
{"".join(sections)}
<footer>Made by bpecli {escape(__version__)} on {made}. The figures are in this file as JSON (element #{FIGURES_ID}).</footer>
</main>
<script type="application/json" id="{FIGURES_ID}">{data}</script>
<script>{_SCRIPT}</script>
</body></html>
"""


def _section(title: str, body: str, note: str = "", wide: bool = False) -> str:
    note_html = f'<p class="note">{note}</p>' if note else ""
    return f'<section class="card{" wide" if wide else ""}"><h2>{escape(title)}</h2>{note_html}{body}</section>'


def _grid(*sections: str) -> str:
    return '<div class="grid">' + "".join(s for s in sections if s) + "</div>"


def _table(head: list[str], rows: list[list[str]], numeric: frozenset[int] | set[int] = frozenset()) -> str:
    """An HTML table; cells are HTML already; columns in numeric are right-aligned."""
    th = "".join(f'<th{" class=num" if i in numeric else ""}>{escape(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(f'<td{" class=num" if i in numeric else ""}>{cell}</td>' for i, cell in enumerate(row)) + "</tr>"
                   for row in rows)
    return f'<div class="scroll"><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table></div>'


def _share_bar(share: float, index: int = 0) -> str:
    return f'<span class="share"><i style="width:{max(0.5, 100 * share):.1f}%;background:{colour(index)}"></i></span>'


def _label(name: str) -> str:
    """A tokenizer's name as a legend shows it: its file and the folder it is in."""
    path = Path(name)
    return str(Path(path.parent.name) / path.name) if path.parent.name else path.name


# ---- tokenizer ---------------------------------------------------------------------------------

def tokenizer_page(figures: dict, tokenizers: dict[str, Tokenizer]) -> str:
    """The report of a tokenizer (and of those compared with it on a corpus)."""
    names = list(figures["tokenizers"])
    labels = [_label(n) for n in names]
    main = tokenizers[names[0]]
    info = figures
    cards = [("vocabulary", number(info["vocab_size"])), ("merges", number(info["merges"])),
             ("special tokens", number(len(info["special_tokens"]))), ("pattern", escape(_short_pattern(info["pattern"])))]
    if "bytes_per_token" in info:
        cards.append(("bytes per token on the corpus", number(info["bytes_per_token"][names[0]])))
    if info["normalize"]:
        cards.append(("normalize", escape(", ".join(info["normalize"]))))
    sections = []
    if len(names) > 1:
        rows = [[f'<i class="dot" style="background:{colour(n)}"></i>{escape(_label(name))}', number(t["vocab_size"]),
                 number(t["merges"]), escape(_short_pattern(t["pattern"])),
                 number(info["bytes_per_token"][name]) if "bytes_per_token" in info else "–"]
                for n, (name, t) in enumerate(info["tokenizers"].items())]
        sections.append(_section("Tokenizers side by side", _table(["tokenizer", "vocabulary", "merges", "pattern", "bytes per token"],
                                                                   rows, {1, 2, 4}), wide=True))
    if "growth" in info:
        sections.append(_corpus_sections(info, names, labels, tokenizers))
    kinds = info["kinds"]
    kind_rows = [[escape(k["kind"]), _share_bar(k["share"]) + f' <span class="muted">{percent(k["share"])}</span>',
                  number(k["tokens"]), f'{k["mean_bytes"]:.1f}',
                  " ".join(_chip_of(main, e["id"]) for e in k["examples"])] for k in kinds]
    sides = info["tokenizers"]
    kind_names = list(dict.fromkeys([k["kind"] for k in kinds] + [k for t in sides.values() for k in t["kinds"]]))
    kind_chart = legend(labels) + hbars(kind_names, [[float(sides[n]["kinds"].get(k, 0)) for k in kind_names] for n in names],
                                        label="tokens of each kind", log=True, value_text=_count)
    lengths = [length_buckets(sides[n]["byte_lengths"], max(int(k) for t in sides.values() for k in t["byte_lengths"]))
               for n in names]
    if len(names) == 1:
        length_chart = columns([b for b, _ in lengths[0]], [[c for _, c in lengths[0]]], label="tokens by length in bytes",
                               x_title="token length (bytes)", y_title="tokens", value_text=_count)
    else:  # vocabularies of different sizes: shares, not counts
        length_chart = legend(labels) + columns(
            [b for b, _ in lengths[0]], [[c / sides[n]["ordinary_tokens"] for _, c in found] for n, found in zip(names, lengths)],
            label="share of tokens by length in bytes", x_title="token length (bytes)", y_title="share of the vocabulary",
            y_text=lambda v: f"{100 * v:.0f}%", value_text=percent)
    longest_bytes = [max(map(int, sides[name]["byte_lengths"])) for name in names]
    longest_note = (f"the longest has {longest_bytes[0]} bytes" if len(names) == 1 else
                    "the longest: " + "; ".join(f"{escape(labels[n])}, {found} bytes" for n, found in enumerate(longest_bytes)))
    sections.append(_grid(
        _section("Kinds of tokens", kind_chart, "Ordinary tokens by what they hold (a leading space aside); log scale."),
        _section("Token lengths", length_chart, f"Ordinary tokens by their length in bytes; {longest_note}."),
    ))
    sections.append(_section("Examples of each kind", _table(["kind", "share of the vocabulary", "tokens", "mean bytes",
                                                              "first merged"], kind_rows, {2, 3}), wide=True))
    longest = _table(["id", "bytes", "token"], [[str(t["id"]), str(t["bytes"]), _chip_of(main, t["id"])]
                                                for t in info["longest_tokens"]], {0, 1})
    merges = _table(["first merges", "", "last merges", ""], [
        [_merge(main, a), f'<span class="muted">{a["id"]}</span>', _merge(main, b), f'<span class="muted">{b["id"]}</span>']
        for a, b in zip(info["first_merges"], info["last_merges"])])
    sections.append(_grid(_section("Longest tokens", longest), _section("Merges", merges, "What the first merges and the last ones join.")))
    if info["special_tokens"]:
        specials = " ".join(chip(t, token_id=i, special=True) + f' <span class="muted">{i}</span>' for t, i in info["special_tokens"].items())
        sections.append(_section("Special tokens", f'<p class="chips">{specials}</p>', wide=True))
    subtitle = escape(names[0]) + (" beside " + ", ".join(escape(n) for n in names[1:]) if len(names) > 1 else "")
    if "corpus" in info:
        sampled = sum(c["sample_bytes"] for c in info["corpus"])
        subtitle += f" · measured on {len(info['corpus'])} input{'s' if len(info['corpus']) > 1 else ''} ({_size(sampled)} of text)"
    return _page(f"Tokenizer {_label(names[0])}", subtitle, cards, sections, figures)


def _corpus_sections(info: dict, names: list[str], labels: list[str], tokenizers: dict[str, Tokenizer]) -> str:
    inputs = [c["input"] for c in info["corpus"]]
    rows = [_label(i) for i in inputs] + (["all inputs"] if len(inputs) > 1 else [])
    per_input = [[info["bytes_per_token_by_input"][n][i] for i in inputs] + ([info["bytes_per_token"][n]] if len(inputs) > 1 else [])
                 for n in names]
    bpt = legend(labels) + hbars(rows, per_input, label="bytes per token by input")
    growth = info["growth"]
    curve = legend(labels) + lines([[(p["vocab_size"], p["bytes_per_token"]) for p in growth[n]] for n in names],
                                   label="bytes per token by vocabulary size", log_x=2, x_title="vocabulary size (ordinary tokens)",
                                   y_title="bytes per token", y_text=lambda v: f"{v:g}", x_text=_binary,
                                   point_text=lambda x, y: f"{number(x)} tokens: {y:.3f} bytes per token")
    gains = []
    for n, name in enumerate(names):
        points = growth[name]
        if len(points) >= 3:
            last, before = points[-1], points[-2]
            gains.append(f'<i class="dot" style="background:{colour(n)}"></i>{escape(labels[n])}: '
                         f'{before["bytes_per_token"]:.2f} → {last["bytes_per_token"]:.2f} from {short(before["vocab_size"])} '
                         f'to {short(last["vocab_size"])} tokens ({100 * (last["bytes_per_token"] / before["bytes_per_token"] - 1):+.1f}%)')
    growth_note = ("The tokenizer cut to its first merges, on a sample of the corpus: where the curve flattens, "
                   "more vocabulary stops paying. Last step: " + "; ".join(gains)) if gains else ""
    out = [_grid(_section("Bytes per token", bpt, "UTF-8 bytes of text per token, by input: higher is shorter sequences."),
                 _section("Growth with the vocabulary", curve, growth_note))]
    words = info["words"]
    summary = "; ".join(f'{escape(labels[n])} keeps {number(words["whole"][name])} whole '
                        f'({words["tokens_per_word"][name]:.2f} tokens per word)' for n, name in enumerate(names))
    note = f"Of the {number(words['words'])} most common words of the corpus: {summary}."
    if len(names) > 1:
        note += f" {number(words['split_differently'])} are split differently; the most common of them:"
        first = tokenizers[names[0]]
        rows_w = [[chip(b"".join(first.decoder[i] for i in e["ids"][names[0]])), number(e["count"])]
                  + [" ".join(_chip_of(tokenizers[n], i) for i in e["ids"][n]) for n in names] for e in words["examples"]]
        out.append(_section("Common words split differently", _table(["word", "count"] + labels, rows_w, {1}), note, wide=True))
    else:
        out.append(_section("Common words", "", note, wide=True))
    samples = []
    for n, name in enumerate(names):
        ids = info["sample"]["ids"][name]
        samples.append(f'<h3><i class="dot" style="background:{colour(n)}"></i>{escape(labels[n])} '
                       f'<span class="muted">{number(len(ids))} tokens</span></h3>'
                       f'<div class="sample">{_coloured(tokenizers[name], ids)}</div>')
    out.append(_section("The corpus, token by token", "".join(samples),
                        f"{number(len(info['sample']['text']))} characters of {escape(_label(inputs[0]))}, from the start "
                        "of what was read of it; hover a token for its id and to see it wherever it occurs.", wide=True))
    return "".join(out)


def _counted(n: int, word: str) -> str:
    """Example: (1, "shard") -> "1 shard"; (1200, "input") -> "1,200 inputs" """
    return f"{n:,} {word}" + ("s" if n != 1 else "")


def _count(value: float) -> str:
    return f"{int(value):,}"


def _binary(value: float) -> str:
    """A number on an axis of powers of two. Example: 32768 -> "32k"; 50257 -> "50.3k" """
    return f"{int(value) // 1024}k" if value >= 1024 and int(value) % 1024 == 0 else short(value)


def _merge(tok: Tokenizer, merge: dict) -> str:
    return _chip_of(tok, merge["left_id"]) + '<span class="plus">+</span>' + _chip_of(tok, merge["right_id"])


def length_buckets(byte_lengths: dict, longest: int | None = None) -> list[tuple[str, float]]:
    """Token counts by length: one column per length up to 16 bytes, then doubling ranges (up to
    longest, if given, so that tokenizers side by side have the same columns)."""
    counts = {int(k): v for k, v in byte_lengths.items()}
    longest = longest or max(counts)
    out = [(str(n), float(counts.get(n, 0))) for n in range(1, min(16, longest) + 1)]
    low = 17
    while low <= longest:
        high = 2 * low - 2
        out.append((f"{low}–{high}", float(sum(v for k, v in counts.items() if low <= k <= high))))
        low = high + 1
    return out


def _short_pattern(pattern: str) -> str:
    return pattern if len(pattern) <= 24 else pattern[:22] + "…"


def _size(n: float) -> str:
    for size, unit in ((1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} bytes"


# ---- shard folder ------------------------------------------------------------------------------

def shards_page(figures: dict, tokenizer: Tokenizer | None) -> str:
    """The report of a shard folder."""
    info = figures
    splits = info["splits"]
    split_names = list(splits)
    cards = [("tokens", number(info["total_tokens"])), ("documents", number(info["total_documents"])),
             ("shards", number(len(info["shards"]))),
             (f'ids occur, of {number(info["vocabulary"]["ids"])}', number(info["vocabulary"]["seen"]))]
    if info["bytes_per_token"] is not None:
        cards.insert(2, ("bytes per token", number(info["bytes_per_token"])))
        cards.append(("text", _size(info["text_bytes"])))
    split_rows = [[f'<i class="dot" style="background:{colour(n)}"></i>{escape(name)}', number(s["tokens"]),
                   percent(s["tokens"] / info["total_tokens"]) if info["total_tokens"] else "–", number(s["documents"]),
                   number(s["shards"]), number(s["bytes_per_token"]) if s["bytes_per_token"] is not None else "–",
                   number(s["distinct_ids"])] for n, (name, s) in enumerate(splits.items())]
    sections = [_section("Splits", _table(["split", "tokens", "share", "documents", "shards", "bytes per token", "distinct ids"],
                                          split_rows, {1, 2, 3, 4, 5, 6}), wide=True)]
    per_shard = legend(split_names) + _shard_columns(info["shards"], split_names)
    lengths = info["document_lengths"]
    buckets = lengths["buckets"]
    length_series = [[b["documents"].get(name, 0) / max(1, splits[name]["documents"]) for b in buckets] for name in split_names]
    length_chart = legend(split_names) + columns([_binary(b["from"]) for b in buckets], length_series, label="documents by length",
                                                 y_text=lambda v: f"{100 * v:.0f}%", value_text=percent,
                                                 x_title="document length (tokens)", y_title="share of documents")
    quantiles = (f"median {number(lengths['median'])}, mean {number(lengths['mean'])}, 90% below {number(lengths['p90'])}, "
                 f"99% below {number(lengths['p99'])}, longest {number(lengths['max'])} tokens") if lengths["documents"] else "no documents"
    sections.append(_grid(
        _section("Tokens per shard", per_shard, f"{_counted(len(info['shards']), 'shard')} of up to {short(info['shard_tokens'])} tokens"
                 if info["shard_tokens"] < 2**62 else "one file per split"),
        _section("Document lengths", length_chart, "From the document indexes, eot included; each column from its length "
                 "up to the next one's: " + quantiles + "."),
    ))
    zipf = info["zipf"]
    marks = [(t["rank"], t["count"], t.get("token", f"#{t['id']}")) for t in info["at_ranks"]]
    zipf_chart = lines([[(p["rank"], p["count"]) for p in zipf]], label="rank-frequency of ids", log_x=10, log_y=10,
                       x_title="rank of the id", y_title="occurrences", marks=marks) if zipf else ""
    vocabulary = info["vocabulary"]
    occurrence = vocabulary["by_occurrences"]
    use_chart = hbars([_occurrence_label(b) for b in occurrence], [[float(b["ids"]) for b in occurrence]],
                      label="ids by how often they occur", label_width=120, value_text=_count)
    never = " ".join(_chip_of(tokenizer, t["id"]) for t in vocabulary["never_seen_first"]) or "none: every id occurs"
    use_chart += f'<h3>The lowest ids that never occur</h3><p class="chips">{never}</p>'
    cover = ", ".join(f"{number(n)} ids make {share} of the tokens" for share, n in vocabulary["ids_covering"].items())
    sections.append(_grid(
        _section("Rank and frequency", zipf_chart, "Each id's count against its rank, both on log scales (Zipf's law is "
                 "a straight line); the ids at ranks 1, 10, 100... are named."),
        _section("Vocabulary use", use_chart, f"{number(vocabulary['never_seen'])} of {number(vocabulary['ids'])} ids never occur, "
                 f"{number(vocabulary['rare'])} occur fewer than {vocabulary['rare_below']} times; {cover}."),
    ))
    token_column = ["token"] if tokenizer is not None else []
    frequent = _table(["rank", *token_column, "id", "count", "share"], [
        [str(n + 1), *([_chip_of(tokenizer, t["id"])] if token_column else []), str(t["id"]), number(t["count"]),
         _share_bar(t["share"] / info["most_frequent"][0]["share"]) + f' <span class="muted">{percent(t["share"])}</span>']
        for n, t in enumerate(info["most_frequent"])], {0, 1 + len(token_column), 2 + len(token_column)})
    sections.append(_grid(_section("Most frequent tokens" if token_column else "Most frequent ids", frequent), _inputs_section(info)))
    shard_rows = [[escape(s["file"]), escape(s["split"]), number(s["tokens"]), number(s["documents"]),
                   number(s["bytes_per_token"]) if s["bytes_per_token"] is not None else "–", f'<code>{escape(s["sha256"][:16])}</code>']
                  for s in info["shards"]]
    details = (f'<details{" open" if len(shard_rows) <= 12 else ""}><summary>{_counted(len(shard_rows), "shard")}</summary>'
               + _table(["file", "split", "tokens", "documents", "bytes per token", "sha256"], shard_rows, {2, 3, 4}) + "</details>")
    sections.append(_section("Files", details, wide=True))
    tok_note = (" · ids only: give the tokenizer (-t) to see tokens and bytes per token" if tokenizer is None else
                "" if info["same_tokenizer_files"] else " · the tokenizer given is of the same size, read from other files "
                "than the shards were written with")
    eot = info.get("eot") or {}
    subtitle = (f"{escape(info['folder'])} · {escape(info['dtype'])} {escape(info['shard_format'])} shards"
                + (f" · eot {escape(str(eot.get('token') or eot.get('id')))}" if eot else "") + escape(tok_note))
    return _page(f"Shards {Path(info['folder']).name or info['folder']}", subtitle, cards, sections, figures)


def _inputs_section(info: dict) -> str:
    """What each input gave: tokens, documents and bytes per token (a chart of the last, or of
    tokens without the tokenizer), as the manifest of a run never interrupted records them."""
    by_input = info["by_input"]
    if by_input is None:
        rows = [[escape(str(i.get("path"))), number(i["size"]) if isinstance(i.get("size"), int) else "–"] for i in info["inputs"]]
        return _section("Inputs", _table(["input", "bytes"], rows, {1}), "Tokens per input are not recorded for this folder "
                        "(a run that resumed, or one written by an earlier bpecli).")
    measured = all(i["bytes_per_token"] is not None for i in by_input)
    shown = by_input[:24]
    chart = hbars([_label(i["input"]) for i in shown], [[i["bytes_per_token"] if measured else float(i["tokens"]) for i in shown]],
                  label="bytes per token by input" if measured else "tokens by input", label_width=170,
                  value_text=number if measured else _count)
    rows = [[escape(i["input"]), number(i["input_bytes"]) if isinstance(i["input_bytes"], int) else "–", number(i["tokens"]),
             number(i["documents"]), number(i["bytes_per_token"]) if i["bytes_per_token"] is not None else "–"] for i in by_input]
    table = (f'<details{" open" if len(rows) <= 8 else ""}><summary>{_counted(len(rows), "input")}</summary>'
             + _table(["input", "bytes", "tokens", "documents", "bytes per token"], rows, {1, 2, 3, 4}) + "</details>")
    note = ("UTF-8 bytes of text per token (eot aside), by input" if measured
            else "Tokens by input; give the tokenizer (-t) for bytes per token")
    more = f" (the first {len(shown)} of {number(len(by_input))} drawn)" if len(shown) < len(by_input) else ""
    return _section("Inputs", chart + table, note + more + ".")


def _shard_columns(shards: list[dict], split_names: list[str]) -> str:
    """Tokens of each shard, coloured by split (thin bars for thousands of shards)."""
    width, height, left, bottom, top_pad = 560, 220, 48, 26, 12
    plot_w, plot_h = width - left - 8, height - bottom - top_pad
    from .svg import _svg, _text, nice_ticks

    ticks = nice_ticks(max((s["tokens"] for s in shards), default=1), 4)
    body = []
    for tick in ticks:
        y = top_pad + plot_h * (1 - tick / ticks[-1])
        body.append(f'<line class="grid" x1="{left}" x2="{width - 8}" y1="{y:.1f}" y2="{y:.1f}"/>')
        body.append(_text(left - 6, y + 4, short(tick), "tick", "end"))
    step = plot_w / max(1, len(shards))
    for n, shard in enumerate(shards):
        h = plot_h * shard["tokens"] / ticks[-1]
        body.append(f'<rect x="{left + n * step:.2f}" y="{top_pad + plot_h - h:.2f}" width="{max(step * 0.85, 0.5):.2f}" '
                    f'height="{h:.2f}" fill="{colour(split_names.index(shard["split"]))}">'
                    f'<title>{escape(shard["file"])}: {number(shard["tokens"])} tokens, {number(shard["documents"])} documents</title></rect>')
    body.append(f'<line class="axis" x1="{left}" x2="{width - 8}" y1="{top_pad + plot_h}" y2="{top_pad + plot_h}"/>')
    body.append(_text(left, height - 6, shards[0]["file"] if shards else "", "tick"))
    if len(shards) > 1:
        body.append(_text(width - 8, height - 6, shards[-1]["file"], "tick", "end"))
    return _svg(width, height, body, "tokens per shard")


def _occurrence_label(bucket: dict) -> str:
    """Example: {"from": 10, "to": 99} -> "10–99 times"; {"from": 1000, "to": 9999} -> "1k–10k times" """
    if bucket["to"] is None:
        return f"{short(bucket['from'])} or more"
    if bucket["from"] == bucket["to"]:
        return "never" if bucket["from"] == 0 else f"{bucket['from']} time"
    if bucket["to"] < 1000:
        return f"{bucket['from']}–{bucket['to']} times"
    return f"{short(bucket['from'])}–{short(bucket['to'] + 1)} times"


_CSS = """
:root{--bg:#f6f7f9;--card:#fff;--ink:#1d2430;--muted:#6b7380;--line:#e3e6eb;--grid:#eceef2;--chip:#eef1f5;--mk:#9aa3af;
--c0:#dbe7f5;--c1:#fde5cc;--c2:#dcefd8;--c3:#f8dada;--c4:#e6dcef}
@media (prefers-color-scheme: dark){:root{--bg:#14171c;--card:#1d2128;--ink:#e6e9ee;--muted:#9aa3af;--line:#2e343d;
--grid:#2a3038;--chip:#2a3039;--mk:#7d8794;--c0:#23364d;--c1:#4a3520;--c2:#253f27;--c3:#4a2626;--c4:#3a2d48}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif}
main{max-width:1220px;margin:0 auto;padding:28px 24px 40px}
header h1{margin:2px 0 4px;font-size:26px;font-weight:650;letter-spacing:-.01em}
.brand{font-size:12px;text-transform:uppercase;letter-spacing:.12em;color:var(--muted);font-weight:600}
.sub{margin:0 0 18px;color:var(--muted);overflow-wrap:anywhere}
.stats{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin-bottom:16px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 18px;box-shadow:0 1px 2px rgba(20,30,50,.04)}
.stat .v{font-size:22px;font-weight:650;font-variant-numeric:tabular-nums;overflow-wrap:anywhere}
.stat .k{color:var(--muted);font-size:12.5px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(480px,1fr));gap:16px;margin-bottom:16px;align-items:start}
section.card{margin-bottom:16px;min-width:0}.grid section.card{margin-bottom:0}
h2{font-size:16px;margin:0 0 4px;font-weight:620}
h3{font-size:14px;margin:14px 0 6px;font-weight:600}
.note{color:var(--muted);margin:0 0 10px;font-size:13px}
svg.chart{display:block;width:100%;height:auto;max-width:100%;font-size:11px}
svg .grid{stroke:var(--grid);stroke-width:1}svg .axis{stroke:var(--muted);stroke-width:1}
svg .tick{fill:var(--muted);font-size:10.5px}svg .label{fill:var(--ink);font-size:11.5px}
svg .value{fill:var(--muted);font-size:10.5px;font-variant-numeric:tabular-nums}
svg .title{fill:var(--muted);font-size:11px}svg .mark{fill:var(--ink)}svg .mark-text{fill:var(--ink);font-size:11px;font-family:ui-monospace,Menlo,Consolas,monospace}
svg rect:hover,svg circle:hover{opacity:.8}
.legend{display:flex;flex-wrap:wrap;gap:14px;margin:2px 0 6px;font-size:12.5px}
.key i,.dot{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:6px;vertical-align:-1px}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-size:13px}
th{text-align:left;color:var(--muted);font-weight:560;border-bottom:1px solid var(--line);padding:6px 8px;white-space:nowrap}
td{border-bottom:1px solid var(--grid);padding:5px 8px;vertical-align:middle}
.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
.tok{display:inline-block;font-family:ui-monospace,"SF Mono",Menlo,Consolas,"DejaVu Sans Mono",monospace;font-size:12.5px;
background:var(--chip);border-radius:4px;padding:0 4px;margin:1px 1px;white-space:pre;line-height:1.6}
.tok .mk{color:var(--mk)}.tok.special{background:#fff3c4;color:#6b4e00}.tok.id{color:var(--muted)}
@media (prefers-color-scheme: dark){.tok.special{background:#4d4117;color:#f5e3a1}}
.chips{line-height:2;margin:4px 0}
.plus{color:var(--muted);margin:0 2px}
.muted{color:var(--muted);font-size:12px}
.share{display:inline-block;width:90px;height:8px;background:var(--grid);border-radius:4px;vertical-align:middle;overflow:hidden}
.share i{display:block;height:100%;border-radius:4px}
.sample{line-height:1.9;padding:10px 12px;border:1px solid var(--line);border-radius:8px;max-height:360px;overflow:auto}
.sample .tok{margin:0;border-radius:2px;padding:0 1px}
.sample .c0{background:var(--c0)}.sample .c1{background:var(--c1)}.sample .c2{background:var(--c2)}
.sample .c3{background:var(--c3)}.sample .c4{background:var(--c4)}
.sample .tok.same{outline:2px solid #e15759;outline-offset:-1px}
details summary{cursor:pointer;color:var(--muted);margin:6px 0}
code{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;color:var(--muted)}
footer{color:var(--muted);font-size:12px;margin-top:18px}
"""

# Hovering a token of a sample outlines every token with its id there; "ready" tells a test the
# script ran to its end.
_SCRIPT = """
(function(){
  document.querySelectorAll('.sample').forEach(function(sample){
    sample.addEventListener('mouseover', function(e){
      var t = e.target.closest('[data-id]'); if(!t) return;
      sample.querySelectorAll('.same').forEach(function(x){x.classList.remove('same')});
      sample.querySelectorAll('[data-id="'+t.dataset.id+'"]').forEach(function(x){x.classList.add('same')});
    });
  });
  JSON.parse(document.getElementById('bpecli-figures').textContent);
  document.documentElement.dataset.ready = 'yes';
})();
"""
