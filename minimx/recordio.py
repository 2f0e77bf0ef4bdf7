"""`mx.recordio`: MXNet's RecordIO files (`.rec`), their `.idx` index, and the image-record
header (`IRHeader`, `pack`, `unpack`), byte for byte as MXNet 1.9.1 writes and reads them.

On disk (dmlc-core's RecordIOWriter, little-endian) each record is the magic number
0xced7230a, a u32 `lrec` = `cflag << 29 | length`, the payload, and zero bytes up to a
multiple of 4. A payload holding the magic number at a 4-byte-aligned offset is cut
there, so that a reader can find record starts by the magic alone: the parts are
written with `cflag` 1 (first), 2 (middle) and 3 (last), the magic itself left out, and
the reader joins them with it (`cflag` 0: a record in one part). An `.idx` file lists
one record a line, `key<TAB>byte offset`.

>>> import minimx as mx
>>> with mx.recordio.MXRecordIO("tmp.rec", "w") as rec:
...     rec.write(mx.recordio.pack(mx.recordio.IRHeader(0, [1.0, 2.0], 7, 0), b"payload"))
>>> header, payload = mx.recordio.unpack(mx.recordio.MXRecordIO("tmp.rec", "r").read())
>>> header.flag, header.label.tolist(), header.id, payload
(2, [1.0, 2.0], 7, b'payload')
"""
from __future__ import annotations

import numbers
import os
import struct
import threading
from collections import namedtuple
from typing import IO, Any

import numpy as np

from .base import DataFileError, MinimxError
from .formats.image_codec import ImageLibraryError, imdecode, imencode

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
__all__ = ["IRHeader", "ImageLibraryError", "MXIndexedRecordIO", "MXRecordIO", "RecordReader",
           "pack", "pack_img", "read_index", "unpack", "unpack_img"]
_LENGTH_BITS = 29
_MAX_LENGTH = (1 << _LENGTH_BITS) - 1
_WHOLE, _FIRST, _MIDDLE, _LAST = 0, 1, 2, 3


def _aligned(length: int) -> int:
    return (length + 3) & ~3


class RecordReader:
    """Reads the records of a RecordIO file from any record's offset (minimx's: what
    `MXRecordIO` reads through, and what `mx.io.ImageRecordIter` seeks in)."""

    def __init__(self, uri: str | os.PathLike) -> None:
        self.uri = os.fspath(uri)
        try:
            self._file: IO[bytes] = open(self.uri, "rb")
        except OSError as exc:
            raise DataFileError(f"RecordIO file {self.uri}: {exc.strerror}") from None

    def close(self) -> None:
        self._file.close()

    def seek(self, offset: int) -> None:
        """Go to the record that starts at byte `offset`."""
        self._file.seek(offset)

    def tell(self) -> int:
        return self._file.tell()

    def _part(self, within: bool) -> tuple[int, int] | None:
        """The (cflag, length) of the part header at the current position, None at the end
        of the file; `within` says whether a record's first part was read already."""
        start = self._file.tell()
        head = self._file.read(8)
        if not head and not within:
            return None
        if len(head) < 8:
            raise DataFileError(f"{self.uri}: truncated record header at byte {start}")
        magic, lrec = struct.unpack("<II", head)
        if magic != MAGIC:
            raise DataFileError(f"{self.uri}: no RecordIO magic number at byte {start} "
                                f"(0x{magic:08x}, expected 0x{MAGIC:08x})")
        cflag, length = lrec >> _LENGTH_BITS, lrec & _MAX_LENGTH
        if cflag > _LAST or within != (cflag in (_MIDDLE, _LAST)):
            raise DataFileError(f"{self.uri}: continuation flag {cflag} out of place at "
                                f"byte {start}")
        return cflag, length

    def read(self) -> bytes | None:
        """The record at the current position (its parts joined), None at the end."""
        parts: list[bytes] = []
        while (part := self._part(within=bool(parts))) is not None:
            cflag, length = part
            body = self._file.read(_aligned(length))
            if len(body) < _aligned(length):
                raise DataFileError(f"{self.uri}: record truncated at byte {self.tell()} "
                                    f"({length} bytes announced)")
            parts.append(body[:length])
            if cflag in (_WHOLE, _LAST):
                return _MAGIC_BYTES.join(parts)
        return None

    def offsets(self) -> list[int]:
        """The byte offset of every record, in file order (what an `.idx` would list);
        reads only the headers, and leaves the position at the start."""
        self._file.seek(0)
        found, within = [], False
        while True:
            start = self._file.tell()
            part = self._part(within)
            if part is None:
                break
            cflag, length = part
            if not within:
                found.append(start)
            self._file.seek(_aligned(length), os.SEEK_CUR)
            within = cflag in (_FIRST, _MIDDLE)
        if self._file.tell() > os.fstat(self._file.fileno()).st_size:
            raise DataFileError(f"{self.uri}: the last record is truncated")
        self._file.seek(0)
        return found


def _write_record(file: IO[bytes], buf: bytes) -> None:
    """dmlc-core's RecordIOWriter::WriteRecord: cut at each aligned magic number."""
    if len(buf) > _MAX_LENGTH:
        raise MinimxError(f"RecordIO records hold less than 2**29 bytes, got {len(buf)}")
    start = 0
    for i in range(0, len(buf) - 3, 4):
        if buf[i:i + 4] == _MAGIC_BYTES:
            cflag = _FIRST if start == 0 else _MIDDLE
            file.write(struct.pack("<II", MAGIC, cflag << _LENGTH_BITS | (i - start)))
            file.write(buf[start:i])
            start = i + 4
    cflag = _LAST if start else _WHOLE
    file.write(struct.pack("<II", MAGIC, cflag << _LENGTH_BITS | (len(buf) - start)))
    file.write(buf[start:])
    file.write(bytes(_aligned(len(buf)) - len(buf)))


class MXRecordIO:
    """Sequential reading (`flag` 'r') or writing ('w') of a RecordIO file, as MXNet's.

    `read()` returns the next record's bytes, None at the end; `reset()` goes back to the
    first record (for a writer: empties the file). Also a context manager (minimx's).
    """

    def __init__(self, uri: str | os.PathLike, flag: str) -> None:
        self._reader: RecordReader | None = None
        self._writer: IO[bytes] | None = None
        self.is_open = False
        if flag not in ("r", "w"):
            raise MinimxError(f"MXRecordIO {os.fspath(uri)}: flag must be 'r' or 'w', "
                              f"not {flag!r}")
        self.uri = os.fspath(uri)
        self.flag = flag
        self.writable = flag == "w"
        self.open()

    def open(self) -> None:
        """Open the file: for writing it is emptied."""
        if self.writable:
            try:
                self._writer = open(self.uri, "wb")
            except OSError as exc:
                raise DataFileError(f"RecordIO file {self.uri}: {exc.strerror}") from None
        else:
            self._reader = RecordReader(self.uri)
        self.is_open = True

    def close(self) -> None:
        """Close the file (nothing if it is closed)."""
        for handle in (self._reader, self._writer):
            if handle is not None:
                handle.close()
        self._reader = self._writer = None
        self.is_open = False

    def __del__(self) -> None:
        self.close()

    def __enter__(self) -> MXRecordIO:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def reset(self) -> None:
        """Back to the first record; a writer's file is emptied."""
        self.close()
        self.open()

    def write(self, buf: bytes) -> None:
        """Append `buf` as one record."""
        _write_record(self._open_writer(), bytes(buf))

    def read(self) -> bytes | None:
        """The next record's bytes; None after the last."""
        return self._open_reader().read()

    def _open_reader(self) -> RecordReader:
        if self._reader is None:
            raise MinimxError(f"MXRecordIO {self.uri}: not open for reading")
        return self._reader

    def _open_writer(self) -> IO[bytes]:
        if self._writer is None:
            raise MinimxError(f"MXRecordIO {self.uri}: not open for writing")
        return self._writer


def read_index(idx_path: str | os.PathLike, key_type: type = int) -> dict[Any, int]:
    """The `key -> byte offset` table of an `.idx` file, in file order."""
    path = os.fspath(idx_path)
    try:
        with open(path) as f:
            lines = f.read().splitlines()
    except OSError as exc:
        raise DataFileError(f"RecordIO index {path}: {exc.strerror}") from None
    index = {}
    for number, line in enumerate(lines, 1):
        fields = line.strip().split("\t")
        try:
            index[key_type(fields[0])] = int(fields[1])
        except (IndexError, ValueError):
            raise DataFileError(f"RecordIO index {path}, line {number}: expected "
                                f"'key<TAB>offset', got {line!r}") from None
    return index


class MXIndexedRecordIO(MXRecordIO):
    """A RecordIO file with its `.idx` index: records read by key (`read_idx`), written
    with one (`write_idx`). `keys` lists the keys in index order."""

    def __init__(self, idx_path: str | os.PathLike, uri: str | os.PathLike, flag: str,
                 key_type: type = int) -> None:
        self.idx_path = os.fspath(idx_path)
        self.key_type = key_type
        self.idx: dict[Any, int] = {}
        self.keys: list[Any] = []
        self._index_file: IO[str] | None = None
        # read_idx seeks, then reads: a DataLoader's worker threads share one reader.
        self._read_lock = threading.Lock()
        super().__init__(uri, flag)

    def open(self) -> None:
        super().open()
        if self.writable:
            self.idx, self.keys = {}, []
            self._index_file = open(self.idx_path, "w")
        else:
            self.idx = read_index(self.idx_path, self.key_type)
            self.keys = list(self.idx)

    def close(self) -> None:
        super().close()
        if self._index_file is not None:
            self._index_file.close()
            self._index_file = None

    def seek(self, idx: Any) -> None:
        """Go to the record of key `idx`."""
        if idx not in self.idx:
            raise DataFileError(f"RecordIO index {self.idx_path} has no key {idx!r}")
        self._open_reader().seek(self.idx[idx])

    def tell(self) -> int:
        """The writer's position: the byte offset the next record gets."""
        return self._open_writer().tell()

    def read_idx(self, idx: Any) -> bytes | None:
        """The record of key `idx` (one thread at a time seeks and reads)."""
        with self._read_lock:
            self.seek(idx)
            return self.read()

    def write_idx(self, idx: Any, buf: bytes) -> None:
        """Append `buf` as the record of key `idx`, and list it in the index."""
        key = self.key_type(idx)
        offset = self.tell()
        self.write(buf)
        assert self._index_file is not None   # open for writing: tell() checked it
        self._index_file.write(f"{key}\t{offset}\n")
        self.idx[key] = offset
        self.keys.append(key)


# named HEADER as MXNet names it, so that reprs read the same
IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])  # type: ignore[name-match]
IRHeader.__doc__ = """An image record's header: `flag` (0, or the number of float32 labels
stored after the header), `label` (a number, or an array of `flag` numbers), `id`, `id2`."""
_IR_FORMAT = "<IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header: IRHeader | tuple, s: bytes) -> bytes:
    """A record of `s` behind `header`; a label that is not a number is stored as float32
    values after the header, with `flag` their count (MXNet's multi-label records)."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    try:
        return struct.pack(_IR_FORMAT, *header) + s
    except struct.error as exc:
        raise MinimxError(f"pack: header {header} does not fit MXNet's (uint32 flag, float "
                          f"label, uint64 id, uint64 id2): {exc}") from None


def unpack(s: bytes) -> tuple[IRHeader, bytes]:
    """The header and the payload of a record; `label` is an array when `flag` > 0."""
    if len(s) < _IR_SIZE:
        raise DataFileError(f"unpack: a record of {len(s)} bytes is shorter than the "
                            f"{_IR_SIZE}-byte image-record header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise DataFileError(f"unpack: the header announces {header.flag} labels "
                                f"({4 * header.flag} bytes) but {len(s)} bytes follow it")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[4 * header.flag:]
    return header, s


def pack_img(header: IRHeader | tuple, img: np.ndarray, quality: int = 95,
             img_fmt: str = ".jpg") -> bytes:
    """`pack` of an image (OpenCV's layout: BGR, BGRA or grey uint8) encoded as
    `img_fmt` (JPEG of `quality`, or PNG of compression level `quality`, at most 9).
    Needs Pillow (the `image` extra)."""
    return pack(header, imencode(img, img_fmt, quality))


def unpack_img(s: bytes, iscolor: int = -1) -> tuple[IRHeader, np.ndarray]:
    """The header and the decoded image of a record, as OpenCV's `imdecode(…, iscolor)`
    gives it (1: BGR, 0: grey, -1: as stored). Needs Pillow (the `image` extra)."""
    header, payload = unpack(s)
    return header, imdecode(payload, iscolor, what=f"image record {header.id}")
