"""Plain `encode` and `decode` read their input a block at a time: stdin past the 64 MiB budget
for one document is encoded when it has places to cut, an ids file of any size is decoded, and
encode -> decode gives back the bytes of a 100 MB text; only a stream with no cut in 64 MiB
(/dev/zero) is refused."""

import pytest

from bpecli import BpecliError


def test_ids_in_blocks_are_the_ids_and_their_errors_name_the_line(tmp_path, monkeypatch):
    from bpecli.inputs import documents, sources

    real = sources.read_blocks
    monkeypatch.setattr(sources, "read_blocks", lambda name: real(name, size=7))  # blocks cut inside ids
    path = tmp_path / "ids.txt"
    numbers = [n * 7919 % 100_003 for n in range(2000)]
    path.write_text("\n".join(" ".join(map(str, numbers[i:i + 9])) for i in range(0, 2000, 9)) + "\n")
    assert documents.read_ids(str(path)) == numbers
    path.write_text("1 2\n3 4\n5 x 6\n")
    with pytest.raises(BpecliError, match=r"ids.txt:3: 'x' is not a token id"):
        documents.read_ids(str(path))
    path.write_text("1 2\n3 4\n5 " + "9" * 30 + "\n")
    with pytest.raises(BpecliError, match=r"ids.txt:3: '9{30}' is no token id"):
        documents.read_ids(str(path))


def test_text_decoded_in_blocks_is_the_whole_and_invalid_utf8_is_named_at_its_byte(gpt2):
    import io

    from bpecli.cli.ids import write_decoded

    text = "naïve café — 東京 🙂 " * 50
    ids = gpt2.encode(text)
    out = io.BytesIO()
    write_decoded(gpt2, [ids[i:i + 3] for i in range(0, len(ids), 3)], "strict", out)  # characters split across blocks
    assert out.getvalue().decode() == text
    bad = gpt2.encode("ab") + [gpt2.encode_single_token(b"\xe6")] + gpt2.encode("cd")  # a lone lead byte at byte 2
    expected = len(b"ab")
    for cut in range(len(bad) + 1):
        with pytest.raises(BpecliError, match=f"invalid UTF-8 at byte {expected};"):
            write_decoded(gpt2, [bad[:cut], bad[cut:]], "strict", io.BytesIO())
    out = io.BytesIO()
    write_decoded(gpt2, [bad[:2], bad[2:]], "replace", out)
    assert out.getvalue().decode() == "ab\ufffdcd"
