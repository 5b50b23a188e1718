"""Tokenizers known by name: the encodings of tiktoken's registry (gpt2, r50k_base, p50k_base,
cl100k_base, o200k_base, and those of any tiktoken plugin), read through tiktoken's own loader, so
that its cache (TIKTOKEN_CACHE_DIR) and its checks of each file's sha256 serve bpecli too.
tiktoken is an optional extra (`pip install '.[tiktoken]'`), imported only when a name is asked for."""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from ..errors import TokenizerFileError
from ..vocab import Vocab
from .common import checked_ranks, pattern_of

# tiktoken's own encodings: named in the error that asks for the extra when tiktoken is missing.
TIKTOKEN_NAMES = ("gpt2", "r50k_base", "p50k_base", "p50k_edit", "cl100k_base", "o200k_base", "o200k_harmony")


def could_be_name(path: str | Path) -> bool:
    """Whether path, which names no file, may be an encoding's name: a bare word, no folder in it."""
    text = str(path)
    return bool(text) and os.sep not in text and "/" not in text and not text.startswith(".")


def load_named(name: str, *, pattern: str | None = None, special_tokens: dict[str, int] | None = None) -> Vocab | None:
    """The vocabulary of the encoding tiktoken's registry knows by name, or None if it knows none
    of that name. pattern and special_tokens, when given, replace the encoding's own.

    Example: load_named("cl100k_base").vocab_size -> 100261
    """
    try:
        from tiktoken import registry
    except ImportError:
        if name in TIKTOKEN_NAMES:
            raise TokenizerFileError(f"{name} is an encoding of tiktoken, which is not installed; install it with "
                                     "pip install tiktoken (bpecli's tiktoken extra), or give the path of a tokenizer file") from None
        return None
    try:
        names = registry.list_encoding_names()
    except Exception as e:  # a broken plugin: tiktoken's registry refuses every name then
        raise TokenizerFileError(f"{name}: tiktoken's registry of encodings fails to load ({_short(e)})") from None
    if name not in names:
        return None
    # The encoding's data alone (ranks, special tokens, pattern): tiktoken's Encoding would also
    # build its own engine, which bpecli does not use.
    constructor = (registry.ENCODING_CONSTRUCTORS or {})[name]
    try:
        found = constructor()
    except Exception as e:
        raise TokenizerFileError(_fetch_failed(name, e)) from None
    source = f"tiktoken's encoding {name}"
    ranks, specials = found["mergeable_ranks"], found.get("special_tokens", {})
    specials = special_tokens if special_tokens is not None else specials
    checked_ranks(name, ranks, specials)
    return Vocab(dict(ranks), dict(specials), pattern_of(pattern, found["pat_str"], source), name=name)


def cache_path(url: str) -> Path | None:
    """Where tiktoken keeps (and first looks for) the file it fetches from url, or None when its
    cache is turned off (TIKTOKEN_CACHE_DIR set to nothing): a file of the url's sha1 in its
    cache folder.

    Example: cache_path("https://host/x.tiktoken") -> /tmp/data-gym-cache/<sha1 of the url>
    """
    folder = os.environ.get("TIKTOKEN_CACHE_DIR", os.environ.get("DATA_GYM_CACHE_DIR"))
    if folder is None:
        folder = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if folder == "":
        return None
    return Path(folder) / hashlib.sha1(url.encode()).hexdigest()


def _fetch_failed(name: str, error: Exception) -> str:
    """What to do when tiktoken could not read a file of the encoding: the file (or address) it
    asked for, and where to put a copy so that tiktoken finds it in its cache."""
    url = _address_of(error)
    if url is None:
        return f"{name}: tiktoken could not load this encoding ({_short(error)})"
    if "Hash mismatch" in str(error):
        return f"{name}: {url} is not the file tiktoken expects (its sha256 differs); fetch it again"
    if "://" not in url:
        return f"{name}: tiktoken could not read {url} ({_short(error)})"
    where = cache_path(url)
    seed = (f"save it as {where}" if where is not None
            else "set TIKTOKEN_CACHE_DIR to a folder and save it there under the sha1 of its address")
    return (f"{name}: tiktoken could not fetch {url} ({type(error).__name__}; offline?); download it and {seed} "
            "(tiktoken's cache, TIKTOKEN_CACHE_DIR), or give the path of a tokenizer file")


def _address_of(first: BaseException) -> str | None:
    """The address or file tiktoken failed to read, from the error or one it was raised from:
    requests' errors carry their request, a missing file its name, a hash mismatch its address."""
    seen = set()
    error: BaseException | None = first
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        url = getattr(getattr(error, "request", None), "url", None)
        if url:
            return str(url)
        if isinstance(error, OSError) and error.filename:
            return str(error.filename)
        text = str(error)
        if "Hash mismatch for data downloaded from " in text:
            return text.split("downloaded from ", 1)[1].split(" (expected", 1)[0]
        error = error.__cause__ or error.__context__
    return None


def _short(error: Exception) -> str:
    """An error in one short line: its type and the first line of its message."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:160]}" if lines else type(error).__name__

