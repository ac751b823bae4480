"""HPACK (RFC 7541) header decoding, for the replies of the hand-written gRPC client.

A gRPC server answers with a few headers (``:status``, ``content-type``) and trailers
(``grpc-status``, ``grpc-message``), using the static and dynamic tables and Huffman coding;
this decodes all of it. Encoding is not needed: the client sends literals only.
"""

from __future__ import annotations

STATIC_TABLE = (
    (":authority", ""),
    (":method", "GET"),
    (":method", "POST"),
    (":path", "/"),
    (":path", "/index.html"),
    (":scheme", "http"),
    (":scheme", "https"),
    (":status", "200"),
    (":status", "204"),
    (":status", "206"),
    (":status", "304"),
    (":status", "400"),
    (":status", "404"),
    (":status", "500"),
    ("accept-charset", ""),
    ("accept-encoding", "gzip, deflate"),
    ("accept-language", ""),
    ("accept-ranges", ""),
    ("accept", ""),
    ("access-control-allow-origin", ""),
    ("age", ""),
    ("allow", ""),
    ("authorization", ""),
    ("cache-control", ""),
    ("content-disposition", ""),
    ("content-encoding", ""),
    ("content-language", ""),
    ("content-length", ""),
    ("content-location", ""),
    ("content-range", ""),
    ("content-type", ""),
    ("cookie", ""),
    ("date", ""),
    ("etag", ""),
    ("expect", ""),
    ("expires", ""),
    ("from", ""),
    ("host", ""),
    ("if-match", ""),
    ("if-modified-since", ""),
    ("if-none-match", ""),
    ("if-range", ""),
    ("if-unmodified-since", ""),
    ("last-modified", ""),
    ("link", ""),
    ("location", ""),
    ("max-forwards", ""),
    ("proxy-authenticate", ""),
    ("proxy-authorization", ""),
    ("range", ""),
    ("referer", ""),
    ("refresh", ""),
    ("retry-after", ""),
    ("server", ""),
    ("set-cookie", ""),
    ("strict-transport-security", ""),
    ("transfer-encoding", ""),
    ("user-agent", ""),
    ("vary", ""),
    ("via", ""),
    ("www-authenticate", ""),
)

# Huffman code lengths of the symbols 0..255 (letter A = 5 bits ... Z = 30 bits); EOS (256)
# is 30 bits. The code is canonical (RFC 7541 Appendix B), so the lengths define it.
_CODE_LENGTHS = (
    "ISXXXXXXXTZXXZXXXXXXXXZXXXXXXXXXBFFHIBDGFFDGDBBBAAABBBBBBBCDKBHF"
    "IBCCCCCCCCCCCCCCCCCCCCCCDCDIOIJBKABABABBBACCBBBABCBAABCCCCCKGJIX"
    "PRPPRRRSRSSSSSTSTTRSTSSSSQRSRSSTRQPRRSSQSRRTQRSSQQRQSRSSPRRRSRRS"
    "VVPORSRUVVVWWVTUOQVWWVWTQQVVXWWWPTPQRQQSRRUUTTVSVWVVWWWWWXWWWWWV"
)


class HpackError(ValueError):
    """The header block cannot be decoded."""


def _build_decoding() -> dict[tuple[int, int], int]:
    lengths = [ord(c) - ord("A") + 5 for c in "".join(_CODE_LENGTHS)] + [30]
    order = sorted(range(257), key=lambda symbol: (lengths[symbol], symbol))
    table: dict[tuple[int, int], int] = {}
    code, previous = -1, lengths[order[0]]
    for symbol in order:
        code = (code + 1) << (lengths[symbol] - previous)
        previous = lengths[symbol]
        table[(lengths[symbol], code)] = symbol
    return table


_DECODING: dict[tuple[int, int], int] | None = None


def huffman_decode(data: bytes) -> bytes:
    """Decode a Huffman-coded string (the padding must be at most 7 one bits)."""
    global _DECODING
    if _DECODING is None:
        _DECODING = _build_decoding()
    table = _DECODING
    out = bytearray()
    code = length = 0
    for byte in data:
        for shift in range(7, -1, -1):
            code = code << 1 | (byte >> shift) & 1
            length += 1
            symbol = table.get((length, code))
            if symbol is not None:
                if symbol == 256:
                    raise HpackError("EOS symbol in a Huffman string")
                out.append(symbol)
                code = length = 0
            elif length > 30:
                raise HpackError("invalid Huffman code")
    if length > 7 or code != (1 << length) - 1:
        raise HpackError("invalid Huffman padding")
    return bytes(out)


def _integer(data: bytes, pos: int, prefix_bits: int) -> tuple[int, int]:
    if pos >= len(data):
        raise HpackError("truncated header block")
    mask = (1 << prefix_bits) - 1
    value = data[pos] & mask
    pos += 1
    if value < mask:
        return value, pos
    shift = 0
    while True:
        if pos >= len(data):
            raise HpackError("truncated integer")
        byte = data[pos]
        pos += 1
        value += (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise HpackError("integer too large")


def _string(data: bytes, pos: int) -> tuple[str, int]:
    if pos >= len(data):
        raise HpackError("truncated header block")
    huffman = bool(data[pos] & 0x80)
    size, pos = _integer(data, pos, 7)
    if pos + size > len(data):
        raise HpackError("truncated string")
    raw = data[pos : pos + size]
    text = huffman_decode(raw) if huffman else raw
    return text.decode("utf-8", "replace"), pos + size


class Decoder:
    """One connection's decoding state (its dynamic table)."""

    def __init__(self, max_size: int = 4096) -> None:
        self._dynamic: list[tuple[str, str]] = []
        self._size = 0
        self._limit = max_size
        self._max_size = max_size

    def _entry(self, index: int) -> tuple[str, str]:
        if 1 <= index <= len(STATIC_TABLE):
            return STATIC_TABLE[index - 1]
        dynamic = index - len(STATIC_TABLE) - 1
        if 0 <= dynamic < len(self._dynamic):
            return self._dynamic[dynamic]
        raise HpackError(f"header table index {index} out of range")

    def _add(self, name: str, value: str) -> None:
        size = 32 + len(name.encode()) + len(value.encode())
        self._dynamic.insert(0, (name, value))
        self._size += size
        self._evict()

    def _evict(self) -> None:
        while self._size > self._limit and self._dynamic:
            name, value = self._dynamic.pop()
            self._size -= 32 + len(name.encode()) + len(value.encode())

    def decode(self, block: bytes) -> list[tuple[str, str]]:
        """The header list of one complete header block."""
        headers: list[tuple[str, str]] = []
        pos = 0
        while pos < len(block):
            byte = block[pos]
            if byte & 0x80:  # indexed field
                index, pos = _integer(block, pos, 7)
                headers.append(self._entry(index))
            elif byte & 0x40:  # literal with incremental indexing
                index, pos = _integer(block, pos, 6)
                name, pos = (_string(block, pos)) if index == 0 else (self._entry(index)[0], pos)
                value, pos = _string(block, pos)
                headers.append((name, value))
                self._add(name, value)
            elif byte & 0x20:  # dynamic table size update
                size, pos = _integer(block, pos, 5)
                if size > self._max_size:
                    raise HpackError(f"table size {size} above the limit")
                self._limit = size
                self._evict()
            else:  # literal without indexing / never indexed
                index, pos = _integer(block, pos, 4)
                name, pos = (_string(block, pos)) if index == 0 else (self._entry(index)[0], pos)
                value, pos = _string(block, pos)
                headers.append((name, value))
        return headers


def literal(name: str, value: str) -> bytes:
    """A header as a literal without indexing, new name, no Huffman coding."""
    out = bytearray(b"\x00")
    for text in (name.encode(), value.encode()):
        out += _encode_integer(len(text), 7) + text
    return bytes(out)


def _encode_integer(value: int, prefix_bits: int) -> bytes:
    mask = (1 << prefix_bits) - 1
    if value < mask:
        return bytes([value])
    out = bytearray([mask])
    value -= mask
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)
