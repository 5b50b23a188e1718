"""Pre-tokenizer patterns, splitting on special tokens, and counting pre-tokens in a process pool."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cache

import regex

from . import unicode_classes
from .errors import BpecliError

# The exact patterns tiktoken uses for its gpt2 / r50k, cl100k_base and o200k_base encodings.
PATTERNS = {
    "gpt2": r"""'(?:[sdmt]|ll|ve|re)| ?\p{L}++| ?\p{N}++| ?[^\s\p{L}\p{N}]++|\s++$|\s+(?!\S)|\s""",
    "cl100k": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}


# Where a preset pattern surely starts a piece: after a newline that has a non-space before it
# and an ASCII letter or digit after it. (Not any non-space after it: o200k's punctuation pieces
# take newlines and "/" after them, so ".\n/" is one piece.) Text cut there splits into the same
# pieces as it does whole, so it can be counted or encoded in parts.
SAFE_CUT = r"(?<=[^\s]\n)(?=[A-Za-z0-9])"


def is_preset(pattern: str) -> bool:
    """Whether pattern is one of tiktoken's (gpt2, cl100k, o200k): vectorised, and known to keep
    every character."""
    return pattern in PATTERNS.values()


def resolve_pattern(name_or_regex: str, *, source: str = "--pattern") -> str:
    """A preset name gives its pattern; anything else must be a valid regex whose pieces keep
    every character. source names where the pattern came from, for the error.

    Example: resolve_pattern("gpt2") -> "'(?:[sdmt]|ll|ve|re)| ?\\p{L}++|..."
    """
    pattern = PATTERNS.get(name_or_regex, name_or_regex)
    if is_preset(pattern):
        return pattern
    try:
        compiled = regex.compile(pattern)
    except (regex.error, TypeError) as e:
        raise BpecliError(f"invalid regex {pattern!r} ({source}): {e}") from None
    if sum(map(len, compiled.findall(_PROBE))) != len(_PROBE):
        raise uncovered_error(pattern, _PROBE, source)
    return pattern


# Text a pattern must split without leaving a character out: letters, digits, punctuation, every
# kind of space, marks, CJK, emoji.
_PROBE = "Hello, World! It's 12,345.6 \u00bd x\n\n\t  y \r\n caf\u00e9 e\u0301 \u4e2d\u6587 \U0001F600 \u00a0end?"


def uncovered_error(pattern: str, text: str, source: str = "--pattern") -> BpecliError:
    """The error for a pattern whose pieces leave characters of text out (`\\w+` skips spaces):
    a byte-level tokenizer must keep every byte, or decode(encode(text)) is not text."""
    at = 0
    for match in regex.finditer(pattern, text):
        if match.start() != at:
            break
        at = match.end()
    return BpecliError(
        f"the pattern {pattern[:60]!r} ({source}) leaves {text[at:at + 1]!r} (character {at}) out of every piece; "
        "a byte-level tokenizer must keep every character: add an alternative that matches the rest, e.g. |\\s+|."
    )


@cache
def compiled(pattern: str) -> regex.Pattern:
    r"""The compiled pattern: a preset with tiktoken's Unicode classes (see unicode_classes: each
    \p{..} spelled out as its ranges), any other pattern as the regex module reads it."""
    if not is_preset(pattern):
        return regex.compile(pattern)
    out, i, in_class = [], 0, False
    while i < len(pattern):
        if pattern.startswith("\\p{", i):
            end = pattern.index("}", i)
            ranges = unicode_classes.regex_class(pattern[i + 3 : end])
            out.append(ranges if in_class else f"[{ranges}]")
            i = end + 1
            continue
        if pattern[i] == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        in_class = {"[": True, "]": False}.get(pattern[i], in_class)
        out.append(pattern[i])
        i += 1
    return regex.compile("".join(out))


def special_splitter(special_tokens: Iterable[str]) -> regex.Pattern | None:
    """A regex that captures any special token, longest first so that overlapping ones split right."""
    ordered = sorted(set(special_tokens), key=len, reverse=True)
    if not ordered:
        return None
    return regex.compile("(" + "|".join(regex.escape(t) for t in ordered) + ")")


def split_documents(text: str, splitter: regex.Pattern | None) -> list[str]:
    """The text between special tokens (the tokens themselves dropped).

    Example: "a<|endoftext|>b" -> ["a", "b"]
    """
    if splitter is None:
        return [text]
    return splitter.split(text)[::2]


# ---- vectorised pre-tokenizers ------------------------------------------------------------------
# The gpt2 and cl100k patterns, read as rules over character classes, applied with numpy array
# operations to UTF-8 bytes. They return exactly the pieces of regex's findall (tests compare
# them); the regex stays the reference, and the path for every other pattern.

_L, _N, _O, _W, _SPACE, _CRLF = 0, 1, 2, 3, 4, 5  # letter, number, other, whitespace, " ", \r or \n
_class_cache: dict[int, int] = {}


def _class_of(code_point: int) -> int:
    char = chr(code_point)
    if char == " ":
        return _SPACE
    if char in "\r\n":
        return _CRLF
    if regex.match(r"\s", char):  # the regex module's \s agrees with tiktoken's on every code point
        return _W
    if unicode_classes.has("L", code_point):
        return _L
    if unicode_classes.has("N", code_point):
        return _N
    return _O


_UPPER, _LOWER, _BOTH, _MARK = 1, 2, 3, 4  # letter cases as o200k's two letter classes see them
_case_cache: dict[int, int] = {}


def _case_of(code_point: int) -> int:
    """Lu or Lt (upper); Ll (lower); Lm or Lo (in both of o200k's classes: CJK, for one); a
    combining mark; else 0."""
    has = unicode_classes.has
    if has("Lu", code_point) or has("Lt", code_point):
        return _UPPER
    if has("Ll", code_point):
        return _LOWER
    if has("Lm", code_point) or has("Lo", code_point):
        return _BOTH
    if has("M", code_point):
        return _MARK
    return 0


def _classes(code_points, of=_class_of, known=_class_cache):
    """of(code point) for each code point; each distinct one is asked once (known remembers)."""
    import numpy as np

    distinct = np.unique(code_points)
    for c in distinct.tolist():
        if c not in known:
            known[c] = of(c)
    table = np.array([known[c] for c in distinct.tolist()], dtype=np.uint8)
    return table[np.searchsorted(distinct, code_points)]


@cache
def _ascii_table(of):
    """of(c) for the 128 ASCII code points, as a numpy lookup table."""
    import numpy as np

    return np.array([of(c) for c in range(128)], dtype=np.uint8)


def _characters(data: bytes, doc_starts, cases: bool = False):
    """(where, chars, cls, edges, case) for UTF-8 data: the byte offset of each character (None
    when every byte is one), its first byte (the character itself if ASCII), its class, edges[i]:
    character i starts a document (edges[-1], one past the last character, is True), and with
    cases its letter case (_case_of), else None."""
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    ascii_table = _ascii_table(_class_of)
    case = None
    if raw.max() < 0x80:
        where, chars, cls = None, raw, ascii_table[raw]
        if cases:
            case = _ascii_table(_case_of)[raw]
    else:  # characters start at bytes that are not 10xxxxxx; decode the multi-byte ones
        where = np.flatnonzero((raw & 0xC0) != 0x80)
        chars = raw[where]
        cls = np.empty(len(where), dtype=np.uint8)
        single = chars < 0x80
        cls[single] = ascii_table[chars[single]]
        multi = where[~single]
        padded = np.concatenate([raw, np.zeros(3, dtype=np.uint8)])
        b0, b1, b2, b3 = (padded[multi + k].astype(np.uint32) for k in range(4))
        cp = np.where(
            b0 >= 0xF0, ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F),
            np.where(b0 >= 0xE0, ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F), ((b0 & 0x1F) << 6) | (b1 & 0x3F)),
        )
        cls[~single] = _classes(cp)
        if cases:
            case = np.empty(len(where), dtype=np.uint8)
            case[single] = _ascii_table(_case_of)[chars[single]]
            case[~single] = _classes(cp, _case_of, _case_cache)
    m = len(cls)
    edges = np.zeros(m + 1, dtype=bool)
    edges[0] = edges[m] = True
    if doc_starts is not None and len(doc_starts):
        inside = np.asarray(doc_starts)
        inside = inside[(inside > 0) & (inside < len(raw))]
        edges[inside if where is None else np.searchsorted(where, inside)] = True
    return where, chars, cls, edges, case


def _is_long_s(data: bytes, where, at):
    """Whether character number `at` is ſ (U+017F, bytes C5 BF), which (?i) matches as s."""
    import numpy as np

    if where is None:
        return np.zeros(len(at), dtype=bool)
    raw = np.frombuffer(data, dtype=np.uint8)
    return (raw[where[at]] == 0xC5) & (raw[np.minimum(where[at] + 1, len(raw) - 1)] == 0xBF)


def _byte_offsets(starts, where, n: int):
    import numpy as np

    index = np.flatnonzero(starts)
    offsets = index if where is None else where[index]
    return np.append(offsets, n).astype(np.int64)


def gpt2_piece_starts(data: bytes, doc_starts=None):
    """Byte offsets where the gpt2 pattern's pieces start in UTF-8 data (valid UTF-8), plus
    len(data) at the end; doc_starts (sorted byte offsets) are document edges no piece crosses.

    The rules: a piece is a maximal run of letters (L), of numbers (N), or of other characters
    (O); one ASCII space just before such a run belongs to it; a whitespace run followed by more
    text leaves its last character to the next piece (at the end of a document it is one piece);
    an apostrophe that starts a piece takes s, d, m, t, ll, ve or re after it as a contraction.

    Example: b"I'm  here" -> [0, 1, 3, 4, 5, 9]  ("I", "'m", " ", " here")
    """
    import numpy as np

    if not data:
        return np.zeros(1, dtype=np.int64)
    where, chars, cls, seg, _ = _characters(data, doc_starts)
    m = len(cls)
    kind = np.minimum(cls, _W)  # " ", \r and \n are whitespace, save for the rules that name them
    is_w = kind == _W
    starts = seg[:m].copy()
    starts[1:] |= kind[1:] != kind[:-1]
    # the last character of a whitespace run goes with what follows it in the same document
    starts[:-1] |= is_w[:-1] & ~is_w[1:] & ~seg[1:m]
    # a space just before an L, N or O run belongs to that run: no start between them
    starts[1:] &= ~((cls[:-1] == _SPACE) & ~is_w[1:] & ~seg[1:m])
    # contractions: an apostrophe that starts a piece, then s|d|m|t or ll|ve|re in the same document
    apostrophes = np.flatnonzero(starts & (chars == 0x27))
    if len(apostrophes):
        nxt = np.concatenate([chars, np.zeros(2, dtype=chars.dtype)])
        same = ~np.concatenate([seg[1:], np.ones(2, dtype=bool)])
        c1, c2 = nxt[apostrophes + 1], nxt[apostrophes + 2]
        ok1, ok2 = same[apostrophes], same[apostrophes + 1]
        two = ok1 & np.isin(c1, np.frombuffer(b"sdmt", dtype=np.uint8))
        three = ok1 & ok2 & (((c1 == 0x6C) & (c2 == 0x6C)) | (((c1 == 0x76) | (c1 == 0x72)) & (c2 == 0x65)))
        for found, length in ((two, 2), (three, 3)):
            at = apostrophes[found]
            starts[at + 1] = False
            after = at + length
            starts[after[after < m]] = True
    return _byte_offsets(starts, where, len(data))


def cl100k_piece_starts(data: bytes, doc_starts=None):
    """gpt2_piece_starts for the cl100k pattern. Its rules, as this reads them, run by run:
    - letters: a maximal run, with the one character before it if that starts a piece and is
      neither a number, \\r nor \\n (a space, a tab, a bracket...);
    - numbers: a run cut into threes from its start;
    - others: a maximal run, with one space before it, and the \\r and \\n right after it;
    - whitespace: at the end of a document, one piece; else up to and including its last \\r or
      \\n, then all but its last character, then that last character alone (which letters, or,
      if it is a space, others after it join);
    - an apostrophe that starts a piece and comes before letters takes s, d, m, t, ll, ve or re
      (any case) as a contraction.

    Example: b"it's  (x)\\n" -> [0, 2, 4, 5, 7, 8, 10]  ("it", "'s", " ", " (", "x", ")\\n")
    """
    import numpy as np

    if not data:
        return np.zeros(1, dtype=np.int64)
    where, chars, cls, edges, _ = _characters(data, doc_starts)
    m = len(cls)
    kind, starts, firsts, ends, run_kind, follows = _runs(cls, edges)

    # whitespace runs [a, k); most are one space or tab before a word, done first
    runs = np.flatnonzero(run_kind == _W)
    a, k = firsts[runs], ends[runs]
    one = (k - a == 1) & (cls[a] != _CRLF)
    follows_w = follows[runs]
    joins = one & ((follows_w == _L) | ((follows_w == _O) & (cls[a] == _SPACE)))
    starts[k[joins]] = False
    runs, a, k, follows_w = runs[~one], a[~one], k[~one], follows_w[~one]
    after_other = (runs > 0) & ~edges[a] & (run_kind[runs - 1] == _O)
    q = a.copy()  # where the run's first piece starts: others took the \r and \n right after them
    if after_other.any():
        not_crlf = np.append(np.flatnonzero(cls != _CRLF), m)
        q[after_other] = np.minimum(not_crlf[np.searchsorted(not_crlf, a[after_other])], k[after_other])
    starts[a] = False
    _split_whitespace(starts, cls, q, k, follows_w, whole_at_end=True)

    # others: one character that starts a piece, then letters: a contraction or one piece
    runs = np.flatnonzero((run_kind == _O) & (ends - firsts == 1) & (follows == _L))
    a = firsts[runs]
    a = a[starts[a]]
    starts[a + 1] = False
    a = a[chars[a] == 0x27]
    if len(a):
        letters_end = ends[np.searchsorted(firsts, a + 1)]
        after = a + 1 + _contraction_letters(data, where, chars, a, letters_end)
        starts[after[(after > a + 1) & (after < letters_end)]] = True
    return _byte_offsets(starts, where, len(data))


def _split_whitespace(starts, cls, q, k, follows, *, whole_at_end: bool) -> None:
    """Starts in whitespace runs [q, k) (q: where each run's own pieces begin, k when others took
    all of it; follows: the kind after it, -1 at a document's end): a piece up to and including
    its last \\r or \\n, then all but its last character, then that last character, which letters,
    or (if it is a space) others after it, join. whole_at_end: a run that ends its document is
    one piece (cl100k's \\s++$; o200k has none)."""
    import numpy as np

    live = q < k
    q, k, follows = q[live], k[live], follows[live]
    starts[q] = True
    crlf = np.append(-1, np.flatnonzero(cls == _CRLF))
    last_crlf = crlf[np.searchsorted(crlf, k) - 1]  # the last \r or \n before k (-1: none)
    cut = last_crlf >= q
    if whole_at_end:
        cut &= follows >= 0
    t = np.where(cut, last_crlf + 1, q)  # where the run's tail without \r or \n starts
    starts[t[t < k]] = True
    tail = (t < k) & (follows >= 0)
    starts[(k - 1)[tail & (k - t >= 2)]] = True
    joins = tail & ((follows == _L) | ((follows == _O) & (cls[k - 1] == _SPACE)))
    starts[k[joins]] = False


def _runs(cls, edges):
    """(kind, starts, firsts, ends, run_kind, follows): each character's kind (letter, number,
    other, whitespace), a start at every run of one kind within a document, where each run starts
    and ends, its kind, and the kind of the run after it in the same document (-1: none). The
    starts also cut numbers into threes, as both cl100k and o200k do."""
    import numpy as np

    m = len(cls)
    kind = np.minimum(cls, _W)
    starts = edges[:m].copy()
    starts[1:] |= kind[1:] != kind[:-1]
    firsts = np.flatnonzero(starts)
    ends = np.append(firsts[1:], m)
    run_kind = kind[firsts]
    follows = np.full(len(firsts), -1)
    inside = ~edges[ends]
    follows[inside] = run_kind[np.flatnonzero(inside) + 1]
    long_numbers = np.flatnonzero((run_kind == _N) & (ends - firsts > 3))
    more = (ends[long_numbers] - firsts[long_numbers] - 1) // 3  # starts after the run's first
    starts[np.repeat(firsts[long_numbers], more) + 3 * (spans(np.zeros_like(more), more) + 1)] = True
    return kind, starts, firsts, ends, run_kind, follows


def _contraction_letters(data: bytes, where, chars, at, letters_end):
    """How many letters after the apostrophe at each position `at` make a contraction with it:
    1 for s, d, m, t; 2 for ll, ve, re (any case, ſ as s); else 0. letters_end: where the
    letters after each apostrophe end."""
    import numpy as np

    nxt = np.concatenate([chars, np.zeros(2, dtype=chars.dtype)]) | 0x20  # ASCII lower case
    c1, c2 = nxt[at + 1], nxt[at + 2]
    one = np.isin(c1, np.frombuffer(b"sdmt", dtype=np.uint8)) | _is_long_s(data, where, at + 1)
    two = ~one & (at + 2 < letters_end) & (((c1 == 0x6C) & (c2 == 0x6C)) | (((c1 == 0x76) | (c1 == 0x72)) & (c2 == 0x65)))
    return np.where(one, 1, np.where(two, 2, 0))


def o200k_piece_starts(data: bytes, doc_starts=None):
    """gpt2_piece_starts for the o200k pattern. Its rules, as this reads them, where they differ
    from cl100k's (cl100k_piece_starts):
    - letters: a run splits before each upper-case letter that follows a lower-case one; a word
      takes a contraction ('s, 't, 're, 've, 'm, 'll, 'd in any case) right after it;
    - others: a run takes the \\r, \\n and / right after it;
    - whitespace: up to and including its last \\r or \\n, also at the end of a document.
    Lines holding combining marks (letters to some of the pattern's classes, others to the rest)
    are split by the regex instead.

    Example: b"don't HTMLParser iPhone" -> [0, 5, 17, 19, 23]  ("don't", " HTMLParser", " i", "Phone")
    """
    import numpy as np

    if not data:
        return np.zeros(1, dtype=np.int64)
    where, chars, cls, edges, case = _characters(data, doc_starts, cases=True)
    m = len(cls)
    kind, starts, firsts, ends, run_kind, follows = _runs(cls, edges)

    # 1. others followed by \r or \n take the run of \r, \n and / after them (within the document)
    effective = firsts.copy()  # where each run's own pieces start, past what such a run took
    takers = np.flatnonzero((run_kind == _O) & (follows == _W))
    takers = takers[cls[ends[takers]] == _CRLF]
    if len(takers):
        taken = np.flatnonzero((cls == _CRLF) | (chars == 0x2F))
        new_group = np.concatenate(([True], (np.diff(taken) != 1) | edges[taken[1:]]))
        group_end = taken[np.append(np.flatnonzero(new_group)[1:] - 1, len(taken) - 1)] + 1
        k = ends[takers]
        f = group_end[np.cumsum(new_group)[np.searchsorted(taken, k)] - 1]
        in_tail = np.zeros(m + 1, dtype=bool)
        in_tail[spans(k, f - k)] = True
        starts[in_tail[:m]] = False
        starts[f[f < m]] = True
        entered = np.flatnonzero(in_tail[firsts])
        whole = entered[in_tail[ends[entered] - 1]]
        effective[whole] = ends[whole]
        part = entered[~in_tail[ends[entered] - 1]]
        effective[part] = f[np.searchsorted(f, firsts[part], "right")]

    # 2. whitespace runs [q, k): up to the last \r or \n; then all but the last character, which
    # letters, or (a space) others after it, join
    runs = np.flatnonzero(run_kind == _W)
    _split_whitespace(starts, cls, effective[runs], ends[runs], follows[runs], whole_at_end=False)

    # 3. others: one character that starts a piece before letters joins them, unless it is an
    # apostrophe whose letters make a contraction of the word before it
    runs = np.flatnonzero((run_kind == _O) & (follows == _L))
    runs = runs[(ends[runs] - effective[runs] == 1)]
    a = effective[runs]
    keep = starts[a]
    runs, a = runs[keep], a[keep]
    after_word = (runs > 0) & (a == firsts[runs]) & ~edges[a] & (run_kind[runs - 1] == _L) & (chars[a] == 0x27)
    length = np.zeros(len(a), dtype=np.int64)
    if after_word.any():
        length = np.where(after_word, _contraction_letters(data, where, chars, a, ends[runs + 1]), 0)
        # a contraction's letters are no word: an apostrophe right after them starts a piece
        # ("x's's" is "x's", "'s"); such chains are rare, so they are settled one by one
        word_before = np.ones(len(a), dtype=bool)
        previous = np.searchsorted(a, firsts[runs - 1] - 1)
        linked = np.flatnonzero((length > 0) & (previous < len(a)))
        for i in linked.tolist():
            j = previous[i]
            if j < i and a[j] == firsts[runs[i] - 1] - 1 and length[j] == ends[runs[j] + 1] - a[j] - 1 and length[j] > 0 and word_before[j]:
                word_before[i] = False
        length[~word_before] = 0
    suffix = length > 0
    # 4. words, in letters past what a contraction took
    effective[runs[suffix] + 1] = a[suffix] + 1 + length[suffix]
    _split_words(starts, case, effective, firsts, ends, run_kind)
    starts[a[suffix]] = False
    starts[(a + 1)[~suffix]] = False  # the character joins the letters after it
    for n in (1, 2):
        at = a[length == n]
        starts[at + 1] = False
        if n == 2:
            starts[at + 2] = False
        after = at + n + 1
        starts[after[after < ends[runs[length == n] + 1]]] = True

    # 5. lines the rules above do not cover: the regex. A character after \r or \n that is neither
    # whitespace nor "/" always starts a piece, and nothing before it changes what follows.
    hard = np.flatnonzero(case == _MARK)
    if len(hard):
        fresh = edges[:m].copy()
        fresh[1:] |= (cls[:-1] == _CRLF) & (kind[1:] != _W) & (chars[1:] != 0x2F)
        line_firsts = np.flatnonzero(fresh)
        line_ends = np.append(line_firsts[1:], m)
        findall = compiled(PATTERNS["o200k"]).findall
        for d in np.unique(np.searchsorted(line_firsts, hard, "right") - 1).tolist():
            c0, c1 = int(line_firsts[d]), int(line_ends[d])
            b0 = c0 if where is None else int(where[c0])
            b1 = len(data) if c1 == m else (c1 if where is None else int(where[c1]))
            sizes = [len(piece) for piece in findall(data[b0:b1].decode("utf-8"))]
            starts[c0:c1] = False
            starts[c0 + np.cumsum([0] + sizes[:-1], dtype=np.int64)] = True
    return _byte_offsets(starts, where, len(data))


def _split_words(starts, case, effective, firsts, ends, run_kind) -> None:
    """o200k's starts within runs of letters (from effective: past the letters a contraction
    took). A word is upper-case letters then lower-case ones (letters of both classes may stand
    anywhere), so a word starts at each upper-case letter whose nearest cased letter before it,
    in the same run, is lower-case; and the run's last stretch without lower-case letters ends a
    word after its last letter of both classes."""
    import numpy as np

    both = np.flatnonzero(case == _BOTH)
    if not len(both):  # cased letters only (the common case): upper after lower
        starts[1:] |= (case[1:] == _UPPER) & (case[:-1] == _LOWER)
        return
    cased = np.flatnonzero((case == _UPPER) | (case == _LOWER))
    run_of = np.searchsorted(firsts, cased, "right") - 1
    kept = cased >= effective[run_of]
    cased, run_of = cased[kept], run_of[kept]
    new_word = np.zeros(len(cased), dtype=bool)
    new_word[1:] = (case[cased[1:]] == _UPPER) & (case[cased[:-1]] == _LOWER) & (run_of[1:] == run_of[:-1])
    starts[cased[new_word]] = True
    # each run's stretch without lower-case letters at its end, from the upper-case letter after
    # its last lower-case one (or from its start): a start after the stretch's last letter of
    # both classes, if upper-case letters follow it
    runs = np.flatnonzero(run_kind == _L)
    first, end = effective[runs], ends[runs]
    lower, upper = cased[case[cased] == _LOWER], cased[case[cased] == _UPPER]
    last_lower = np.append(-1, lower)[np.searchsorted(lower, end)]  # -1: none
    upper_after = np.append(upper, len(case))[np.searchsorted(upper, last_lower + 1)]
    stretch = np.where(last_lower >= first, upper_after, first)
    last_both = np.append(-1, both)[np.searchsorted(both, end)]
    split = (last_both >= stretch) & (last_both + 1 < end)
    starts[last_both[split] + 1] = True


def spans(starts, sizes):
    """Every position of the spans [start, start + size).

    Example: [10, 3], [2, 3] -> [10, 11, 3, 4, 5]
    """
    import numpy as np

    return np.repeat(starts - (np.cumsum(sizes) - sizes), sizes) + np.arange(int(sizes.sum()))


def sorted_distinct(values):
    """The distinct values, sorted (np.unique hashes or does more work than a sort and a compare;
    values that come in order already, as positions often do, are not sorted again).

    Example: [3, 1, 3] -> [1, 3]
    """
    import numpy as np

    if len(values) > 1 and not (values[1:] >= values[:-1]).all():
        values = np.sort(values)
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def vectorised_splitter(pattern: str):
    """The vectorised pre-tokenizer for a pattern (gpt2_piece_starts, cl100k_piece_starts), or
    None: the regex then does the work."""
    return {PATTERNS["gpt2"]: gpt2_piece_starts, PATTERNS["cl100k"]: cl100k_piece_starts, PATTERNS["o200k"]: o200k_piece_starts}.get(pattern)


# The packed layout of a piece of up to PACKED_BYTES bytes: two little-endian uint64, `low`
# holding bytes 0-7 and `high` bytes 8-14 and, in its top byte (from bit LENGTH_SHIFT), the
# piece's length; viewed as bytes, a row of PACKED_ROW_BYTES whose first `length` are the piece.
PACKED_BYTES = 15
LENGTH_SHIFT = 56
PACKED_ROW_BYTES = 16


def pack_pieces(data: bytes, bounds):
    """(codes, low, high, mixed, long_pieces): the distinct pieces of data (bounds from
    gpt2_piece_starts) numbered 0, 1, ..., and the number of each piece. Pieces of up to 15 bytes
    come first, each as two uint64 (low: bytes 0-7; high: bytes 8-14 and the length in the top
    byte) and their hash (mixed), found with numpy; longer pieces follow as bytes.
    """
    import numpy as np

    starts, sizes = bounds[:-1], np.diff(bounds)
    packed = np.flatnonzero(sizes <= PACKED_BYTES)
    low, high = pack_spans(data, starts[packed], sizes[packed])
    mixed = piece_hash(low, high)
    first, packed_codes = distinct_packed(low, high, mixed)
    codes = np.empty(len(starts), dtype=np.int64)
    codes[packed] = packed_codes
    long_at = np.flatnonzero(sizes > PACKED_BYTES)
    index: dict[bytes, int] = {}
    if len(long_at):
        long_codes = [index.setdefault(data[a:b], len(index)) for a, b in zip(starts[long_at].tolist(), bounds[long_at + 1].tolist())]
        codes[long_at] = np.array(long_codes, dtype=np.int64) + len(first)
    return codes, low[first], high[first], mixed[first], list(index)


def pack_spans(data: bytes, starts, sizes):
    """(low, high): the bytes data[start : start + size] (size at most 15) as two uint64: bytes
    0-7 little-endian in low, bytes 8-14 in high with the size in its top byte."""
    import numpy as np

    words = np.ndarray((len(data) + 9,), dtype="<u8", buffer=data + bytes(16), strides=(1,))
    masks = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)
    low_size = np.minimum(sizes, 8)
    low = words[starts] & masks[low_size]
    high = (words[starts + 8] & masks[sizes - low_size]) | (sizes.astype(np.uint64) << np.uint64(LENGTH_SHIFT))
    return low, high


def distinct_packed(low, high, mixed):
    """(an index of each distinct packed piece, the number of every piece's group), exactly.
    mixed (piece_hash) is one uint64 per piece for numpy to sort; pieces whose hashes collide are
    caught and settled by comparing both words."""
    import numpy as np

    first, codes = group(mixed)
    if (low[first][codes] == low).all() and (high[first][codes] == high).all():
        return first, codes
    _, first, codes = np.unique(np.stack([low, high], axis=1), axis=0, return_index=True, return_inverse=True)
    return first, codes.ravel()


def group(values):
    """(one index of each distinct value, the group number of every value), by a hash table:
    values (uint64 hashes) pick their slot by their top bits and take the next slot while it
    holds another value. Each round is a few numpy passes over the values not yet placed; at most
    half the slots are used, so rounds are few. About twice as fast as sorting the values.

    Example: [7, 5, 7] -> ([1, 2], [1, 0, 1]): 5 alone, the two 7s together
    """
    import numpy as np

    bits = max(4, (2 * len(values)).bit_length())
    table = np.full(1 << bits, -1, dtype=np.int64)  # slot -> the index of the value that holds it
    slots = (values >> np.uint64(64 - bits)).astype(np.int64)
    holder = np.empty(len(values), dtype=np.int64)
    waiting = np.arange(len(values))
    while len(waiting):
        free = table[slots] < 0
        table[slots[free]] = waiting[free]  # of several values claiming one slot, one wins
        held = table[slots]
        placed = values[held] == values[waiting]
        holder[waiting[placed]] = held[placed]
        waiting, slots = waiting[~placed], (slots[~placed] + 1) & ((1 << bits) - 1)
    first = np.flatnonzero(holder == np.arange(len(values)))
    number = np.empty(len(values), dtype=np.int64)
    number[first] = np.arange(len(first))
    return first, number[holder]


def piece_hash(low, high):
    """A uint64 hash of each packed piece (see pack_spans)."""
    return _mix(low ^ _mix(high))


def _mix(x):
    """splitmix64's finaliser: every input bit moves every output bit (a plain multiply leaves
    the top byte's changes in the top byte, where they cancel)."""
    import numpy as np

    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def document_batches(documents: list, size: int = 1 << 22) -> Iterator[list]:
    """Documents in groups of about `size` bytes: numpy is several times faster on arrays that
    fit the caches than on one huge one."""
    batch, total = [], 0
    for document in documents:
        batch.append(document)
        total += len(document)
        if total >= size:
            yield batch
            batch, total = [], 0
    if batch:
        yield batch
