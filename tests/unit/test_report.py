"""The figures of tokenizers and shard folders, checked against the data they describe (tiktoken's
ids, the manifest, the document indexes, the shards' ids), and the page that draws them."""

import json
import os
import re

import numpy as np
import pytest

from bpecli import load, train
from bpecli.errors import InputError, OutputError
from bpecli.report import shard_figures, shard_stats, shards_page, tokenizer_figures, tokenizer_page, tokenizer_stats, write_report
from bpecli.report.kinds import kind_of, kinds
from bpecli.report.page import FIGURES_ID, SIGNATURE
from bpecli.report.tokenizer_stats import describe
from bpecli.shards import write_shards
from bpecli.vocab import render_token, token_parts

EOT = 50256


@pytest.mark.parametrize("token, shown", [
    (b" hello", "␣hello"),
    (b"hello ", "hello␣"),
    (b"\n\n", "\\n\\n"),
    (b"\t\r", "\\t\\r"),
    (b"\x00\x7f", "\\x00\\x7f"),
    (b"\xe2\x82", "\\xe2\\x82"),  # half a character: bytes, not text
    ("\u00a0\u200b".encode(), "\\u00a0\\u200b"),  # invisible characters: code points, never read as bytes
    ("é 😀".encode(), "é␣😀"),
    (b"\\n", "\\n"),  # a backslash stays one backslash...
])
def test_a_token_shows_what_would_not_show(token, shown):
    assert render_token(token) == shown


def test_markers_tell_an_escape_from_the_same_text():
    assert token_parts(b"\\n") == [("\\n", False)]  # ...and is text, where a newline is a marker
    assert token_parts(b" a\n\xe2") == [("␣", True), ("a", False), ("\\n\\xe2", True)]


@pytest.mark.parametrize("token, kind", [
    (b" the", "ASCII letters"), (b"ing", "ASCII letters"), (b" 42", "digits"), (b"\n\n", "whitespace"),
    (b"();", "punctuation & code"), (b"'s", "punctuation & code"), ("é".encode(), "Latin, non-ASCII"),
    (" при".encode(), "Cyrillic"), ("日本".encode(), "Han (CJK)"), ("ー".encode(), "Japanese kana"),
    ("—".encode(), "non-ASCII symbols"), (b"\xe2\x80", "pieces of characters"), (" ١٢".encode(), "digits"),
])
def test_kinds_of_tokens(token, kind):
    assert kind_of(token) == kind


def test_every_token_has_one_kind(gpt2):
    found = kinds(gpt2.ranks)
    assert sum(k["tokens"] for k in found) == len(gpt2.ranks)
    cyrillic = next(k for k in found if k["kind"] == "Cyrillic")
    assert all(re.fullmatch(r"␣?[а-яА-ЯёЁіїєґ]+", render_token(gpt2.decoder[e["id"]])) for e in cyrillic["examples"])


def test_describe_gives_the_first_and_last_merges_as_merges_txt_has_them(gpt2):
    info = describe(gpt2)
    assert info["merges"] == 50_000 and info["ordinary_tokens"] == 50_256
    assert info["first_merges"][0] == {"id": 256, "left": "␣", "right": "t", "left_id": 220, "right_id": 83}
    assert info["last_merges"][-1] == {"id": 50255, "left": "␣g", "right": "azed", "left_id": gpt2.ranks[b" g"],
                                       "right_id": gpt2.ranks[b"azed"]}  # merges.txt's last line: "Ġg azed"


def test_the_growth_curve_is_the_tokenizer_trained_to_each_size(fixtures, tmp_path):
    """Cut to its first merges, a tokenizer encodes as one trained to that size does (training is
    greedy: the first merges are the same); the curve runs from the bytes alone to the whole."""
    corpus = str(fixtures / "corpus.en")
    big = train([corpus], vocab_size=1100, special_tokens=["<|endoftext|>"])
    small = train([corpus], vocab_size=1025, special_tokens=["<|endoftext|>"])
    documents = [(fixtures / "corpus.en").read_bytes()]
    curve = tokenizer_stats.growth_curve(big, documents)
    assert [p["vocab_size"] for p in curve] == [256, 512, 1024, 1099]
    by_size = {p["vocab_size"]: p["bytes_per_token"] for p in curve}
    n_bytes = len(documents[0])
    assert by_size[256] == 1.0
    assert by_size[1024] == n_bytes / len(small.encode_ordinary(documents[0].decode()))
    assert by_size[1099] == n_bytes / len(big.encode_ordinary(documents[0].decode()))


def test_tokenizer_figures_on_a_corpus_are_tiktokens_counts(gpt2, gpt2_vocab, cl100k_file, tiktoken_gpt2, kernel_docs_sample,
                                                           fixtures, tmp_path):
    import tiktoken

    cl100k = load(cl100k_file)
    reference = {str(gpt2_vocab): tiktoken_gpt2, str(cl100k_file): tiktoken.Encoding(
        "cl100k", pat_str=cl100k.pattern, mergeable_ranks=cl100k.ranks, special_tokens=cl100k.special_tokens)}
    corpus = tmp_path / "docs.txt"
    corpus.write_text(kernel_docs_sample[:150_000], encoding="utf-8")
    german = str(fixtures / "german.txt")
    figures = tokenizer_figures(gpt2, name=str(gpt2_vocab), corpora=[str(corpus), german], compare={str(cl100k_file): cl100k})
    texts = {str(corpus): [d for d in corpus.read_text(encoding="utf-8").split("<|endoftext|>") if d],
             german: [(fixtures / "german.txt").read_text(encoding="utf-8")]}
    assert [c["sample_bytes"] for c in figures["corpus"]] == [sum(len(d.encode()) for d in texts[p]) for p in texts]
    for name, enc in reference.items():
        tokens = {path: sum(len(enc.encode_ordinary(d)) for d in docs) for path, docs in texts.items()}
        n_bytes = {path: sum(len(d.encode()) for d in docs) for path, docs in texts.items()}
        assert figures["bytes_per_token_by_input"][name] == {p: n_bytes[p] / tokens[p] for p in texts}
        assert figures["bytes_per_token"][name] == sum(n_bytes.values()) / sum(tokens.values())
        assert figures["growth"][name][-1]["bytes_per_token"] == figures["bytes_per_token"][name]
        assert figures["growth"][name][0] == {"vocab_size": 256, "bytes_per_token": 1.0}
        assert figures["sample"]["ids"][name] == enc.encode_ordinary(figures["sample"]["text"])
    words = figures["words"]
    for example in words["examples"]:
        word = example["word"].replace("␣", " ")
        assert {name: enc.encode_ordinary(word) for name, enc in reference.items()} == example["ids"]
        assert len({tuple(enc.decode_tokens_bytes(ids)) for enc, ids in zip(reference.values(), example["ids"].values())}) == 2
    assert words["split_differently"] >= len(words["examples"]) > 0 and figures["tokenizers"][str(cl100k_file)]["vocab_size"] == 100_261


def test_a_large_corpus_is_sampled_in_parts_spread_over_it(gpt2, tmp_path, kernel_docs_sample, monkeypatch):
    monkeypatch.setattr(tokenizer_stats, "SAMPLE_BYTES", 64_000)
    monkeypatch.setattr(tokenizer_stats, "INPUT_BYTES", 1_000)
    corpus = tmp_path / "big.txt"
    corpus.write_text(kernel_docs_sample, encoding="utf-8")
    (found,) = tokenizer_figures(gpt2, name="gpt2", corpora=[str(corpus)])["corpus"]
    assert found["input_bytes"] == corpus.stat().st_size and 32_000 <= found["sample_bytes"] < 200_000
    sample = tokenizer_stats.read_sample(str(corpus), ["<|endoftext|>"], 64_000)
    text = corpus.read_bytes()
    assert text.index(sample.documents[0]) > 10_000 and text.rindex(sample.documents[-1]) > len(text) // 2


# ---- shard folders -----------------------------------------------------------------------------

@pytest.fixture(scope="module")
def folder(tmp_path_factory, kernel_docs_sample, gpt2):
    """Two inputs in a train and a validation split, over several shards."""
    where = tmp_path_factory.mktemp("shards")
    first, second = where / "first.txt", where / "second.txt"
    first.write_text(kernel_docs_sample[:600_000], encoding="utf-8")
    second.write_text(kernel_docs_sample[600_000:900_000], encoding="utf-8")
    write_shards(gpt2, [str(first), str(second)], where / "out", shard_tokens=50_000, eot=EOT, val_fraction=0.2)
    return where


def split_ids(out, split):
    return np.concatenate([np.load(p) for p in sorted(out.glob(f"{split}_*.npy"))]).astype(np.int64)


def test_shard_figures_are_the_manifests_the_indexes_and_the_ids(folder, gpt2, tiktoken_gpt2):
    out = folder / "out"
    figures = shard_figures(out, tokenizer=gpt2)
    manifest = json.loads((out / "manifest.json").read_text())
    assert (figures["total_tokens"], figures["total_documents"]) == (manifest["total_tokens"], manifest["total_documents"])
    assert [{k: s[k] for k in ("file", "tokens", "documents", "sha256")} for s in figures["shards"]] == [
        {k: s[k] for k in ("file", "tokens", "documents", "sha256")} for s in manifest["shards"]]
    every = []
    for split, found in figures["splits"].items():
        assert {k: found[k] for k in ("tokens", "documents")} == {k: manifest["splits"][split][k] for k in ("tokens", "documents")}
        ids = split_ids(out, split)
        # documents end at each eot: their lengths from the ids alone
        lengths = np.diff(np.concatenate(([-1], np.flatnonzero(ids == EOT))))
        every.append(lengths)
        counts = [b["documents"][split] for b in figures["document_lengths"]["buckets"]]
        assert counts == [int(((lengths >= b["from"]) & (lengths <= b["to"])).sum()) for b in figures["document_lengths"]["buckets"]]
        assert sum(counts) == found["documents"] == len(lengths)
        text = gpt2.decode_bytes(ids[ids != EOT])
        assert found["bytes_per_token"] == len(text) / int((ids != EOT).sum())
        assert found["distinct_ids"] == len(np.unique(ids))
    lengths = np.concatenate(every)
    assert figures["document_lengths"]["max"] == lengths.max() and figures["document_lengths"]["median"] == np.median(lengths)
    ids = np.concatenate([split_ids(out, split) for split in figures["splits"]])
    values, counts = np.unique(ids, return_counts=True)
    order = np.lexsort((values, -counts))
    assert [(t["id"], t["count"]) for t in figures["most_frequent"]] == list(zip(values[order][:20].tolist(), counts[order][:20].tolist()))
    assert figures["most_frequent"][0]["token"] == render_token(gpt2.decoder[int(values[order][0])])
    assert figures["vocabulary"]["seen"] == len(values) and figures["vocabulary"]["never_seen"] == gpt2.vocab_size - len(values)
    assert figures["vocabulary"]["rare"] == int((counts < 10).sum())
    assert figures["zipf"][0] == {"rank": 1, "count": int(counts.max())}
    for path, found in zip(("first.txt", "second.txt"), figures["by_input"]):
        documents = [d for d in (folder / path).read_text(encoding="utf-8").split("<|endoftext|>") if d]
        tokens = sum(len(tiktoken_gpt2.encode_ordinary(d)) for d in documents)
        assert found["tokens"] == tokens + len(documents) and found["documents"] == len(documents)
        assert found["bytes_per_token"] == sum(len(d.encode()) for d in documents) / tokens


def test_worker_processes_and_small_blocks_count_the_same(folder, gpt2, monkeypatch):
    alone = shard_figures(folder / "out", tokenizer=gpt2)
    monkeypatch.setattr(shard_stats, "WORKERS_FROM", 0)
    monkeypatch.setattr(shard_stats, "WORK_ITEM", 30_011)
    monkeypatch.setattr(shard_stats, "COUNT_BLOCK", 4_099)
    assert shard_figures(folder / "out", tokenizer=gpt2, workers=2) == alone


def test_without_the_tokenizer_the_figures_are_of_ids(folder):
    figures = shard_figures(folder / "out")
    assert figures["bytes_per_token"] is None and "token" not in figures["most_frequent"][0]
    assert all(i["bytes_per_token"] is None and i["tokens"] > 0 for i in figures["by_input"])


def damage(out, how):
    """Damage a copy of a shard folder in one way."""
    manifest = json.loads((out / "manifest.json").read_text())
    shard = out / manifest["shards"][0]["file"]
    ids = np.load(shard)
    if how == "id past the vocabulary":
        ids[123] = 60_000
        np.save(shard, ids)
    elif how == "shorter than the manifest":
        np.save(shard, ids[:-1])
    elif how == "another dtype":
        np.save(shard, ids.astype(np.uint32))
    elif how == "an index out of order":
        index = shard.with_suffix(".idx")
        starts = np.load(index)
        np.save(open(index, "wb"), starts[::-1].copy())
    elif how == "an index that is a FIFO":
        index = shard.with_suffix(".idx")
        index.unlink()
        os.mkfifo(index)
    elif how == "tallies that do not add up":
        manifest["read"][0]["written"]["train"]["tokens"] += 1
        (out / "manifest.json").write_text(json.dumps(manifest))
    return shard


@pytest.mark.parametrize("how, message", [
    ("id past the vocabulary", "id 60,000 at position 123 is outside the vocabulary"),
    ("shorter than the manifest", "ids where the manifest says"),
    ("another dtype", "holds uint32 ids where the manifest says uint16"),
    ("an index out of order", "not the positions of documents"),
    ("an index that is a FIFO", "not a regular file; a document index is mapped from a file"),
    ("tallies that do not add up", "do not add up"),
])
def test_a_damaged_folder_is_one_clear_error(folder, tmp_path, how, message):
    import shutil

    out = tmp_path / "copy"
    shutil.copytree(folder / "out", out)
    damage(out, how)
    with pytest.raises(InputError, match=message):
        shard_figures(out)


def test_an_id_far_past_the_vocabulary_is_refused_before_anything_is_sized_from_it(gpt2, tmp_path):
    out = tmp_path / "wide"
    (tmp_path / "t.txt").write_text("hello world<|endoftext|>" * 50, encoding="utf-8")
    write_shards(gpt2, [str(tmp_path / "t.txt")], out, eot=EOT, dtype="uint32")
    ids = np.load(out / "shard_00000.npy")
    ids[7] = 2**32 - 1  # counted, it would take 32 GiB
    np.save(out / "shard_00000.npy", ids)
    with pytest.raises(InputError, match="id 4,294,967,295 at position 7"):
        shard_figures(out)


def test_the_tokenizer_given_must_be_the_one_that_wrote_the_shards(folder, cl100k_file):
    with pytest.raises(InputError, match="give the tokenizer it was encoded with"):
        shard_figures(folder / "out", tokenizer=load(cl100k_file))


def test_a_tokenizer_of_the_same_size_is_checked_id_by_id(folder, gpt2, tmp_path):
    """The manifest says what every id decodes to (decoder_sha256): the same tokenizer saved to
    other files reads the folder; one of the same size with two tokens swapped is refused."""
    from bpecli import Tokenizer

    assert json.loads((folder / "out" / "manifest.json").read_text())["decoder_sha256"] == gpt2.vocab.decoder_sha256
    again = load(gpt2.save(tmp_path / "again"))
    assert again.fingerprint != gpt2.fingerprint and again.vocab.decoder_sha256 == gpt2.vocab.decoder_sha256
    assert shard_figures(folder / "out", tokenizer=again)["same_tokenizer_files"] is False
    ranks = dict(gpt2.ranks)
    ranks[b" the"], ranks[b" of"] = ranks[b" of"], ranks[b" the"]
    swapped = Tokenizer(ranks=ranks, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    with pytest.raises(InputError, match="decodes its ids to other tokens"):
        shard_figures(folder / "out", tokenizer=swapped)


# ---- the page ----------------------------------------------------------------------------------

def embedded(html: str) -> dict:
    found = re.search(rf'<script type="application/json" id="{FIGURES_ID}">(.*?)</script>', html, re.S)
    return json.loads(found.group(1))


def self_contained(html: str) -> bool:
    """Nothing fetched from anywhere: no external script, style, image, font or frame."""
    return not re.search(r"(?i)\b(src|href)\s*=|<link|<iframe|@import|url\(", html) and "Content-Security-Policy" in html


def test_the_pages_are_self_contained_and_carry_their_figures(folder, gpt2, gpt2_vocab, cl100k_file, fixtures):
    cl100k = load(cl100k_file)
    figures = tokenizer_figures(gpt2, name=str(gpt2_vocab), corpora=[str(fixtures / "corpus.en")], compare={str(cl100k_file): cl100k})
    html = tokenizer_page(figures, {str(gpt2_vocab): gpt2, str(cl100k_file): cl100k})
    assert html.startswith(SIGNATURE) and self_contained(html)
    assert embedded(html) == json.loads(json.dumps(figures))
    assert "</script>" not in json.dumps(embedded(html)) and "␣t</span>" not in html  # markers are dimmed spans
    shards = shard_figures(folder / "out", tokenizer=gpt2)
    html = shards_page(shards, gpt2)
    assert self_contained(html) and embedded(html) == json.loads(json.dumps(shards))
    assert f"{shards['total_tokens']:,}" in html and f"{shards['total_documents']:,}" in html


def test_a_report_replaces_only_a_report(tmp_path):
    page = tmp_path / "report.html"
    page.write_text("<html>someone's page</html>")
    with pytest.raises(OutputError, match="is not a bpecli report"):
        write_report(page, SIGNATURE + "new")
    assert page.read_text() == "<html>someone's page</html>"
    page.write_text(SIGNATURE + "old")
    write_report(page, SIGNATURE + "new")
    assert page.read_text() == SIGNATURE + "new" and sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]
    with pytest.raises(OutputError, match="is a folder"):
        write_report(tmp_path, SIGNATURE)


def test_a_report_never_writes_through_a_file_or_link_beside_it(tmp_path):
    """What stands at any name beside the report stays as it is: the report's temporary is a new
    file of its own, never one that was there (a link is never followed)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("important")
    for name in (".report.html.partial", "report.html.partial"):
        (tmp_path / name).symlink_to(victim)
    write_report(tmp_path / "report.html", SIGNATURE + "page")
    assert victim.read_text() == "important" and (tmp_path / "report.html").read_text() == SIGNATURE + "page"
    assert not (tmp_path / "report.html").is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".report.html.partial", "report.html", "report.html.partial", "victim.txt"]


def test_a_report_never_replaces_a_link_nor_waits_on_a_fifo_at_its_name(tmp_path):
    """A link (even to a report, or to nowhere) is the user's: never replaced, nor written through;
    a FIFO there is refused at once (reading it would wait for a writer)."""
    old = tmp_path / "old.html"
    old.write_text(SIGNATURE + "old")
    for name, target in (("to-report.html", old), ("dangling.html", tmp_path / "none.html")):
        (tmp_path / name).symlink_to(target)
        with pytest.raises(OutputError, match="exists and is a link"):
            write_report(tmp_path / name, SIGNATURE + "new")
        assert (tmp_path / name).is_symlink()
    assert old.read_text() == SIGNATURE + "old"
    os.mkfifo(tmp_path / "fifo.html")
    with pytest.raises(OutputError, match="exists and is a FIFO"):
        write_report(tmp_path / "fifo.html", SIGNATURE + "new")


def test_a_special_token_far_past_the_other_ids_is_counted_in_its_place(gpt2, tmp_path):
    from bpecli import Tokenizer

    far = 2_000_000_000
    tok = Tokenizer(gpt2.ranks, special_tokens={"<|endoftext|>": far}, pattern=gpt2.pattern)
    (tmp_path / "t.txt").write_text("hello world<|endoftext|>" * 100, encoding="utf-8")
    write_shards(tok, [str(tmp_path / "t.txt")], tmp_path / "out", eot=far)
    figures = shard_figures(tmp_path / "out", tokenizer=tok)
    assert {"id": far, "count": 100, "share": 1 / 3, "token": "<|endoftext|>"} in figures["most_frequent"]  # ties: lower ids first
    assert figures["vocabulary"]["ids"] == 50_257 and figures["vocabulary"]["seen"] == 3 and figures["bytes_per_token"] == 5.5
    with pytest.raises(InputError, match="give the tokenizer"):  # 2e9 counts, one per id, would be 16 GB
        shard_figures(tmp_path / "out")


def test_an_id_between_the_tokenizers_ids_that_is_no_token_is_an_error(gpt2, tmp_path):
    from bpecli import Tokenizer

    tok = Tokenizer({t: i for t, i in gpt2.ranks.items() if i != 50_000}, special_tokens=gpt2.special_tokens, pattern=gpt2.pattern)
    (tmp_path / "t.txt").write_text("hello world<|endoftext|>" * 100, encoding="utf-8")
    write_shards(tok, [str(tmp_path / "t.txt")], tmp_path / "out", eot=EOT)
    ids = np.load(tmp_path / "out" / "shard_00000.npy")
    ids[5] = 50_000
    np.save(tmp_path / "out" / "shard_00000.npy", ids)
    with pytest.raises(InputError, match="id 50,000 occurs 1 times, and the tokenizer has no such token"):
        shard_figures(tmp_path / "out", tokenizer=tok)


def test_a_manifest_without_tallies_per_input_still_has_every_other_figure(folder, gpt2, tmp_path):
    """A folder an older bpecli wrote (or a run resumed from its journal) says nothing per input."""
    import shutil

    out = tmp_path / "older"
    shutil.copytree(folder / "out", out)
    manifest = json.loads((out / "manifest.json").read_text())
    for entry in manifest["read"]:
        del entry["written"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    figures = shard_figures(out, tokenizer=gpt2)
    assert figures["by_input"] is None and figures["splits"] == shard_figures(folder / "out", tokenizer=gpt2)["splits"]
    assert "Tokens per input are not recorded" in shards_page(figures, gpt2) and figures["same_tokenizer_files"] is True
