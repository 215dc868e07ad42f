"""An array file read at once gives what the streaming reader gives, value for value and
error for error: every construct json and ijson read differently goes the streaming way."""

import pytest

from exchange.importers import records
from exchange.importers.records import RecordStreamError, iter_records

CASES = {
    "plain": b'[{"a": 1, "b": [1, 2.5, {"c": null}], "d": true, "e": "\\u00e9\\n"}, 3, "x"]',
    "repeated key": b'[{"a": 1, "a": 2}]',
    "numbers": b"[-0, -1.5e-3, 9223372036854775807, 1.5e308]",
    "nesting at the limit": b"[" + b"[" * 64 + b"]" * 64 + b"]",
    "NaN": b"[NaN]",
    "infinite float": b"[1e400]",
    "integer past 64 bits": b"[123456789012345678901234567890]",
    "lone surrogate": b'["\\ud800"]',
    "surrogate pair": b'["\\ud83d\\ude00"]',
    "trailing garbage": b"[1] x",
    "too deep": b"[" + b"[" * 70 + b"]" * 70 + b"]",
    "not UTF-8": b'["\xff"]',
    "unclosed": b'[{"a": 1}',
    "raw surrogate bytes": b'[{"evidence": "a\xed\xa0\x80"}]',
    "UTF-16 without a BOM": '[{"a": "\\ud800", "b": 1}]'.encode("utf-16-le"),
    "integer 2**63": b"[9223372036854775808]",
    "integer 10**19 - 1": b"[9999999999999999999]",
    "smallest 64-bit integer": b"[-9223372036854775808]",
    "largest integer both take": b"[9223372036854775807, -9223372036854775807]",
    "ints, floats and booleans": b"[1, 1.0, true, 0, 0.0, false]",
}
READ_AT_ONCE = {
    "plain",
    "repeated key",
    "numbers",
    "nesting at the limit",
    "ints, floats and booleans",
    "largest integer both take",
}


def _read(path) -> tuple:
    try:
        return ("records", repr(list(iter_records(path))))  # repr: 1, 1.0 and True differ
    except RecordStreamError as exc:
        return ("error", exc.where, exc.reason, exc.syntax)


def _streamed(path) -> tuple:
    with open(path, "rb") as handle:
        try:
            return ("records", repr(list(records._array_records(path, handle))))
        except RecordStreamError as exc:
            return ("error", exc.where, exc.reason, exc.syntax)


@pytest.mark.parametrize("name", CASES)
def test_read_at_once_or_streamed_the_outcome_is_the_streaming_readers(tmp_path, name):
    path = tmp_path / "records.json"
    path.write_bytes(CASES[name])
    with open(path, "rb") as handle:
        at_once = records._whole_array(handle)
    assert (at_once is not None) == (name in READ_AT_ONCE)
    assert _read(path) == _streamed(path)


def test_a_file_past_the_size_is_streamed(tmp_path, monkeypatch):
    path = tmp_path / "records.json"
    path.write_bytes(CASES["plain"])
    read_whole = []
    monkeypatch.setattr(records, "_whole_array", lambda handle: read_whole.append(1))
    monkeypatch.setattr(records, "WHOLE_ARRAY_BYTES", len(CASES["plain"]) - 1)
    assert _read(path) == _streamed(path)
    assert read_whole == []
