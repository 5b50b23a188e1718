"""Text normalization before pre-tokenizing: Unicode forms and lowercasing, as Hugging Face's
normalizers NFC, NFD, NFKC, NFKD and Lowercase apply them (in the order given)."""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable

from .errors import BpecliError, arg

# our name -> Hugging Face's normalizer type
STEPS = {"nfc": "NFC", "nfd": "NFD", "nfkc": "NFKC", "nfkd": "NFKD", "lowercase": "Lowercase"}


def check(names: Iterable[str]) -> tuple[str, ...]:
    """The steps named (repeatable, or comma-separated), checked. Example: ["nfkc,lowercase"] -> ("nfkc", "lowercase")"""
    steps = tuple(step.strip().lower() for name in names for step in name.split(",") if step.strip())
    unknown = [step for step in steps if step not in STEPS]
    if unknown:
        raise BpecliError(f"{arg('normalize')} {unknown_step(unknown[0])}")
    return steps


def unknown_step(step: str) -> str:
    """What is said of a step that is none (by check, and by the command line's parser)."""
    return f"{step!r}: expected {', '.join(STEPS)} (several: nfkc,lowercase)"


def normalizer(steps: tuple[str, ...]) -> Callable[[str], str]:
    """The function that applies the steps to a text."""
    functions = [_lowercase if step == "lowercase" else _form(step.upper()) for step in steps]

    def apply(text: str) -> str:
        for function in functions:
            text = function(text)
        return text

    return apply


def _form(form) -> Callable[[str], str]:
    return lambda text: text if unicodedata.is_normalized(form, text) else unicodedata.normalize(form, text)


def _lowercase(text: str) -> str:
    """Each character lowercased on its own, as Hugging Face's Lowercase does: str.lower() alone
    would make a word-final capital sigma "ς" where Hugging Face makes "σ"."""
    return text.replace("\u03a3", "\u03c3").lower()


def to_hugging_face(steps: tuple[str, ...]) -> dict | None:
    """The tokenizer.json normalizer for the steps (None for none)."""
    if not steps:
        return None
    parts = [{"type": STEPS[step]} for step in steps]
    return parts[0] if len(parts) == 1 else {"type": "Sequence", "normalizers": parts}


def from_hugging_face(normalizer: dict | None, where: str) -> tuple[str, ...]:
    """The steps of a tokenizer.json normalizer; one bpecli cannot apply exactly is an error."""
    if normalizer is None:
        return ()
    kind = normalizer.get("type") if isinstance(normalizer, dict) else normalizer
    parts = normalizer.get("normalizers") if kind == "Sequence" else [normalizer]
    ours = {value: key for key, value in STEPS.items()}
    steps = []
    for part in parts or []:
        name = part.get("type") if isinstance(part, dict) else part
        if name not in ours:
            raise BpecliError(f"{where}: its normalizer ({name}) is one bpecli does not apply, so its ids would differ "
                              f"from Hugging Face's (bpecli applies {', '.join(ours)})")
        steps.append(ours[name])
    return tuple(steps)
