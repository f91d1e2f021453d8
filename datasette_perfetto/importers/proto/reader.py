"""Splits a Perfetto protobuf trace into TracePacket byte strings, streaming.

A trace file is a `Trace` message: a sequence of field-1 (packet) records.
Reading them one at a time keeps memory flat however large the file is;
the whole file is never parsed as one `Trace` message.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from ...stats import Stats

CHUNK_BYTES = 4 << 20
# A compressed_packets block inflates to a few hundred KB in practice; anything
# far larger is treated as hostile (a zip bomb) and dropped.
MAX_INFLATED_BYTES = 64 << 20
# No real packet comes near this; a larger length is a corrupt length field.
MAX_PACKET_BYTES = 256 << 20

WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32 = 0, 1, 2, 5


class CorruptData(Exception):
    pass


def decode_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Returns (value, new_pos); IndexError if buf ends inside the varint."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        result |= (b & 0x7F) << shift
        pos += 1
        if b < 0x80:
            return result, pos
        shift += 7
        if shift >= 64:
            raise CorruptData("varint longer than 10 bytes")


def looks_like_proto_trace(head: bytes) -> bool:
    """True if `head` starts like a Trace message (a packet record)."""
    if len(head) < 2 or head[0] != 0x0A:
        return False
    try:
        length, pos = decode_varint(head, 1)
    except (IndexError, CorruptData):
        return False
    if length == 0:
        return True
    if pos >= len(head):
        return True
    tag = head[pos]
    return (tag >> 3) > 0 and (tag & 7) in (WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32)


MODULE_SYMBOLS_TAG = (61 << 3) | WIRE_LEN  # TracePacket.module_symbols


def starts_with_module_symbols(head: bytes) -> bool:
    """True if the first packet's first field is module_symbols: a symbols file, imported as a proto
    trace (trace_processor's IsProtoTraceWithSymbols; its archive order puts these last)."""
    try:
        length, pos = decode_varint(head, 1)
        if length == 0:
            return False
        tag, _ = decode_varint(head, pos)
    except (IndexError, CorruptData):
        return False
    return tag == MODULE_SYMBOLS_TAG


class ProtoReader:
    """Yields the bytes of each TracePacket in a stream; counts damage in stats."""

    def __init__(self, stream: BinaryIO, stats: Stats) -> None:
        self.stream = stream
        self.stats = stats
        self.bytes_read = 0

    def packets(self) -> Iterator[bytes]:
        """The bytes of each TracePacket."""
        return self._records(False)

    def scanned(self) -> Iterator:
        """As packets(), except that a packet holding only a track event, timestamp,
        sequence id and flags comes as scan_simple_track_event's tuple, read in place
        (the importer's hot path: no copy of the packet, no second pass over it)."""
        return self._records(True)

    def _records(self, scan: bool) -> Iterator:
        buf = b""
        pos = 0
        eof = False
        while True:
            # Parse as many whole records as the buffer holds.
            n = len(buf)
            while pos < n:
                start = pos
                try:
                    # One-byte varints (a packet's tag; most packets' lengths) read inline: the call is
                    # most of their cost, twice per packet.
                    tag = buf[pos]
                    if tag < 0x80:
                        pos += 1
                    else:
                        tag, pos = decode_varint(buf, pos)
                    wire = tag & 7
                    if wire == WIRE_LEN:
                        length = buf[pos]
                        if length < 0x80:
                            pos += 1
                        else:
                            length, pos = decode_varint(buf, pos)
                        if length >= MAX_PACKET_BYTES:
                            raise CorruptData(f"record length {length}")
                        end = pos + length
                        if end > n:
                            pos = start
                            break
                        if tag >> 3 == 1:
                            simple = scan_track_event_range(buf, pos, end) if scan else None
                            yield buf[pos:end] if simple is None else simple
                        pos = end
                    elif wire == WIRE_VARINT:
                        _, pos = decode_varint(buf, pos)
                    elif wire == WIRE_I64:
                        if pos + 8 > n:
                            pos = start
                            break
                        pos += 8
                    elif wire == WIRE_I32:
                        if pos + 4 > n:
                            pos = start
                            break
                        pos += 4
                    else:
                        raise CorruptData(f"invalid wire type {wire}")
                    if tag >> 3 == 0:
                        raise CorruptData("field number 0")
                except IndexError:
                    pos = start
                    break
                except CorruptData:
                    self.stats.inc("proto_tokenizer_corrupt_data")
                    return
            if eof:
                if pos < len(buf):
                    self.stats.inc("proto_tokenizer_truncated_packet")
                return
            chunk = self._read_chunk()
            eof = not chunk
            buf = buf[pos:] + chunk
            pos = 0

    def _read_chunk(self) -> bytes:
        """The stream's next bytes (empty at its end); a gzip file cut short is counted, and what was read kept."""
        try:
            chunk = self.stream.read(CHUNK_BYTES)
        except (EOFError, OSError, zlib.error):
            self.stats.inc("compressed_file_truncated")
            chunk = b""
        self.bytes_read += len(chunk)
        if not chunk and getattr(self.stream, "truncated", False):
            self.stats.inc("compressed_file_truncated")
        return chunk


def inflate_packets(data: bytes, stats: Stats) -> list[bytes]:
    """Inflates a compressed_packets block into its packets (empty on damage)."""
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, MAX_INFLATED_BYTES)
    except zlib.error:
        stats.inc("compressed_packets_errors")
        return []
    if inflater.unconsumed_tail or not inflater.eof:
        # Beyond the size limit (a zip bomb) or an unfinished stream: drop it whole.
        stats.inc("compressed_packets_errors")
        return []
    return list(ProtoReader(io.BytesIO(raw), stats).packets())


# TracePacket fields a "simple" track-event packet may hold: trusted_uid (3),
# timestamp (8), trusted_packet_sequence_id (10), track_event (11),
# sequence_flags (13), timestamp_clock_id (58: Chromium sets it on one event in
# sixteen). Anything else goes through the full TracePacket parse.
_TAG_UID, _TAG_TS, _TAG_SEQ, _TAG_EVENT, _TAG_FLAGS = 0x18, 0x40, 0x50, 0x5A, 0x68
_TAG_CLOCK_ID, _TAG_CLOCK_ID_SECOND = 0xD0, 0x03  # 58 << 3 | varint: a two-byte tag


def scan_simple_track_event(data: bytes):
    """(timestamp, sequence id, flags, TrackEvent bytes, timestamp clock id or None) for a
    packet holding only those fields, read without building a TracePacket (the hot path); else None."""
    return scan_track_event_range(data, 0, len(data))


def scan_track_event_range(data: bytes, pos: int, n: int):
    """scan_simple_track_event for the packet in data[pos:n]."""
    ts = seq = event = clock_id = None
    flags = 0
    try:
        while pos < n:
            tag = data[pos]
            if tag == _TAG_CLOCK_ID:
                if data[pos + 1] != _TAG_CLOCK_ID_SECOND:
                    return None
                clock_id, pos = decode_varint(data, pos + 2)
                continue
            b = data[pos + 1]
            pos += 2
            if b < 0x80:  # one-byte varint: the usual case, decoded inline
                value = b
            else:
                value, pos = decode_varint(data, pos - 1)
            if tag == _TAG_EVENT:
                end = pos + value
                if end > n:
                    return None
                event = data[pos:end]
                pos = end
            elif tag == _TAG_TS:
                ts = value
            elif tag == _TAG_SEQ:
                seq = value
            elif tag == _TAG_FLAGS:
                flags = value
            elif tag != _TAG_UID:
                return None
    except (IndexError, CorruptData):
        return None
    if event is None or pos != n:
        return None
    return ts, seq, flags, event, clock_id
