"""Reading a Kineto trace in pieces: its ``traceEvents`` parsed a slice of text at a time, so a
trace of any size (up to ``kineto_json.MAX_KINETO_BYTES`` of text) never holds more than one
slice's parsed events (``read_events``).

A trace whose text fits in ``WHOLE_TEXT_BYTES`` is parsed at once (``kineto_json.document_from_text``,
the fastest). A larger one is read ``PIECE_BYTES`` of (gunzipped) text at a time and split where
the JSON structure says, found with numpy over the bytes (``_Structure``): quotes not escaped by
an odd run of backslashes open and close strings; brackets and braces outside strings change the
depth. Each piece is cut after the last ``traceEvents`` element that ends in it; the elements are
parsed as one JSON array (``kineto_json.parse_json``: orjson when installed), the rest of the piece is
carried into the next. The other top-level keys (``deviceProperties``, ``distributedInfo`` …)
are parsed from the text before and after the array. Both ways give the same events, in the same
order (tested), and the same typed errors: a truncated or invalid document, a cut gzip stream.
"""
from __future__ import annotations

import re
import zlib
from pathlib import Path
from typing import BinaryIO, Callable

import numpy as np

from nsys_diag.loaders.kineto_json import MAX_KINETO_BYTES, document_from_text, parse_json
from nsys_diag.loaders.sniff import GZIP_MAGIC
from nsys_diag.model.errors import InputError, UnrecognizedFormatError
from nsys_diag.model.safe_files import open_regular
from nsys_diag.model.vocabulary import HINT_KINETO_CAPTURE

WHOLE_TEXT_BYTES = 256 << 20
"""Traces with at most this much (gunzipped) text are parsed at once (peak ≈ 6× the text,
``memory_estimate.JSON_MEMORY_FACTOR``); larger ones in pieces."""
PIECE_BYTES = 32 << 20
"""Text parsed at a time when a trace is read in pieces."""
MAX_PREFIX_BYTES = 64 << 20
"""The most text searched for the ``traceEvents`` key before the trace is parsed at once."""
_READ_BYTES = 4 << 20
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_STEP = np.zeros(256, np.int8)
_STEP[[ord("{"), ord("[")]] = 1
_STEP[[ord("}"), ord("]")]] = -1
_MARKED = (_STEP != 0) | (np.arange(256) == ord('"'))
"""Bytes that matter to the structure: brackets, braces and quotes."""
FAST_TRIES = 2
"""Candidate cuts tried without a scan of the piece (``_Pieces._fast_batch``)."""
_AFTER_ELEMENT = re.compile(rb"[ \t\r\n]*([,\]])")
_BETWEEN = frozenset(b" \t\r\n,")
_TRUNCATED_HINT = ("the trace was cut or damaged: record it again and let the profiler finish "
                   "writing it")


def read_events(path: str | Path, add: Callable[[list], None],
                whole_bytes: int | None = None, piece_bytes: int | None = None) -> dict:
    """The trace object of ``path`` without its events (``traceEvents`` empty), after handing
    its ``traceEvents`` to ``add`` in batches, in file order: the whole list at once when the
    text fits ``whole_bytes``, else the elements of each piece of ``piece_bytes`` (module
    docstring; None: ``WHOLE_TEXT_BYTES``, ``PIECE_BYTES``). ``InputError`` (exit 3) as
    ``kineto_json.read_document`` (the same read of the whole file)."""
    whole_bytes = WHOLE_TEXT_BYTES if whole_bytes is None else whole_bytes
    piece_bytes = PIECE_BYTES if piece_bytes is None else piece_bytes
    p = Path(path)
    text = _Text(p)
    head = text.take(whole_bytes + 1)
    if len(head) <= whole_bytes:  # it fits: parsed at once
        doc = document_from_text(p, head)
        del head
        _hand_over(doc, add)
        return doc
    after_key = _find_events_key(head)
    while after_key is None and len(head) < MAX_PREFIX_BYTES:  # read on until the key is found
        more = text.take(len(head))
        if not more:
            break
        head += more
        after_key = _find_events_key(head)
    if after_key is None:  # no top-level traceEvents early: parsed at once, which says why
        head += text.take(MAX_KINETO_BYTES)
        text.close()
        doc = document_from_text(p, head)
        del head
        _hand_over(doc, add)
        return doc
    prefix = head[:after_key]
    pieces = _Pieces(p, text, head, after_key, piece_bytes)
    del head  # memory: the pieces compact it away
    while (batch := pieces.next_batch()) is not None:
        add(batch)
    return pieces.document(prefix)


def _hand_over(doc: dict, add: Callable[[list], None]) -> None:
    events, doc["traceEvents"] = doc["traceEvents"], []
    add(events)


class _Text:
    """The (gunzipped) text of a file, read a block at a time, capped at ``MAX_KINETO_BYTES``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh: BinaryIO | None = open_regular(path)
        self._gz: zlib._Decompress | None = None
        self._pending = b""
        self.read = 0
        first = self._fh.read(_READ_BYTES)
        if first.startswith(GZIP_MAGIC):
            self._gz = zlib.decompressobj(16 + zlib.MAX_WBITS)
            first = self._inflate(first)
        self._pending = first

    def _inflate(self, raw: bytes) -> bytes:
        assert self._gz is not None
        try:
            return self._gz.decompress(raw)
        except zlib.error as exc:
            raise InputError(self.path, f"damaged gzip stream ({exc})",
                             "copy the trace again") from None

    def block(self) -> bytes:
        """The next block of text (b"" at the end)."""
        if self._pending:
            out, self._pending = self._pending, b""
        else:
            out = b""
            while not out and self._fh is not None:
                raw = self._fh.read(_READ_BYTES)
                if not raw:
                    self._end()
                    break
                out = self._inflate(raw) if self._gz is not None else raw
        self.read += len(out)
        if self.read > MAX_KINETO_BYTES:
            raise InputError(self.path, f"trace larger than {MAX_KINETO_BYTES >> 30} GiB",
                             "profile fewer steps (schedule active=N) so the trace is smaller")
        return out

    def _end(self) -> None:
        if self._gz is not None and not self._gz.eof:
            self.close()
            raise InputError(self.path, "truncated gzip stream (the trace was cut while "
                             "written)", "copy the whole .json.gz again")
        self.close()

    def take(self, n: int) -> bytes:
        """Up to ``n`` bytes of text (fewer only at the end; the surplus is kept for ``block``)."""
        parts, got = [], 0
        while got < n:
            b = self.block()
            if not b:
                break
            parts.append(b)
            got += len(b)
        data = b"".join(parts)
        if len(data) > n:
            self._pending, data = data[n:], data[:n]
            self.read -= len(self._pending)
        return data

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class _Structure:
    """The structural characters of a text that starts outside any string: their positions and
    the depth after each (``base`` before the first), strings skipped."""

    def __init__(self, data: bytes | memoryview, base: int) -> None:
        a = np.frombuffer(data, np.uint8)
        marked = np.flatnonzero(_MARKED[a])  # perf: one gather and one scan of the text
        is_quote = a[marked] == 34
        quotes = marked[is_quote]
        quotes = quotes[_unescaped(a, quotes)]
        pos = marked[~is_quote]
        outside = (np.searchsorted(quotes, pos) & 1) == 0  # an even number of quotes before
        self.pos = pos[outside]
        self.depth = base + np.cumsum(_STEP[a[self.pos]], dtype=np.int64)
        self.quotes = quotes
        self.closing = a[self.pos] == ord("}")

    def outside_string(self, i: int) -> bool:
        return int(np.searchsorted(self.quotes, i)) % 2 == 0

    def depth_at(self, i: int, base: int) -> int:
        """The depth just before byte ``i``."""
        k = int(np.searchsorted(self.pos, i))
        return int(self.depth[k - 1]) if k else base


def _unescaped(a: np.ndarray, quotes: np.ndarray) -> np.ndarray:
    """Per quote: not escaped (an even run of backslashes before it). Vectorised over the
    quotes, one step per backslash of the longest run."""
    run = np.zeros(quotes.size, np.int64)
    active = quotes > 0
    k = 1
    while active.any():
        at = np.maximum(quotes - k, 0)
        active &= (quotes - k >= 0) & (a[at] == 92)
        run += active
        k += 1
    return (run & 1) == 0


def _find_events_key(head: bytes) -> int | None:
    """The offset just after the ``[`` of the top-level ``"traceEvents": [`` in the first
    ``MAX_PREFIX_BYTES`` of the text; None when it is not there. Only the text before each
    candidate is scanned (perf: the key is near the start)."""
    for m in _KEY.finditer(head, 0, MAX_PREFIX_BYTES):
        s = _Structure(memoryview(head)[:m.start()], 0)
        if s.outside_string(m.start()) and s.depth_at(m.start(), 0) == 1:
            return m.end()
    return None


class _Pieces:
    """The elements of a ``traceEvents`` array, a piece of text at a time, from its start:
    ``buf[off:]`` is the text not parsed yet, which starts at an element boundary."""

    def __init__(self, path: Path, text: _Text, buf: bytes, off: int, piece: int) -> None:
        self.path, self.text, self.piece = path, text, piece
        self.buf, self.off = buf, off
        self.suffix: bytes | None = None

    def next_batch(self) -> list | None:
        """The parsed elements of the next piece (None after the array's end)."""
        if self.suffix is not None:
            return None
        while True:
            avail, at_end = len(self.buf) - self.off, False
            if avail < self.piece:  # compact (≤ one piece copied) and read the rest of a piece
                more = self.text.take(self.piece - avail)
                at_end = len(more) < self.piece - avail  # fewer only at the end of the text
                self.buf, self.off = self.buf[self.off:] + more, 0
            view = memoryview(self.buf)[self.off:self.off + self.piece]
            fast = self._fast_batch(view)
            if fast is not None:
                return fast
            cut, end = _cut(view)
            if end is not None:  # the array ends in this piece
                self.suffix = self.buf[self.off + end + 1:]
                return self._parse_elements(view[:end])
            if cut is not None:
                self.off += cut + 1
                return self._parse_elements(view[:cut + 1])
            if at_end:
                raise self._error("truncated", "the traceEvents list never ends")
            self.piece *= 2  # an element longer than a piece: read more before cutting

    def _fast_batch(self, view: memoryview) -> list | None:
        """The piece's elements up to its last ``}`` followed by ``,`` or ``]``, when they parse
        as an array (perf: no scan of the piece). Text that parses so ends at an element
        boundary — a cut inside a string or a nested object leaves it open — and a ``]`` after
        it closes the array. None (the scan decides) when ``FAST_TRIES`` candidates fail."""
        lo, hi = self.off, self.off + len(view)
        i, tries = self.buf.rfind(b"}", lo, hi), 0
        while i >= lo and tries < FAST_TRIES:
            after = _AFTER_ELEMENT.match(self.buf, i + 1, hi)
            if after is not None:
                tries += 1
                try:
                    batch = self._parse_elements(view[:i + 1 - lo], quiet=True)
                except ValueError:
                    batch = None
                if batch is not None:
                    if after.group(1) == b"]":
                        self.suffix = self.buf[after.end():]
                    else:
                        self.off = i + 1
                    return batch
            i = self.buf.rfind(b"}", lo, i)
        return None

    def _parse_elements(self, data: memoryview, quiet: bool = False) -> list:
        """The elements in ``data`` (text from an element boundary to one); ``quiet``: a
        ``ValueError`` where they do not parse, else a typed ``InputError``."""
        i = 0
        while i < len(data) and data[i] in _BETWEEN:  # bounded: the separator before an element
            i += 1
        if i == len(data):
            return []
        text = bytearray(b"[")
        text += data[i:]
        text += b"]"
        try:
            return parse_json(text)
        except (ValueError, UnicodeDecodeError) as exc:
            if quiet:
                raise ValueError(str(exc)) from None
            raise self._error("invalid", str(exc).splitlines()[0][:200]) from None

    def document(self, prefix: bytes) -> dict:
        """The trace object from the text before the array (``prefix``, up to its ``[``) and
        after it, with ``traceEvents`` empty."""
        tail = (self.suffix or b"") + self.text.take(MAX_KINETO_BYTES)
        self.text.close()
        try:
            doc = parse_json(prefix + b"]" + tail)
        except (ValueError, UnicodeDecodeError) as exc:
            why = "truncated" if tail.rstrip()[-1:] != b"}" else "invalid"
            raise self._error(why, str(exc).splitlines()[0][:200]) from None
        if not isinstance(doc, dict):
            raise UnrecognizedFormatError(self.path, "JSON without a traceEvents list (not a "
                                          "PyTorch profiler trace)", HINT_KINETO_CAPTURE)
        return doc

    def _error(self, why: str, detail: str) -> InputError:
        self.text.close()
        return InputError(self.path, f"{why} JSON ({detail})", _TRUNCATED_HINT)


def _cut(view: memoryview) -> tuple[int | None, int | None]:
    """Where to cut a piece of the array's text that starts at an element boundary: (None,
    offset of the ``]`` closing the array) when it ends in the piece, else (offset of the ``}``
    closing the piece's last whole element — None when there is none —, None)."""
    s = _Structure(view, 0)
    closes = np.flatnonzero(s.depth < 0)
    if closes.size:
        return None, int(s.pos[closes[0]])
    ends = s.pos[(s.depth == 0) & s.closing]
    return (int(ends[-1]) if ends.size else None), None
