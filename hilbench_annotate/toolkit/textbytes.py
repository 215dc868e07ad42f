"""Text that gives back the bytes it was read from.

A file imported as text (a BIRD description CSV) is shown and edited as text, and exported
as the source's bytes: ``text_decode`` names the encoding it read, and ``text_encode`` with
that name returns exactly those bytes for the same text. Line ends are left as they are
(CRLF stays CRLF), and so are a missing final newline and trailing bytes.

The encodings:
- ``utf-8``: valid UTF-8 without a byte order mark (most files; the default, never stored);
- ``utf-8-sig``: valid UTF-8 after a byte order mark, which the text does not carry (it would
  otherwise be the first CSV header's first character);
- ``cp1252``: anything else (BIRD's Windows files: 0x96 is "–", 0x95 "•", 0xE9 "é"). Decoded
  as browsers decode windows-1252 (the WHATWG table): the five bytes cp1252 leaves undefined
  (0x81, 0x8D, 0x8F, 0x90, 0x9D) become U+0081 … U+009D instead of U+FFFD, so every byte
  sequence decodes, and encodes back, without loss. Latin-1 would be as lossless but show
  0x96 and its kind as invisible control characters.
"""

UTF8 = "utf-8"
UTF8_BOM = "utf-8-sig"
CP1252 = "cp1252"
BOM = b"\xef\xbb\xbf"


def _cp1252_differences() -> dict[int, str]:
    """Each byte whose cp1252 character is not its Latin-1 one: byte -> character."""
    differences = {}
    for byte in range(256):
        try:
            char = bytes([byte]).decode(CP1252)
        except UnicodeDecodeError:
            continue  # undefined in cp1252: the C1 code point, as Latin-1 (and WHATWG) has it
        if ord(char) != byte:
            differences[byte] = char
    return differences


# Latin-1 code point (= the byte) -> the cp1252 character, and back.
_FROM_LATIN1 = _cp1252_differences()
_TO_LATIN1 = {ord(char): chr(byte) for byte, char in _FROM_LATIN1.items()}


def text_decode(data: bytes) -> tuple[str, str]:
    """``(text, encoding)`` of ``data``: ``text_encode(text, encoding) == data`` always."""
    try:
        text = data.decode(UTF8)
    except UnicodeDecodeError:
        return data.decode("latin-1").translate(_FROM_LATIN1), CP1252
    if data.startswith(BOM):
        return text[1:], UTF8_BOM
    return text, UTF8


def text_encode(text: str, encoding: str = UTF8) -> bytes:
    """``text`` in ``encoding`` (one ``text_decode`` names). A text the encoding cannot hold
    (an author typed "→" into a cp1252 file) is written as UTF-8: the file was edited, and
    UTF-8 is the one encoding that keeps what they wrote."""
    if encoding == UTF8_BOM:
        return BOM + text.encode(UTF8, "surrogateescape")
    if encoding == CP1252:
        try:
            return text.translate(_TO_LATIN1).encode("latin-1")
        except UnicodeEncodeError:
            pass
    return text.encode(UTF8, "surrogateescape")
