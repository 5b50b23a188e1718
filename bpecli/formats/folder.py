"""Read and write tokenizer files: vocab.json + merges.txt, tokenizer.json, .tiktoken, bpecli.json."""

from __future__ import annotations

import base64
import binascii
import codecs
import errno
import hashlib
import json
import os
import re
import stat
import zlib
from dataclasses import dataclass, replace
from functools import cache, cached_property
from itertools import accumulate, compress, islice, repeat
from operator import add, gt, itemgetter, le, lt
from pathlib import Path
from typing import cast

from .. import folders
from ..errors import BpecliError, OutputError, TokenizerFileError
from ..normalize import check as check_normalize, from_hugging_face, to_hugging_face
from ..pretokenize import PATTERNS, end_of_document, resolve_pattern
from ..vocab import MAX_ID, Vocab, check


# The special tokens of tiktoken's encodings, known by the number of ordinary tokens they have.
SPECIAL_PRESETS = {
    50256: {"<|endoftext|>": 50256},
    100256: {
        "<|endoftext|>": 100257,
        "<|fim_prefix|>": 100258,
        "<|fim_middle|>": 100259,
        "<|fim_suffix|>": 100260,
        "<|endofprompt|>": 100276,
    },
    199998: {"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
}


@cache
def byte_to_char() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character alphabet (space is "Ġ", newline "Ċ").

    Bytes that print as themselves keep their code point; the others take 256, 257, ... in order.
    """
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in printable}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + extra)
            extra += 1
    return table


@cache
def _alphabet() -> str:
    """byte_to_char as 256 characters, byte by byte: the table of a charmap codec, which maps
    bytes to the alphabet and back in C (a 200,000-token vocabulary spelled in 3 ms)."""
    return "".join(byte_to_char()[b] for b in range(256))


@cache
def _encoding_map():
    return codecs.charmap_build(_alphabet())


def token_to_str(token: bytes) -> str:
    """Example: b" hello" -> "Ġhello" """
    return codecs.charmap_decode(token, "strict", _alphabet())[0]


def str_to_token(text: str) -> bytes | None:
    """The inverse of token_to_str; None if text has a character outside the alphabet.

    Example: "Ġhello" -> b" hello"; "a b" -> None (a plain space is not in the alphabet)
    """
    try:
        return codecs.charmap_encode(text, "strict", _encoding_map())[0]
    except UnicodeEncodeError:
        return None


def strs_to_tokens(texts: list[str]) -> list[bytes | None]:
    """str_to_token of each text: in one encode when all their characters are in the alphabet
    (each character is one byte, so the bytes are cut where the texts end), else one by one."""
    joined = str_to_token("".join(texts))
    if joined is None:
        return list(map(str_to_token, texts))
    ends = list(accumulate(map(len, texts)))
    return list(map(joined.__getitem__, map(slice, [0, *ends[:-1]], ends)))


# ---------------------------------------------------------------------------------------------
# Writing


# The files `save` writes: the only ones it ever replaces or removes in a folder.
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "tokenizer.tiktoken", "bpecli.json")


def _own(name: str) -> bool:
    """Whether a name in a tokenizer folder is one bpecli writes (LOCK: older bpecli locked
    tokenizer folders by a file)."""
    return name in TOKENIZER_FILES or name == folders.LEGACY_LOCK


def save(vocab: Vocab, out_dir: str | Path, *, force: bool = False) -> Path:
    """Write every format into out_dir. The new files are built in a folder beside it, which is
    renamed into place, or exchanged with an existing out_dir in one step (see folders.py): a
    reader sees the old tokenizer or the new one, never a mix. An existing out_dir may hold only
    bpecli's own files (replaced with force); nothing else in it is ever touched."""
    out_dir = Path(out_dir)
    check_writable(out_dir, force=force)
    if out_dir.is_dir():
        return _replace_folder(vocab, out_dir)
    parent = out_dir.absolute().parent
    prefix = f".{out_dir.name}."
    try:
        parent.mkdir(parents=True, exist_ok=True)
        building, held = folders.make_building(parent, prefix)
    except OSError as e:
        raise OutputError(f"cannot write into {parent} ({e.strerror or e}); choose an --out you can write to") from None
    try:
        folders.remove_leftovers(parent, prefix, _own)  # of runs killed before their rename
        _write_all(vocab, building)
        umask = os.umask(0o22)
        os.umask(umask)
        building.chmod(0o777 & ~umask)  # mkdtemp makes it private; the result is an ordinary folder
        os.rename(building, out_dir)  # fails, rather than replaces, if out_dir appeared meanwhile
    except OSError as e:
        raise OutputError(f"cannot write {out_dir} ({e.strerror or e})") from None
    finally:
        os.close(held)
        folders.remove(building, _own)  # gone already once renamed
    return out_dir


def _write_all(vocab: Vocab, folder: Path) -> None:
    """Every format into folder, bpecli.json last with the size and CRC-32 of each other file: a
    folder whose files come from two tokenizers is refused on load, not read as one."""
    listing = _Listing.of(vocab)
    write_vocab_and_merges(vocab, folder, listing)
    write_tokenizer_json(vocab, folder / "tokenizer.json", listing)
    write_transformers_config(vocab, folder)
    write_tiktoken(vocab, folder / "tokenizer.tiktoken")
    written = {}
    for name in TOKENIZER_FILES[:-1]:
        data = (folder / name).read_bytes()
        written[name] = {"bytes": len(data), "crc32": f"{zlib.crc32(data):08x}"}
    write_bpecli_json(vocab, folder / "bpecli.json", files=written)


def check_writable(out_dir: str | Path, *, force: bool = False) -> None:
    """The errors save would give for out_dir, before any work is done."""
    out_dir = Path(out_dir)
    if out_dir.is_symlink() and not out_dir.exists():
        try:
            os.stat(out_dir)
        except OSError as e:
            raise OutputError(f"{out_dir} is a symbolic link that leads nowhere ({folders.why(e)}); "
                              "choose another --out, or fix the link") from None
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"{out_dir} is a file; --out names a folder for the tokenizer files")
    if out_dir.is_dir():
        _check_own_files(out_dir, force)
        if force and not folders.can_swap(Path(os.path.realpath(out_dir))) and not os.access(out_dir, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write into {out_dir}; choose an --out you can write to")
    else:
        parent = out_dir.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write into {parent}; choose an --out you can write to")


def _check_own_files(out_dir: Path, force: bool) -> None:
    try:
        present = [p.name for p in out_dir.iterdir()]
    except OSError as e:
        raise OutputError(f"cannot read {out_dir} ({e.strerror or e})") from None
    foreign = sorted(name for name in present if not _own(name) and not name.endswith(folders.TEMPORARY))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise OutputError(f"{out_dir} holds files bpecli did not write ({shown}); choose a new or empty folder for --out")
    if set(present) - {folders.LEGACY_LOCK} and not force:
        raise OutputError(f"{out_dir} holds a tokenizer already; use --force to replace its files")


def _replace_folder(vocab: Vocab, out_dir: Path) -> Path:
    """Replace an existing folder that holds nothing but bpecli's files, or nothing (see
    check_writable): a new generation is built beside it and exchanged with it, and the old one
    removed. A link to the folder stays a link to it; the folder keeps its mode."""
    target = Path(os.path.realpath(out_dir))
    held = folders.lock(target)  # a second run replacing the same folder waits for none: it is refused
    try:
        _check_own_files(target, True)  # again: nothing changes it now but a user
        # the working folder stays where the shell that ran bpecli is (a swap would leave it in the old one)
        if not folders.can_swap(target) or _is_working_folder(target):
            _replace_inside(vocab, target)
            return out_dir
        prefix = f".{target.name}."
        folders.remove_leftovers(target.parent, prefix, _own)  # of runs killed midway
        try:
            building, building_held = folders.make_building(target.parent, prefix)
        except OSError as e:
            raise OutputError(f"cannot write into {target.parent} ({e.strerror or e})") from None
        try:
            _write_all(vocab, building)
            folders.same_settings(building, target)
            try:
                folders.swap_in(building, target)  # building now holds the old generation
            except OSError as e:
                if e.errno not in (errno.EBUSY, errno.EXDEV):
                    raise
                _replace_inside(vocab, target)  # a mount point that can_swap could not tell (a bind mount)
                return out_dir
            arrived = sorted(name for name in os.listdir(building) if not _own(name)
                             and not name.endswith(folders.TEMPORARY))
            if arrived:  # a user's file, written into the folder as it was replaced: put the old one back
                folders.swap_in(building, target)
                raise OutputError(f"{out_dir} gained files bpecli did not write ({', '.join(arrived[:3])}) while "
                                  "bpecli replaced it; it was left as it was")
        except OSError as e:
            raise OutputError(f"cannot write {out_dir} ({e.strerror or e})") from None
        finally:
            os.close(building_held)
            folders.remove(building, _own)  # the old generation, or the new one on a failure
    finally:
        os.close(held)
    return out_dir


def _is_working_folder(folder: Path) -> bool:
    try:
        return os.path.samefile(folder, ".")
    except OSError:
        return False


def _replace_inside(vocab: Vocab, target: Path) -> None:
    """Where the folder cannot be renamed (a mount point, a parent bpecli may not write), its files
    are replaced one by one, bpecli.json first: it names the sizes and checksums of the files it
    goes with, so bpecli refuses the folder until the last of them is in place. Other programs
    reading the files meanwhile may see a mix."""
    folders.remove_leftovers(target, ".", _own)
    try:
        building, held = folders.make_building(target, ".")
    except OSError as e:
        raise OutputError(f"cannot write into {target} ({e.strerror or e}); choose an --out you can write to") from None
    try:
        _write_all(vocab, building)
        first = ("bpecli.json", "tokenizer.tiktoken")
        for name in (*first, *(name for name in TOKENIZER_FILES if name not in first)):
            os.replace(building / name, target / name)
    except OSError as e:
        raise OutputError(f"cannot write {target} ({e.strerror or e})") from None
    finally:
        os.close(held)
        folders.remove(building, _own)


@dataclass
class _Listing:
    """The tokens as vocab.json, merges.txt and tokenizer.json spell them, made once for all three."""

    ordered: list[tuple[int, str]]  # (id, token in the byte alphabet) by id, specials as themselves
    merges: list[str]  # "left right", in the byte alphabet
    specials: list[int]  # the ids of the special tokens

    @classmethod
    def of(cls, vocab: Vocab) -> _Listing:
        """No sort where the tokens come by id (as trained and loaded ones do) and the merges
        checked by C-level maps: a save of 200,000 tokens spent 0.3 s here."""
        tokens, ids = list(vocab.ranks), list(vocab.ranks.values())
        # every token spelled at once (one decode, one translate, in C), then cut apart
        spelled = token_to_str(b"".join(tokens))
        ends = list(accumulate(map(len, tokens)))
        names = list(map(spelled.__getitem__, map(slice, [0, *ends[:-1]], ends)))
        ordinary = list(zip(ids, names))
        if not all(map(lt, ids, islice(ids, 1, None))):  # not listed by id, as trained or loaded ones are
            ordinary.sort()
            names = list(map(itemgetter(1), ordinary))
        merged = list(compress(names, map(gt, map(len, names), repeat(1))))  # one character per byte
        lefts = list(map(len, map(itemgetter(0), vocab.merges)))
        if list(map(len, merged)) == list(map(add, lefts, map(len, map(itemgetter(1), vocab.merges)))):
            # merge i made the i-th of them: cut it where its left part ends
            merges = [f"{name[:cut]} {name[cut:]}" for name, cut in zip(merged, lefts)]
        else:
            by_id, ranks = dict(ordinary), vocab.ranks
            merges = [f"{by_id[ranks[a]]} {by_id[ranks[b]]}" for a, b in vocab.merges]
        specials = sorted((rank, token) for token, rank in vocab.special_tokens.items())
        if specials and ordinary and specials[0][0] < ordinary[-1][0]:  # specials among the ordinary ids
            ordered = sorted(ordinary + specials)
        else:
            ordered = ordinary + specials
        return cls(ordered, merges, [rank for rank, _ in specials])

    @cached_property
    def ordinary_json(self) -> str:
        """{token: id} of the ordinary tokens (specials left out, as tokenizer.json's model has
        them), as _indented_json writes it at depth 0."""
        specials = set(self.specials)
        return _indented_json({token: rank for rank, token in self.ordered if rank not in specials})

    def vocab_json(self) -> str:
        """vocab.json: every token, specials too, by id."""
        if self.specials and min(self.specials) > self.ordered[-len(self.specials) - 1][0]:  # specials come last
            tail = ",\n ".join(f"{json.dumps(token, ensure_ascii=False)}: {rank}" for rank, token in self.ordered[-len(self.specials):])
            return self.ordinary_json[:-2] + ",\n " + tail + "\n}"
        return _indented_json({token: rank for rank, token in self.ordered})


def _indented_json(value: dict | list, depth: int = 0) -> str:
    """json.dumps(value, ensure_ascii=False, indent=1) for a flat dict or list, as it reads at depth
    in an indented document, by json's C encoder (the indenting encoder is Python: seconds for a
    vocabulary of 200,000 tokens)."""
    pad = "\n" + " " * (depth + 1)
    inner = json.dumps(value, ensure_ascii=False, separators=("," + pad, ": "))[1:-1]
    brackets = "{}" if isinstance(value, dict) else "[]"
    return brackets[0] + (pad + inner + "\n" + " " * depth if inner else "") + brackets[1]


def write_vocab_and_merges(vocab: Vocab, folder: Path, listing: _Listing | None = None) -> None:
    """GPT-2 / Hugging Face byte-level vocab.json and merges.txt."""
    listing = listing or _Listing.of(vocab)
    (folder / "vocab.json").write_text(listing.vocab_json() + "\n", encoding="utf-8")
    lines = "".join(map(add, listing.merges, repeat("\n")))
    (folder / "merges.txt").write_text("#version: 0.2\n" + lines, encoding="utf-8")


def hugging_face_regex(pattern: str) -> str:
    r"""pattern as Hugging Face's regex engine (Oniguruma) reads it the same: a possessive interval
    X{n,m}+ becomes the atomic group (?>X{n,m}), since Oniguruma reads {n,m}+ as "{n,m}, one or
    more times". Its ++, *+ and ?+ are possessive already.

    Example: r"\p{N}{1,3}+| ?\p{L}++" -> r"(?>\p{N}{1,3})| ?\p{L}++"
    """
    out: list[str] = []
    atom = 0  # where in out the last atom starts
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\":
            end = i + 2
            if pattern[i + 1 : i + 2] in ("p", "P", "x") and pattern[end : end + 1] == "{":
                end = pattern.index("}", end) + 1
            atom = len(out)
            out.append(pattern[i:end])
            i = end
            continue
        if char == "[":
            end = i + 1
            if pattern[end : end + 1] == "^":
                end += 1
            if pattern[end : end + 1] == "]":
                end += 1
            while pattern[end] != "]":
                end += 2 if pattern[end] == "\\" else 1
            atom = len(out)
            out.append(pattern[i : end + 1])
            i = end + 1
            continue
        if char == "(":
            atom = len(out)
            out.append(char)
            i += 1
            continue
        if char == ")":
            depth, at = 0, len(out)
            while at > 0:  # back to the group's opening parenthesis
                at -= 1
                depth += out[at] == ")"
                if out[at] == "(":
                    if depth == 0:
                        break
                    depth -= 1
            atom = at
            out.append(char)
            i += 1
            continue
        interval = _INTERVAL.match(pattern, i)
        if interval and interval.group(0).endswith("+"):
            out[atom:] = ["(?>" + "".join(out[atom:]) + interval.group(0)[:-1] + ")"]
            i = interval.end()
            continue
        if interval:
            out.append(interval.group(0))
            i = interval.end()
            continue
        if char not in "|*+?":
            atom = len(out)
        out.append(char)
        i += 1
    return "".join(out)


_INTERVAL = re.compile(r"\{\d+(?:,\d*)?\}\+?")


def write_tokenizer_json(vocab: Vocab, path: Path, listing: _Listing | None = None) -> None:
    """A Hugging Face tokenizer.json: Split on the pattern, ByteLevel bytes, BPE, ByteLevel decoder.

    ignore_merges makes a pre-token that is itself in the vocabulary one token, as tiktoken does.
    """
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": rank, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
            for token, rank in sorted(vocab.special_tokens.items(), key=lambda item: item[1])
        ],
        "normalizer": to_hugging_face(vocab.normalize),
        "pre_tokenizer": {
            "type": "Sequence",
            "pretokenizers": [
                {"type": "Split", "pattern": {"Regex": hugging_face_regex(vocab.pattern)}, "behavior": "Isolated", "invert": False},
                {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
            ],
        },
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "model": {
            "type": "BPE",
            "dropout": None,
            "unk_token": None,
            "continuing_subword_prefix": None,
            "end_of_word_suffix": None,
            "fuse_unk": False,
            "byte_fallback": False,
            "ignore_merges": True,
            "vocab": "\0vocab",  # the two long parts go in below, by _indented_json
            "merges": "\0merges",
        },
    }
    listing = listing or _Listing.of(vocab)
    text = json.dumps(document, ensure_ascii=False, indent=1)
    text = text.replace('"\\u0000vocab"', listing.ordinary_json.replace("\n", "\n  "), 1)  # at depth 2
    text = text.replace('"\\u0000merges"', _indented_json(listing.merges, depth=2), 1)
    path.write_text(text + "\n", encoding="utf-8")


def write_transformers_config(vocab: Vocab, folder: Path) -> None:
    """tokenizer_config.json and special_tokens_map.json, so that transformers'
    AutoTokenizer.from_pretrained(folder) loads tokenizer.json as it is (nothing added to the ids,
    nothing "cleaned up" when decoding) and knows the document separator as its eos token."""
    eos = end_of_document(vocab.special_tokens)
    specials = {"eos_token": eos} if eos else {}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1 << 30,
        "added_tokens_decoder": {
            str(rank): {"content": token, "lstrip": False, "normalized": False, "rstrip": False,
                        "single_word": False, "special": True}
            for token, rank in sorted(vocab.special_tokens.items(), key=lambda item: item[1])
        },
        **specials,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (folder / "special_tokens_map.json").write_text(json.dumps(specials, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


def write_tiktoken(vocab: Vocab, path: Path) -> None:
    """tiktoken's ranks file: base64 of the token's bytes, a space, its rank; one per line."""
    lines = [
        f"{binascii.b2a_base64(token, newline=False).decode('ascii')} {rank}\n"
        for token, rank in sorted(vocab.ranks.items(), key=lambda item: item[1])
    ]
    path.write_text("".join(lines), encoding="ascii")


def write_bpecli_json(vocab: Vocab, path: Path, *, files: dict[str, dict] | None = None) -> None:
    """bpecli.json: the pattern, special tokens and normalization the ranks file does not hold, and
    (files) the size and CRC-32 of each file written with it."""
    document = {
        "format_version": folders.FORMAT_VERSION,
        "pattern": vocab.pattern,
        "special_tokens": vocab.special_tokens,
        **({"normalize": list(vocab.normalize)} if vocab.normalize else {}),
        "vocab_size": vocab.vocab_size,
        "ranks_file": "tokenizer.tiktoken",
        **({"files": files} if files else {}),
    }
    path.write_text(json.dumps(document, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Reading


def load(path: str | Path, *, pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Vocab:
    """The vocabulary of a tokenizer in any known format.

    path may be a folder written by `bpecli train`, a vocab.json with merges.txt beside it, a
    Hugging Face tokenizer.json, or a .tiktoken ranks file (pattern defaults to cl100k there).
    pattern and special_tokens, when given, replace what the files say. The files of one folder
    are read through one descriptor of it: all of one generation, even while `train --force`
    replaces the folder.
    """
    path = Path(path)
    try:
        found = os.stat(path)
    except FileNotFoundError:
        raise TokenizerFileError(f"{path}: no such tokenizer file or folder") from None
    except OSError as e:
        raise TokenizerFileError(f"{path}: cannot read ({folders.why(e)})") from None
    if stat.S_ISDIR(found.st_mode):
        folder, name = path, None
    else:
        folder, name = path.parent, path.name
    generation = _Reading(folder)
    with generation:
        if name is None:
            name = next((name for name in ("bpecli.json", "tokenizer.json", "vocab.json", "tokenizer.tiktoken")
                         if generation.has(name)), None)
            if name is None:
                raise TokenizerFileError(
                    f"{path}: no tokenizer here (expected bpecli.json, tokenizer.json, vocab.json or a .tiktoken file)"
                )
        try:
            vocab = _load_file(generation, name, pattern, special_tokens)
        except (KeyError, TypeError, AttributeError, ValueError) as e:  # a shape no check below foresaw
            raise TokenizerFileError(f"{path}: corrupt or of no known tokenizer format ({type(e).__name__}: "
                                     f"{str(e)[:200]})") from None
    # the digests of the files as read, so that the fingerprint is of these and never of later ones
    return replace(vocab, file_digests=tuple(generation.digests[Path(name).name] for name in vocab.files))


def _load_file(generation: folders.Generation, name: str, pattern: str | None,
               special_tokens: dict[str, int] | None) -> Vocab:
    if name in TOKENIZER_FILES and name != "bpecli.json" and generation.has("bpecli.json"):
        # one file of a folder `bpecli train` wrote: the folder says its pattern and special tokens
        return _load_file(generation, "bpecli.json", pattern, special_tokens)
    shown = generation.path / name
    if Path(name).suffix == ".tiktoken":
        ranks = _parse_tiktoken(generation.read(name), shown, quote=not generation.linked(name))
        specials = special_tokens if special_tokens is not None else SPECIAL_PRESETS.get(len(ranks), {})
        return _checked(shown, ranks, specials, _pattern(pattern, "cl100k", "the default for .tiktoken files"), [shown])
    document = _read_json(generation, name)
    if name == "bpecli.json" or isinstance(document.get("format_version"), int) and "ranks_file" in document:
        return _load_bpecli(generation, name, document, pattern, special_tokens)
    if isinstance(document.get("model"), dict):
        return _load_hugging_face(shown, document, pattern, special_tokens)
    return _load_gpt2(generation, name, document, pattern, special_tokens)


# A .tiktoken file as tiktoken writes it: every line "base64 rank"; such a file is read in a few
# calls over all of it, any other line by line (which says where a bad line is).
_TIKTOKEN_LINES = re.compile(r"(?:[A-Za-z0-9+/]+={0,2} [0-9]{1,10}\n)*")


def read_tiktoken(path: Path) -> dict[bytes, int]:
    """The ranks of a .tiktoken file: base64 of a token's bytes, a space, its rank; one per line."""
    path = Path(path)
    with folders.Generation(path.parent) as generation:
        return _parse_tiktoken(generation.read(path.name), path, quote=not generation.linked(path.name))


def _parse_tiktoken(data: bytes, path: Path, *, quote: bool) -> dict[bytes, int]:
    """The ranks in a .tiktoken file's bytes. quote=False keeps the file's lines out of the errors
    (a file reached by a symbolic link may be anyone's)."""
    try:
        text = data.decode("ascii")
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{path}: byte 0x{data[e.start]:02x} at offset {e.start:,} is not ASCII; a .tiktoken "
                                 "file holds lines of 'base64 rank'") from None
    if _TIKTOKEN_LINES.fullmatch(text):
        fields = text.split()
        try:
            ranks = dict(zip(map(binascii.a2b_base64, fields[::2]), map(int, fields[1::2])))
            if 2 * len(ranks) == len(fields):  # else a token listed twice: the lines below say where
                return ranks
        except binascii.Error:  # padding that does not fit: the lines below say where
            pass
    ranks = {}
    lines: dict[bytes, int] = {}  # token -> the line it was on
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        shown = f" {line[:60]!r}" if quote else ""
        parts = line.split()
        if len(parts) != 2 or not parts[1].removeprefix("-").isdigit():  # ASCII digits: the text is ASCII
            raise TokenizerFileError(f"{where}: error parsing line{shown} (expected 'base64 rank')")
        if len(parts[1]) > len(str(MAX_ID)):  # (the range check after this names ids of a few digits)
            raise TokenizerFileError(f"{where}: a rank of {len(parts[1]):,} characters is out of range: bpecli's ids "
                                     f"are 0 to {MAX_ID:,}")
        try:
            token = base64.b64decode(parts[0], validate=True)
        except binascii.Error:
            raise TokenizerFileError(f"{where}: error parsing line{shown} (expected 'base64 rank')") from None
        if token in ranks:
            raise TokenizerFileError(f"{where}: the token of line {lines[token]} is listed again; a token has one rank")
        ranks[token], lines[token] = int(parts[1]), number
    return ranks


def _text(data: bytes, path: Path) -> str:
    """data as UTF-8 text (a byte-order mark left out)."""
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise TokenizerFileError(f"{path}: cannot read (not UTF-8: byte 0x{data[e.start]:02x} at offset {e.start:,})") from None


def _read_json(generation: folders.Generation, name: str) -> dict:
    path = generation.path / name
    try:
        document = folders.parse_json(generation.read(name))
    except folders.Unreadable as e:
        raise TokenizerFileError(f"{path}{'' if e.line is None else f':{e.line}'}: {e}") from None
    if not isinstance(document, dict):
        raise TokenizerFileError(f"{path}: not a tokenizer file (expected a JSON object, found {_kind(document)})")
    return document


def _kind(value) -> str:
    """The JSON type of a value, for messages: "a list", "a number"..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true or false"
    return {dict: "an object", list: "a list", str: "text", int: "a number", float: "a number"}.get(type(value), "a value")


def _plain_name(name) -> bool:
    """Whether name is a file name alone, which can only be a file of the folder it is read in."""
    return (isinstance(name, str) and name not in ("", ".", "..") and "/" not in name and "\0" not in name
            and os.sep not in name and (os.altsep is None or os.altsep not in name))


def _load_bpecli(generation: folders.Generation, name: str, document: dict, pattern: str | None,
                 specials: dict | None) -> Vocab:
    path = generation.path / name
    version = document.get("format_version")
    if type(version) is not int or version != folders.FORMAT_VERSION:
        raise TokenizerFileError(
            f"{path}: format_version {json.dumps(version)[:20]} is not {folders.FORMAT_VERSION}, the one this bpecli reads; "
            "retrain it, or use a bpecli of that version"
        )
    ranks_file = document.get("ranks_file", "tokenizer.tiktoken")
    if not _plain_name(ranks_file):
        raise TokenizerFileError(f"{path}: ranks_file {str(ranks_file)[:60]!r} is not the name of a file in this folder "
                                 "(such as \"tokenizer.tiktoken\")")
    data = generation.read(ranks_file)
    _check_written(path, document.get("files"), ranks_file, data)
    ranks_path = generation.path / ranks_file
    ranks = _parse_tiktoken(data, ranks_path, quote=not generation.linked(ranks_file))
    found = document.get("special_tokens", {})
    if not isinstance(found, dict) or not all(type(rank) is int for rank in found.values()):
        raise TokenizerFileError(f"{path}: 'special_tokens' should map each special token to its id, "
                                 "e.g. {\"<|endoftext|>\": 50256}")
    size = document.get("vocab_size", len(ranks) + len(found))
    if size != len(ranks) + len(found) or type(size) is not int:
        raise TokenizerFileError(f"{path}: says {json.dumps(size)[:20]} tokens, but {ranks_file} and its special tokens "
                                 f"have {len(ranks) + len(found):,}; the folder mixes files of two tokenizers: "
                                 "train it again, or copy the whole folder")
    return _checked(
        path,
        ranks,
        specials if specials is not None else found,
        _pattern(pattern, document.get("pattern") or "gpt2", f"from {path}"),
        [path, ranks_path],
        normalize=_normalize_of(path, document.get("normalize") or []),
    )


def _check_written(path: Path, files, ranks_file: str, data: bytes) -> None:
    """The ranks file is the one bpecli.json was written with, if it recorded it (bpecli writes
    the size and CRC-32 of each file since it replaces folders whole)."""
    if files is None:  # from a bpecli that recorded none
        return
    entry = files.get(ranks_file) if isinstance(files, dict) else None
    if not isinstance(entry, dict) or type(entry.get("bytes")) is not int or not isinstance(entry.get("crc32"), str):
        raise TokenizerFileError(f"{path}: its record of {ranks_file} (in 'files') is missing or damaged; "
                                 "train the tokenizer again")
    if len(data) != entry["bytes"]:
        differs = f"{len(data):,} bytes, where it recorded {entry['bytes']:,}"
    elif f"{zlib.crc32(data):08x}" != entry["crc32"].lower():
        differs = "another CRC-32 than it recorded"
    else:
        return
    raise TokenizerFileError(f"{path}: {ranks_file} is not the file written with it ({differs}); the folder mixes "
                             "files of two tokenizers: train it again, or copy the whole folder")


def _load_gpt2(generation: folders.Generation, name: str, vocab: dict, pattern: str | None,
               specials: dict | None) -> Vocab:
    """vocab.json + merges.txt: a multi-byte entry that no merge makes is a special token."""
    path = generation.path / name
    # merges.txt beside it, or gpt2_merges.txt beside gpt2_vocab.json
    candidates = [name.replace("vocab.json", "merges.txt"), "merges.txt"]
    merges_name = next((c for c in candidates if c != name and generation.has(c)), None)
    if merges_name is None:
        raise TokenizerFileError(f"{path}: expected merges.txt beside this vocab.json")
    merges_path = generation.path / merges_name
    text = _text(generation.read(merges_name), merges_path)
    quote = not generation.linked(merges_name)
    lines = text.splitlines()
    header = 1 if lines and lines[0].startswith("#version") else 0
    if "" in lines or "#version" in text[len(lines[0]) if header else 0 :]:
        merges = [line for line in lines if line and not line.startswith("#version")]
    else:  # as merges.txt files are written: one #version line first, no empty lines
        merges = lines[header:]
    if list(map(str.count, merges, repeat(" "))).count(1) != len(merges):  # each line: exactly one space
        number, line = next((n, line) for n, line in enumerate(lines, 1) if line and not line.startswith("#version") and line.count(" ") != 1)
        shown = f" {line[:60]!r}" if quote else ""
        raise TokenizerFileError(f"{merges_path}:{number}: error parsing line{shown} (expected 'left right')")
    made = list(map(str.replace, merges, repeat(" "), repeat(""), repeat(1)))
    _check_merges(merges_path, merges, made, " ".join(merges).split(" "), vocab, quote=quote)
    ranks, found_specials = _split_vocab(path, vocab, set(made))
    pattern = _pattern(pattern, "gpt2", "the default for vocab.json")
    return _checked(path, ranks, specials if specials is not None else found_specials, pattern, [path, merges_path])


def _load_hugging_face(path: Path, document: dict, pattern: str | None, specials: dict | None) -> Vocab:
    """A Hugging Face tokenizer.json of a byte-level BPE. Whatever would make Hugging Face give
    other ids than bpecli (a normalizer, a template that adds tokens, dropout...) is refused,
    naming it: loading it anyway would be silently wrong."""
    model = document["model"]  # an object (see _load_file)
    if model.get("type", "BPE") != "BPE":
        raise TokenizerFileError(f"{path}: holds a {str(model.get('type'))[:40]} model; bpecli reads byte-level BPE only")
    _check_shapes(path, document)
    try:  # the normalizer first: a step bpecli does not apply is refused by name
        steps = from_hugging_face(document.get("normalizer"), str(path))
    except BpecliError as e:
        raise TokenizerFileError(str(e)) from None
    _refuse_unsupported(path, document, model)
    added_tokens = document.get("added_tokens") or []
    added = {t["content"]: t["id"] for t in added_tokens}
    if len(added) != len(added_tokens):
        twice = next(t["content"] for t in added_tokens if [u["content"] for u in added_tokens].count(t["content"]) > 1)
        raise TokenizerFileError(f"{path}: added token {twice[:60]!r} is listed twice in added_tokens")
    vocab = {token: rank for token, rank in model["vocab"].items() if token not in added}
    merges = model.get("merges") or []
    for number, merge in enumerate(merges):  # "left right", or [left, right] (tokenizers 0.20 on)
        if not (isinstance(merge, str) and merge.count(" ") == 1 or
                isinstance(merge, list) and len(merge) == 2 and all(isinstance(part, str) for part in merge)):
            raise TokenizerFileError(f"{path}: merge {number} ({str(merge)[:60]!r}) is not a pair of tokens "
                                     "(expected \"left right\" or [\"left\", \"right\"])")
    made = [m.replace(" ", "", 1) if isinstance(m, str) else "".join(m) for m in merges]
    parts = [part for m in merges for part in (m.split(" ") if isinstance(m, str) else m)]
    _check_merges(path, merges, made, parts, model["vocab"])
    # entries no merge makes and no added token names (GPT-2's <|endoftext|> in a plain
    # ByteLevelBPETokenizer) become special tokens, as they do from vocab.json
    ranks, extra = _split_vocab(path, vocab, set(made))
    found = _hugging_face_pattern(path, document.get("pre_tokenizer"))
    return _checked(path, ranks, specials if specials is not None else {**extra, **added}, _pattern(pattern, found, f"from {path}"),
                    [path], normalize=steps)


# The steps of a tokenizer.json, and the field of each that lists the steps of a Sequence.
_STEPS = {"normalizer": "normalizers", "pre_tokenizer": "pretokenizers", "post_processor": "processors",
          "decoder": "decoders"}


def _check_shapes(path: Path, document: dict) -> None:
    """Each part of a tokenizer.json that bpecli reads is of the JSON type Hugging Face writes:
    a file that says something else in a field is named, not half read."""
    model = document["model"]
    if not isinstance(model.get("vocab"), dict):
        raise TokenizerFileError(f"{path}: its model's vocab is {_kind(model.get('vocab'))}, not an object of token: id")
    for field, value in (("added_tokens", document.get("added_tokens")), ("model's merges", model.get("merges"))):
        if value is not None and not isinstance(value, list):
            raise TokenizerFileError(f"{path}: its {field} is {_kind(value)}, not a list")
    for field, inner in _STEPS.items():
        step = document.get(field)
        steps = [step]
        if isinstance(step, dict) and step.get("type") == "Sequence":
            listed = step.get(inner)
            if not isinstance(listed, list):
                raise TokenizerFileError(f"{path}: its {field} is a Sequence whose {inner} is {_kind(listed)}, not a list")
            steps = listed
        for part in steps:
            if part is None and part is step:
                continue
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise TokenizerFileError(f"{path}: its {field} holds {_kind(part)} where a step such as "
                                         "{\"type\": \"ByteLevel\"} belongs")


def _refuse_unsupported(path: Path, document: dict, model: dict) -> None:
    def kind(step):
        return step.get("type") if isinstance(step, dict) else step

    def only_byte_level(step) -> bool:  # ByteLevel steps change offsets, never ids
        if step is None:
            return True
        steps = step.get("processors") or step.get("decoders") or [] if kind(step) == "Sequence" else [step]
        return all(kind(s) == "ByteLevel" for s in steps)

    if not only_byte_level(document.get("post_processor")):
        raise TokenizerFileError(f"{path}: its post_processor ({kind(document['post_processor'])}) adds tokens "
                                 "bpecli does not add, so its ids would differ from Hugging Face's")
    if not only_byte_level(document.get("decoder")):
        raise TokenizerFileError(f"{path}: its decoder ({kind(document['decoder'])}) is not byte-level; bpecli "
                                 "would decode to other text")
    for option, harmless in (("dropout", (None, 0, 0.0)), ("continuing_subword_prefix", (None, "")),
                             ("end_of_word_suffix", (None, "")), ("byte_fallback", (None, False))):
        if model.get(option) not in harmless:
            raise TokenizerFileError(f"{path}: its BPE model sets {option}={model[option]!r}, which bpecli does not apply")
    for token in document.get("added_tokens") or []:
        if not isinstance(token, dict) or not isinstance(token.get("content"), str) or type(token.get("id")) is not int:
            raise TokenizerFileError(f"{path}: an entry of added_tokens lacks its content or id")
        stripped = [option for option in ("lstrip", "rstrip", "single_word") if token.get(option)]
        if stripped:
            raise TokenizerFileError(f"{path}: added token {token['content']!r} sets {', '.join(stripped)}, "
                                     "which bpecli does not apply")


def _hugging_face_pattern(path: Path, pre_tokenizer: dict | None) -> str:
    """The pattern of the two byte-level pre-tokenizers bpecli reproduces exactly: ByteLevel with
    its own (GPT-2) regex, or a Split on a regex (each match a piece) then ByteLevel without one."""
    steps = [pre_tokenizer] if pre_tokenizer else []
    if pre_tokenizer and pre_tokenizer.get("type") == "Sequence":
        steps = pre_tokenizer.get("pretokenizers") or []
    kinds = [step.get("type") if isinstance(step, dict) else None for step in steps]
    for step in steps:
        if isinstance(step, dict) and step.get("type") == "ByteLevel" and step.get("add_prefix_space"):
            raise TokenizerFileError(f"{path}: ByteLevel add_prefix_space=true is not supported")
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
        return PATTERNS["gpt2"]
    if kinds == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True):
        split = steps[0]
        found = split.get("pattern")
        regex = found.get("Regex") if isinstance(found, dict) else None
        if not isinstance(regex, str) or split.get("behavior") != "Isolated" or split.get("invert"):
            raise TokenizerFileError(f"{path}: its Split pre-tokenizer is not a regex whose matches are the pieces "
                                     "(behavior Isolated, invert false), the one bpecli reproduces")
        # a preset as written for Oniguruma is the preset (and keeps its vectorised splitter)
        return next((preset for preset in PATTERNS.values() if hugging_face_regex(preset) == regex), regex)
    raise TokenizerFileError(f"{path}: its pre-tokenizer ({' + '.join(map(str, kinds)) or 'none'}) is not a byte-level "
                             "one bpecli reproduces (ByteLevel, or Split on a regex then ByteLevel); name one with --pattern")


def _pattern(given: str | None, found: str, source: str) -> str:
    """--pattern if given, else what the file says; an error names where the bad one came from."""
    if given:
        return resolve_pattern(given)
    if not isinstance(found, str):
        raise TokenizerFileError(f"the pattern {found!r} ({source}) is not text")
    return resolve_pattern(found, source=source)


def _check_merges(path: Path, merges: list, made: list[str], parts: list[str], vocab: dict, *, quote: bool = True) -> None:
    """Each merge joins two tokens of the vocabulary into a third (Hugging Face refuses any other:
    a vocabulary and merges of two tokenizers are refused here too), and the merges follow the
    order of the ids they make.

    bpecli merges the pair whose token has the lowest id first, as tiktoken does; Hugging Face
    merges in the order the merges are listed. The two agree only if the tokens the merges make
    have ids that never fall along the list (several merges may make one token, one after
    another, as transformers' tiktoken converter writes them): if not, the file is refused."""
    _check_ids(path, vocab)
    ids: list = list(map(vocab.get, made))
    if None in ids or not all(map(vocab.__contains__, parts)):
        for number, (merge, token) in enumerate(zip(merges, made), 1):
            pair = merge.split(" ") if isinstance(merge, str) else merge
            lacking = next((part for part in (*pair, token) if part not in vocab), None)
            if lacking is not None:
                shown = f" ({str(merge)[:60]!r}) names {lacking[:60]!r}," if quote else " names a token"
                raise TokenizerFileError(f"{path}: merge {number}{shown} which the vocabulary lacks; the merges and the "
                                         "vocabulary are not of one tokenizer")
    if all(map(le, ids, islice(ids, 1, None))):
        return
    last, before = -1, (0, "")
    for number, (merge, rank) in enumerate(zip(merges, ids), 1):
        if rank < last:
            this, that = (f" ({str(merge)[:60]!r})", f" ({str(before[1])[:60]!r})") if quote else ("", "")
            raise TokenizerFileError(
                f"{path}: merge {number}{this} makes id {rank}, but merge {before[0]} before it{that} makes id {last}; "
                "bpecli merges in the order of ids, as tiktoken does, so its ids would differ from Hugging Face's. "
                "Number the merged tokens in the order of the merges")
        last, before = rank, (number, merge)


def _check_ids(path: Path, vocab: dict) -> None:
    """Every id is a whole number (not true or false, which Python counts as 1 and 0)."""
    if set(map(type, vocab.values())) - {int}:
        text, rank = next((text, rank) for text, rank in vocab.items() if type(rank) is not int)
        raise TokenizerFileError(f"{path}: the id of {text[:60]!r} is {json.dumps(rank)[:20]}, not a whole number")


def _split_vocab(path: Path, vocab: dict, made: set[str]) -> tuple[dict[bytes, int], dict[str, int]]:
    """Ordinary tokens (single bytes and what merges make) as bytes, and the rest as specials.
    Sets and maps sort them, not a loop over the vocabulary: a one-liner loads it every time."""
    texts, ids = list(vocab), list(vocab.values())
    tokens = strs_to_tokens(texts)
    specials = {text for text in vocab.keys() - made if len(text) != 1}  # a character is a byte
    if None in tokens:  # a character outside the alphabet: no byte-level token
        specials.update(text for text, token in zip(texts, tokens) if token is None)
        ranks = {token: rank for text, token, rank in zip(texts, tokens, ids) if text not in specials and token is not None}
    else:
        ranks = dict(zip(cast("list[bytes]", tokens), ids))
        for text in specials:  # few
            del ranks[cast(bytes, str_to_token(text))]
    return ranks, {text: vocab[text] for text in texts if text in specials}


def _normalize_of(path: Path, steps) -> tuple[str, ...]:
    if not isinstance(steps, list) or not all(isinstance(step, str) for step in steps):
        raise TokenizerFileError(f"{path}: 'normalize' should be a list of steps such as [\"nfkc\", \"lowercase\"]")
    try:
        return check_normalize(steps)
    except BpecliError as e:
        raise TokenizerFileError(f"{path}: {e}") from None


def _checked(path: Path, ranks: dict[bytes, int], specials: dict[str, int], pattern: str, files: list[Path],
             normalize: tuple[str, ...] = ()) -> Vocab:
    """The vocabulary read from path, if it is one bpecli can use (see vocab.check)."""
    try:
        check(ranks, specials)
    except BpecliError as e:
        raise TokenizerFileError(f"{path}: {e.args[0]}") from None
    return Vocab(ranks, dict(specials), pattern, normalize=normalize, files=tuple(map(str, files)))


class _Reading(folders.Generation):
    """A generation of a folder that keeps the sha256 of each file read from it: the fingerprint
    of a vocabulary is of the files as read, with no second read (see Vocab.fingerprint)."""

    def __init__(self, path: Path):
        super().__init__(path)
        self.digests: dict[str, bytes] = {}

    def read(self, name: str) -> bytes:
        data = super().read(name)
        self.digests[name] = hashlib.sha256(data).digest()
        return data
