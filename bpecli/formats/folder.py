"""A tokenizer folder: which file of a folder (or which file given) to read, and writing every
format into a new folder that is put in place whole, or exchanged with the old one in one step
(see folders.py), so that a reader sees one tokenizer or the other, never a mix."""

from __future__ import annotations

import errno
import os
import stat
import zlib
from dataclasses import replace
from pathlib import Path

from .. import folders
from ..errors import OutputError, TokenizerFileError, arg
from ..vocab import Vocab
from . import cache
from .bpecli_json import load_bpecli, write_bpecli_json
from .common import json_kind
from .gpt2 import Listing, load_gpt2, write_vocab_and_merges
from .hugging_face import load_hugging_face, write_tokenizer_json
from .registry import could_be_name, load_named
from .tiktoken import load_tiktoken, write_tiktoken
from .transformers import write_transformers_config


# The files `save` writes: the only ones it ever replaces or removes in a folder.
TOKENIZER_FILES = ("vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "tokenizer.tiktoken", "bpecli.json")


def _own(name: str) -> bool:
    """Whether a name in a tokenizer folder is one bpecli writes (LEGACY_LOCK included)."""
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
    made = [folder for folder in (parent, *parent.parents) if not folder.exists()]  # deepest first
    try:
        try:
            parent.mkdir(parents=True, exist_ok=True)
            building, held = folders.make_building(parent, prefix)
        except OSError as e:
            raise OutputError(f"cannot write into {parent} ({e.strerror or e}); choose an {arg('out_dir')} you can write to") from None
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
            folders.unlock(held)
            folders.remove(building, _own)  # gone already once renamed
    except BaseException:
        _remove_empty(made)  # the parents this call made, if nothing else came into them
        raise
    return out_dir


def _remove_empty(folders_made: list[Path]) -> None:
    for folder in folders_made:  # deepest first: each is empty once the one inside it is gone
        try:
            folder.rmdir()
        except OSError:  # something else came into it, or it was never made: it stays
            return


def _write_all(vocab: Vocab, folder: Path) -> None:
    """Every format into folder, bpecli.json last with the size and CRC-32 of each other file: a
    folder whose files come from two tokenizers is refused on load, not read as one."""
    listing = Listing.of(vocab)
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
                              f"choose another {arg('out_dir')}, or fix the link") from None
    if out_dir.exists() and not out_dir.is_dir():
        raise OutputError(f"{out_dir} is a file; {arg('out_dir')} names a folder for the tokenizer files")
    if out_dir.is_dir():
        _check_own_files(out_dir, force)
        if force and not folders.can_swap(Path(os.path.realpath(out_dir))) and not os.access(out_dir, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write into {out_dir}; choose an {arg('out_dir')} you can write to")
    else:
        parent = out_dir.absolute().parent
        while not parent.exists():
            parent = parent.parent
        if not os.access(parent, os.W_OK | os.X_OK):
            raise OutputError(f"cannot write into {parent}; choose an {arg('out_dir')} you can write to")


def _check_own_files(out_dir: Path, force: bool) -> None:
    try:
        present = [p.name for p in out_dir.iterdir()]
    except OSError as e:
        raise OutputError(f"cannot read {out_dir} ({e.strerror or e})") from None
    foreign = sorted(name for name in present if not _own(name) and not name.endswith(folders.TEMPORARY))
    # a name of bpecli's that is no file (a folder, a link: bpecli writes neither) is someone else's
    foreign += sorted(f"{name} ({_kind(out_dir / name)})" for name in present if _own(name) and _kind(out_dir / name))
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise OutputError(f"{out_dir} holds files bpecli did not write ({shown}); choose a new or empty folder for {arg('out_dir')}")
    if set(present) - {folders.LEGACY_LOCK} and not force:
        raise OutputError(f"{out_dir} holds a tokenizer already; use {arg('force', True)} to replace its files")


def _kind(path: Path) -> str:
    """What stands at path if it is not a file of its own: "a folder", "a link"...; "" for a file."""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return ""
    except OSError as e:
        return f"unreadable: {e.strerror or e}"
    return "" if stat.S_ISREG(mode) else folders.kind_of(mode)


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
            folders.unlock(building_held)
            folders.remove(building, _own)  # the old generation, or the new one on a failure
    finally:
        folders.unlock(held)
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
        raise OutputError(f"cannot write into {target} ({e.strerror or e}); choose an {arg('out_dir')} you can write to") from None
    try:
        _write_all(vocab, building)
        first = ("bpecli.json", "tokenizer.tiktoken")
        for name in (*first, *(name for name in TOKENIZER_FILES if name not in first)):
            os.replace(building / name, target / name)
    except OSError as e:
        raise OutputError(f"cannot write {target} ({e.strerror or e})") from None
    finally:
        folders.unlock(held)
        folders.remove(building, _own)


# ---------------------------------------------------------------------------------------------
# Reading


def load(path: str | Path, *, pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Vocab:
    """The vocabulary of a tokenizer in any known format.

    path may be a folder written by `bpecli train`, a vocab.json with merges.txt beside it, a
    Hugging Face tokenizer.json, a .tiktoken ranks file (pattern defaults to cl100k there), or
    the name of an encoding tiktoken knows ("cl100k_base", see registry.py) when no file or
    folder has that name. pattern and special_tokens, when given, replace what the files say. The files of one folder
    are read through one descriptor of it: all of one generation, even while `train --force`
    replaces the folder.
    """
    given, path = str(path), Path(path)  # given as written: Path turns "s3://" into "s3:/"
    try:
        found = os.stat(path)
    except FileNotFoundError:
        if could_be_name(given):  # a file or folder of that name wins over the encoding of that name
            named = load_named(given, pattern=pattern, special_tokens=special_tokens)
            if named is not None:
                return named
        raise TokenizerFileError(f"{given}: no such tokenizer file or folder") from None
    except OSError as e:
        raise TokenizerFileError(f"{path}: cannot read ({folders.why(e)})") from None
    if stat.S_ISDIR(found.st_mode):
        folder, name = path, None
    else:
        folder, name = path.parent, path.name
    generation = cache.Recording(folder)
    with generation:
        if name is None:
            name = next((name for name in ("bpecli.json", "tokenizer.json", "vocab.json", "tokenizer.tiktoken")
                         if generation.has(name)), None)
            if name is None:
                others = sorted(p.name for p in path.glob("*.tiktoken"))[:1]  # another name: given by its path
                raise TokenizerFileError(
                    f"{path}: no tokenizer here (expected bpecli.json, tokenizer.json, vocab.json or tokenizer.tiktoken)"
                    + (f"; name the ranks file itself ({path / others[0]})" if others else "")
                )
        vocab = cache.lookup(generation, name, pattern, special_tokens)
        if vocab is None:
            try:
                vocab = _load_file(generation, name, pattern, special_tokens)
            except (KeyError, TypeError, AttributeError, ValueError) as e:  # a shape no check below foresaw
                raise TokenizerFileError(f"{path}: corrupt or of no known tokenizer format ({type(e).__name__}: "
                                         f"{str(e)[:200]})") from None
            cache.store(generation, name, pattern, special_tokens, vocab)
    # the digests of the files as read, so that the fingerprint is of these and never of later ones
    return replace(vocab, file_digests=tuple(generation.digests[Path(name).name] for name in vocab.files), name=given)


def _load_file(generation: folders.Generation, name: str, pattern: str | None,
               special_tokens: dict[str, int] | None) -> Vocab:
    if name in TOKENIZER_FILES and name != "bpecli.json" and generation.has("bpecli.json"):
        # one file of a folder `bpecli train` wrote: the folder says its pattern and special tokens
        return _load_file(generation, "bpecli.json", pattern, special_tokens)
    if Path(name).suffix == ".tiktoken":
        return load_tiktoken(generation, name, pattern, special_tokens)
    document = _read_json(generation, name)
    if name == "bpecli.json" or isinstance(document.get("format_version"), int) and "ranks_file" in document:
        return load_bpecli(generation, name, document, pattern, special_tokens)
    if isinstance(document.get("model"), dict):
        return load_hugging_face(generation.path / name, document, pattern, special_tokens)
    # a tokenizer.json, damaged (a vocab.json maps every token, "model" as well, to an id)
    if any(key in document and type(document[key]) is not int for key in ("model", "added_tokens", "pre_tokenizer")):
        raise TokenizerFileError(f"{generation.path / name}: a Hugging Face tokenizer.json without its \"model\" "
                                 "object (the vocabulary and merges); save the tokenizer again")
    return load_gpt2(generation, name, document, pattern, special_tokens)


def _read_json(generation: folders.Generation, name: str) -> dict:
    path = generation.path / name
    data = generation.read(name)
    if Path(name).suffix != ".json" and data.lstrip()[:1] not in (b"{", b"[", b"\xef"):  # (\xef: a byte-order mark)
        raise TokenizerFileError(f"{path}: not a tokenizer file (expected a folder written by bpecli train, a vocab.json with "
                                 "merges.txt beside it, a tokenizer.json or a .tiktoken file)")
    try:
        document = folders.parse_json(data)
    except folders.Unreadable as e:
        raise TokenizerFileError(f"{path}{'' if e.line is None else f':{e.line}'}: {e}") from None
    if not isinstance(document, dict):
        raise TokenizerFileError(f"{path}: not a tokenizer file (expected a JSON object, found {json_kind(document)})")
    return document


