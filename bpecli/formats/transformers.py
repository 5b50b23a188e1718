"""transformers' files beside tokenizer.json (tokenizer_config.json, special_tokens_map.json), so that
AutoTokenizer.from_pretrained loads a bpecli folder as it is."""

from __future__ import annotations

import json
from pathlib import Path

from ..pretokenize import end_of_document
from ..vocab import Vocab


def write_transformers_config(vocab: Vocab, folder: Path) -> None:
    """tokenizer_config.json and special_tokens_map.json, so that transformers'
    AutoTokenizer.from_pretrained(folder) loads tokenizer.json as it is (its post-processor the only
    thing that adds to the ids, nothing "cleaned up" when decoding) and knows the document separator,
    or the template's tokens, as its eos (and bos) token."""
    eos = end_of_document(vocab.special_tokens)
    specials = {"eos_token": eos} if eos else {}
    if vocab.template is not None:  # the template's own tokens (tokenizer.json adds them, not transformers)
        prefix, suffix = vocab.template.prefix, vocab.template.suffix
        specials = {**({"bos_token": vocab.special_ids[prefix[0]]} if len(prefix) == 1 else {}),
                    **({"eos_token": vocab.special_ids[suffix[0]]} if len(suffix) == 1 else specials)}
    config = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "clean_up_tokenization_spaces": False,
        "model_max_length": 1 << 30,
        "added_tokens_decoder": {
            str(rank): {"content": token, "lstrip": vocab.strips.get(token, (False, False))[0], "normalized": False,
                        "rstrip": vocab.strips.get(token, (False, False))[1], "single_word": False, "special": True}
            for token, rank in sorted(vocab.special_tokens.items(), key=lambda item: item[1])
        },
        **specials,
    }
    (folder / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    (folder / "special_tokens_map.json").write_text(json.dumps(specials, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
