"""Hugging Face's tokenizer.json, for a byte-level BPE: written as a Split on the pattern, then
ByteLevel, BPE and a ByteLevel decoder (with add_prefix_space, a TemplateProcessing and added
tokens' lstrip/rstrip where the tokenizer has them); read only where Hugging Face would give the
ids bpecli gives, and refused, naming why, where it would not."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

from ..errors import BpecliError, TokenizerFileError, arg
from ..normalize import from_hugging_face, to_hugging_face
from ..pretokenize import PATTERNS
from ..vocab import Template, Vocab
from .common import checked, json_kind, pattern_of
from .gpt2 import Listing, check_merges, indented_json, split_vocab


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


def write_tokenizer_json(vocab: Vocab, path: Path, listing: Listing | None = None) -> None:
    """A Hugging Face tokenizer.json: Split on the pattern, ByteLevel bytes, BPE, ByteLevel decoder.

    ignore_merges makes a pre-token that is itself in the vocabulary one token, as tiktoken does.
    add_prefix_space is ByteLevel's own with the GPT-2 pattern (ByteLevel splits by that one
    itself), else the normalizer's last steps (PREFIX_STEPS); a template is a TemplateProcessing.
    """
    normalizer = to_hugging_face(vocab.normalize)
    pre_tokenizer: dict = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": hugging_face_regex(vocab.pattern)}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
        ],
    }
    if vocab.add_prefix_space and vocab.pattern == PATTERNS["gpt2"]:
        pre_tokenizer = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True}
    elif vocab.add_prefix_space:
        steps = [] if normalizer is None else normalizer.get("normalizers") or [normalizer]
        normalizer = {"type": "Sequence", "normalizers": [*steps, *PREFIX_STEPS]}
    document = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [
            {"id": rank, "content": token, "single_word": False, "lstrip": vocab.strips.get(token, (False, False))[0],
             "rstrip": vocab.strips.get(token, (False, False))[1], "normalized": False, "special": True}
            for token, rank in sorted(vocab.special_tokens.items(), key=lambda item: item[1])
        ],
        "normalizer": normalizer,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": _template_processing(vocab),
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
            "vocab": "\0vocab",  # the two long parts go in below, by indented_json
            "merges": "\0merges",
        },
    }
    listing = listing or Listing.of(vocab)
    # Hugging Face gives an added token the id the model's vocab gives it, else the next id after
    # the vocab's: special tokens that are not the ids right after the ordinary ones (a tokenizer
    # trained by Hugging Face, cl100k's gap) are listed in the model's vocab too, as its trainer does
    first = len(vocab.ranks)
    after = sorted(listing.specials) == list(range(first, first + len(listing.specials)))
    model_vocab = listing.ordinary_json if after else listing.vocab_json()
    text = json.dumps(document, ensure_ascii=False, indent=1)
    text = text.replace('"\\u0000vocab"', model_vocab.replace("\n", "\n  "), 1)  # at depth 2
    text = text.replace('"\\u0000merges"', indented_json(listing.merges, depth=2), 1)
    path.write_text(text + "\n", encoding="utf-8")


def _template_processing(vocab: Vocab) -> dict | None:
    """The TemplateProcessing post-processor of the vocabulary's template (None without one); the
    second text of a pair, and what follows it, has type id 1."""
    template = vocab.template
    if template is None:
        return None

    def pieces(form: tuple[int | str, ...], second_from: int) -> list[dict]:
        return [{"Sequence": {"id": part, "type_id": int(i >= second_from)}} if isinstance(part, str) else
                {"SpecialToken": {"id": vocab.special_ids[part], "type_id": int(i >= second_from)}}
                for i, part in enumerate(form)]

    used = sorted({part for form in (template.single, template.pair or ()) for part in form if isinstance(part, int)})
    pair = template.pair or ("A", "B")
    return {
        "type": "TemplateProcessing",
        "single": pieces(template.single, len(template.single)),
        # (a pair form made by train() is the single form twice: the second half is the second text's)
        "pair": pieces(pair, len(template.single) if pair[: len(template.single)] == template.single else pair.index("B")),
        "special_tokens": {vocab.special_ids[i]: {"id": vocab.special_ids[i], "ids": [i], "tokens": [vocab.special_ids[i]]}
                           for i in used},
    }


def load_hugging_face(path: Path, document: dict, pattern: str | None, specials: dict | None) -> Vocab:
    """A Hugging Face tokenizer.json of a byte-level BPE, with its add_prefix_space, the tokens its
    post-processor adds and its added tokens' lstrip/rstrip. Whatever would make Hugging Face give
    other ids than bpecli (a normalizer it does not apply, dropout, single_word...) is refused,
    naming it: loading it anyway would be silently wrong."""
    model = document["model"]  # an object (see _load_file)
    if model.get("type", "BPE") != "BPE":
        raise TokenizerFileError(f"{path}: holds a {str(model.get('type'))[:40]} model; bpecli reads byte-level BPE only")
    _check_shapes(path, document)
    normalizer, prefix_by_normalizer = _without_prefix_steps(document.get("normalizer"))
    try:  # the normalizer first: a step bpecli does not apply is refused by name
        steps = from_hugging_face(normalizer, str(path))
    except BpecliError as e:
        raise TokenizerFileError(e.args[0]) from None
    _refuse_unsupported(path, document, model)
    added_tokens = document.get("added_tokens") or []
    added = {t["content"]: t["id"] for t in added_tokens}
    if len(added) != len(added_tokens):
        twice = next(t["content"] for t in added_tokens if [u["content"] for u in added_tokens].count(t["content"]) > 1)
        raise TokenizerFileError(f"{path}: added token {twice[:60]!r} is listed twice in added_tokens")
    entries = {token: rank for token, rank in model["vocab"].items() if token not in added}
    merges = model.get("merges") or []
    for number, merge in enumerate(merges):  # "left right", or [left, right] (tokenizers 0.20 on)
        if not (isinstance(merge, str) and merge.count(" ") == 1 or
                isinstance(merge, list) and len(merge) == 2 and all(isinstance(part, str) for part in merge)):
            raise TokenizerFileError(f"{path}: merge {number} ({str(merge)[:60]!r}) is not a pair of tokens "
                                     "(expected \"left right\" or [\"left\", \"right\"])")
    made = [m.replace(" ", "", 1) if isinstance(m, str) else "".join(m) for m in merges]
    parts = [part for m in merges for part in (m.split(" ") if isinstance(m, str) else m)]
    check_merges(path, merges, made, parts, model["vocab"])
    # entries no merge makes and no added token names (GPT-2's <|endoftext|> in a plain
    # ByteLevelBPETokenizer) become special tokens, as they do from vocab.json
    ranks, extra = split_vocab(path, entries, set(made), specials or ())
    found, prefix_by_pre_tokenizer = _hugging_face_pattern(path, document.get("pre_tokenizer"))
    specials = specials if specials is not None else {**extra, **added}
    template = _template(path, document.get("post_processor"), specials)
    vocab = checked(path, ranks, specials, pattern_of(pattern, found, f"from {path}"), [path], normalize=steps)
    strips = {t["content"]: (bool(t.get("lstrip")), bool(t.get("rstrip"))) for t in added_tokens
              if (t.get("lstrip") or t.get("rstrip")) and t["content"] in specials}
    return replace(vocab, add_prefix_space=prefix_by_normalizer or prefix_by_pre_tokenizer, template=template, strips=strips)


# The steps of a tokenizer.json, and the field of each that lists the steps of a Sequence.
_STEPS = {"normalizer": "normalizers", "pre_tokenizer": "pretokenizers", "post_processor": "processors",
          "decoder": "decoders"}


def _check_shapes(path: Path, document: dict) -> None:
    """Each part of a tokenizer.json that bpecli reads is of the JSON type Hugging Face writes:
    a file that says something else in a field is named, not half read."""
    model = document["model"]
    if not isinstance(model.get("vocab"), dict):
        raise TokenizerFileError(f"{path}: its model's vocab is {json_kind(model.get('vocab'))}, not an object of token: id")
    for field, value in (("added_tokens", document.get("added_tokens")), ("model's merges", model.get("merges"))):
        if value is not None and not isinstance(value, list):
            raise TokenizerFileError(f"{path}: its {field} is {json_kind(value)}, not a list")
    for field, inner in _STEPS.items():
        step = document.get(field)
        steps = [step]
        if isinstance(step, dict) and step.get("type") == "Sequence":
            listed = step.get(inner)
            if not isinstance(listed, list):
                raise TokenizerFileError(f"{path}: its {field} is a Sequence whose {inner} is {json_kind(listed)}, not a list")
            steps = listed
        for part in steps:
            if part is None and part is step:
                continue
            if not isinstance(part, dict) or not isinstance(part.get("type"), str):
                raise TokenizerFileError(f"{path}: its {field} holds {json_kind(part)} where a step such as "
                                         "{\"type\": \"ByteLevel\"} belongs")


def _refuse_unsupported(path: Path, document: dict, model: dict) -> None:
    def kind(step):
        return step.get("type") if isinstance(step, dict) else step

    def only_byte_level(step) -> bool:  # ByteLevel steps change offsets, never ids
        if step is None:
            return True
        steps = step.get("processors") or step.get("decoders") or [] if kind(step) == "Sequence" else [step]
        return all(kind(s) == "ByteLevel" for s in steps)

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
        stripped = [option for option in ("single_word",) if token.get(option)]
        if stripped:
            raise TokenizerFileError(f"{path}: added token {token['content']!r} sets {', '.join(stripped)}, "
                                     "which bpecli does not apply")


def _hugging_face_pattern(path: Path, pre_tokenizer: dict | None) -> tuple[str, bool]:
    """The pattern of the two byte-level pre-tokenizers bpecli reproduces exactly, and whether it
    adds a space before the text: ByteLevel with its own (GPT-2) regex, or a Split on a regex (each
    match a piece) then ByteLevel without one."""
    steps = [pre_tokenizer] if pre_tokenizer else []
    if pre_tokenizer and pre_tokenizer.get("type") == "Sequence":
        steps = pre_tokenizer.get("pretokenizers") or []
    kinds = [step.get("type") if isinstance(step, dict) else None for step in steps]
    if kinds == ["ByteLevel"] and steps[0].get("use_regex", True):
        return PATTERNS["gpt2"], bool(steps[0].get("add_prefix_space"))
    if kinds == ["Split", "ByteLevel"] and not steps[1].get("use_regex", True):
        split = steps[0]
        found = split.get("pattern")
        regex = found.get("Regex") if isinstance(found, dict) else None
        if not isinstance(regex, str) or split.get("behavior") != "Isolated" or split.get("invert"):
            raise TokenizerFileError(f"{path}: its Split pre-tokenizer is not a regex whose matches are the pieces "
                                     "(behavior Isolated, invert false), the one bpecli reproduces")
        if steps[1].get("add_prefix_space"):  # after a Split, ByteLevel prefixes each piece, not the text
            raise TokenizerFileError(f"{path}: its ByteLevel pre-tokenizer sets add_prefix_space=true after a Split, which "
                                     "puts a space before every piece; bpecli does not reproduce that")
        # a preset as written for Oniguruma is the preset (and keeps its vectorised splitter)
        return next((preset for preset in PATTERNS.values() if hugging_face_regex(preset) == regex), regex), False
    raise TokenizerFileError(f"{path}: its pre-tokenizer ({' + '.join(map(str, kinds)) or 'none'}) is not a byte-level "
                             f"one bpecli reproduces (ByteLevel, or Split on a regex then ByteLevel); name one with {arg('pattern')}")


# add_prefix_space where the pre-tokenizer is a Split: the normalizer's last two steps put a space
# before a text and take it off again where the text started with one, as ByteLevel's
# add_prefix_space does before the whole text (after a Split it would prefix every piece; a
# zero-width Replace would do it in one step, but tokenizers 0.23 panics on one).
PREFIX_STEPS = [{"type": "Prepend", "prepend": " "}, {"type": "Replace", "pattern": {"Regex": "\\A  "}, "content": " "}]


def _without_prefix_steps(normalizer: dict | None) -> tuple[dict | None, bool]:
    """The normalizer without PREFIX_STEPS at its end, and whether they were there."""
    if not isinstance(normalizer, dict) or normalizer.get("type") != "Sequence":
        return normalizer, False
    listed = normalizer.get("normalizers") or []
    if listed[-2:] != PREFIX_STEPS:
        return normalizer, False
    rest = listed[:-2]
    return (rest[0] if len(rest) == 1 else {"type": "Sequence", "normalizers": rest} if rest else None), True


def _template(path: Path, processor: dict | None, specials: dict[str, int]) -> Template | None:
    """The special tokens a post-processor adds (RobertaProcessing, BertProcessing,
    TemplateProcessing, alone or in a Sequence with ByteLevel, which changes offsets only), as a
    Template; None if it adds none."""
    steps = [processor] if processor else []
    if processor and processor.get("type") == "Sequence":
        steps = processor.get("processors") or []
    adding = [step for step in steps if step.get("type") != "ByteLevel"]
    if not adding:
        return None
    if len(adding) > 1:
        raise TokenizerFileError(f"{path}: its post_processor holds {len(adding)} steps that add tokens "
                                 f"({', '.join(str(s.get('type')) for s in adding)}); bpecli reproduces one")
    step, kind = adding[0], adding[0].get("type")
    if kind in ("RobertaProcessing", "BertProcessing"):
        cls, sep = (_token_id(path, kind, step.get(name)) for name in ("cls", "sep"))
        between = (sep, sep) if kind == "RobertaProcessing" else (sep,)
        template = Template(single=(cls, "A", sep), pair=(cls, "A", *between, "B", sep))
    elif kind == "TemplateProcessing":
        named = step.get("special_tokens") or {}
        forms = [_form(path, step.get(name), named, specials) if step.get(name) is not None else None
                 for name in ("single", "pair")]
        if forms[0] is None:
            raise TokenizerFileError(f"{path}: its TemplateProcessing has no single template")
        template = Template(single=forms[0], pair=forms[1])
    else:
        raise TokenizerFileError(f"{path}: its post_processor ({str(kind)[:40]}) adds tokens bpecli does not add, so its ids "
                                 "would differ from Hugging Face's (bpecli reproduces TemplateProcessing, RobertaProcessing "
                                 "and BertProcessing)")
    try:
        template.check({rank: token for token, rank in specials.items()})
    except BpecliError as e:
        raise TokenizerFileError(f"{path}: its post_processor: {e.args[0]}") from None
    return template


def _token_id(path: Path, kind: str, pair) -> int:
    """The id of a [token, id] pair of RobertaProcessing or BertProcessing."""
    if not (isinstance(pair, list) and len(pair) == 2 and type(pair[1]) is int):
        raise TokenizerFileError(f"{path}: its {kind} names a token as {json_kind(pair)}, not [token, id]")
    return pair[1]


def _form(path: Path, pieces, named: dict, specials: dict[str, int]) -> tuple[int | str, ...]:
    """A TemplateProcessing form ([{"SpecialToken": {"id": "<s>"}}, {"Sequence": {"id": "A"}}])
    as ids, with "A" and "B" for the texts."""
    if not isinstance(pieces, list):
        raise TokenizerFileError(f"{path}: its TemplateProcessing holds {json_kind(pieces)} where a list of pieces belongs")
    form: list[int | str] = []
    for piece in pieces:
        if isinstance(piece, dict) and isinstance(piece.get("Sequence"), dict):
            form.append(str(piece["Sequence"].get("id")))
        elif isinstance(piece, dict) and isinstance(piece.get("SpecialToken"), dict):
            name = piece["SpecialToken"].get("id")
            entry = named.get(name) if isinstance(name, str) else None
            ids = entry.get("ids") if isinstance(entry, dict) else None
            if not isinstance(ids, list) or not all(type(i) is int for i in ids):
                raise TokenizerFileError(f"{path}: its TemplateProcessing uses {str(name)[:40]!r}, which its "
                                         "special_tokens do not give ids for")
            form += ids
        else:
            raise TokenizerFileError(f"{path}: its TemplateProcessing holds a piece {str(piece)[:60]!r}, neither a "
                                     "Sequence nor a SpecialToken")
    return tuple(form)
