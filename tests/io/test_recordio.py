"""mx.recordio against MXNet 1.9.1: files MXNet wrote read back record for record, and
files minimx writes are byte for byte MXNet's (so MXNet reads them). Fixtures:
tests/fixtures/recordio (tools/mxnet_recordio_fixtures.py, group recordio)."""
from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

import minimx as mx

FIXTURES = Path(__file__).parents[1] / "fixtures" / "recordio"
CASES = json.loads((FIXTURES / "cases.json").read_text())
PAYLOADS = [bytes.fromhex(h) for h in CASES["raw"] + CASES["packed"]]
KEYS = [10 * i for i in range(len(PAYLOADS))]


def test_reads_what_mxnet_wrote_in_order_and_by_key():
    rec = mx.recordio.MXRecordIO(str(FIXTURES / "raw.rec"), "r")
    assert [rec.read() for _ in PAYLOADS] == PAYLOADS
    assert rec.read() is None
    rec.reset()
    assert rec.read() == PAYLOADS[0]
    indexed = mx.recordio.MXIndexedRecordIO(str(FIXTURES / "raw.idx"),
                                            str(FIXTURES / "raw.rec"), "r")
    assert indexed.keys == KEYS
    assert [indexed.read_idx(k) for k in reversed(KEYS)] == PAYLOADS[::-1]


def test_writes_mxnets_bytes(tmp_path: Path):
    rec = mx.recordio.MXIndexedRecordIO(str(tmp_path / "a.idx"), str(tmp_path / "a.rec"), "w")
    offsets = []
    for key, payload in zip(KEYS, PAYLOADS, strict=True):
        offsets.append(rec.tell())
        rec.write_idx(key, payload)
    rec.close()
    assert (tmp_path / "a.rec").read_bytes() == (FIXTURES / "raw.rec").read_bytes()
    assert (tmp_path / "a.idx").read_text() == (FIXTURES / "raw.idx").read_text()
    assert offsets == list(mx.recordio.read_index(FIXTURES / "raw.idx").values())


def test_pack_and_unpack_are_mxnets():
    for header, packed in zip(CASES["headers"], CASES["packed"], strict=True):
        payload = bytes.fromhex(packed)
        assert mx.recordio.pack(header, b"payload%d" % CASES["headers"].index(header)) == payload
        got, rest = mx.recordio.unpack(payload)
        assert rest.startswith(b"payload")
        assert (got.id, got.id2) == (header[2], header[3])
        if isinstance(header[1], list):   # multi-label: flag counts the float32 labels
            assert got.flag == len(header[1])
            np.testing.assert_array_equal(got.label, np.float32(header[1]))
        else:                              # a number: flag forced to 0
            assert (got.flag, got.label) == (0, header[1])


def test_images_round_trip_in_opencv_layout():
    img = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    packed = mx.recordio.pack_img((0, 2.0, 1, 0), img, img_fmt=".png")
    header, back = mx.recordio.unpack_img(packed, iscolor=1)
    np.testing.assert_array_equal(back, img)
    luma = img[..., ::-1].astype(np.uint32) @ np.array([9797, 19235, 3736]) >> 15
    np.testing.assert_array_equal(mx.recordio.unpack_img(packed, 0)[1], luma)
    grey = img[..., 0]
    np.testing.assert_array_equal(
        mx.recordio.unpack_img(mx.recordio.pack_img((0, 0, 0, 0), grey, 3, ".png"))[1], grey)
    flat = np.full((8, 8, 3), [30, 120, 220], np.uint8)   # JPEG keeps a flat colour's BGR
    jpeg = mx.recordio.unpack_img(mx.recordio.pack_img(header, flat, quality=95), 1)[1]
    assert np.abs(jpeg.astype(int) - flat).max() <= 2


def test_mxnets_image_records_decode_as_bgr():
    """png.rec's first image went through MXNet's own OpenCV as RGB planes in the
    png_uint8 case: unpack_img gives the same pixels in BGR."""
    rec = mx.recordio.MXIndexedRecordIO(str(FIXTURES / "png.idx"), str(FIXTURES / "png.rec"),
                                        "r")
    header, img = mx.recordio.unpack_img(rec.read_idx(0), 1)
    want = np.load(FIXTURES / "batches.npz")["png_uint8:0:0:data"][0]   # 8x8 image: no crop
    np.testing.assert_array_equal(np.moveaxis(img[..., ::-1], 2, 0), want)
    assert (header.label, header.id) == (0.0, 100)


def _broken(tmp_path: Path, data: bytes) -> str:
    path = tmp_path / "bad.rec"
    path.write_bytes(data)
    return str(path)


@pytest.mark.parametrize("data, message", [
    (b"\x00\x01\x02\x03\x04\x05\x06\x07", "no RecordIO magic number at byte 0"),
    (struct.pack("<II", 0xCED7230A, 12) + b"abc", "record truncated"),
    (struct.pack("<II", 0xCED7230A, 3 << 29) + b"", "continuation flag 3 out of place"),
    (struct.pack("<II", 0xCED7230A, 1 << 29), "truncated record header at byte 8"),
    (struct.pack("<I", 0xCED7230A), "truncated record header at byte 0"),
])
def test_corrupt_files_are_refused_with_the_place(tmp_path: Path, data: bytes, message: str):
    rec = mx.recordio.MXRecordIO(_broken(tmp_path, data), "r")
    with pytest.raises(mx.DataFileError, match=message):
        rec.read()


def test_bad_input_raises_minimx_errors(tmp_path: Path):
    with pytest.raises(mx.DataFileError, match="missing.rec"):
        mx.recordio.MXRecordIO(str(tmp_path / "missing.rec"), "r")
    with pytest.raises(mx.MinimxError, match="flag must be 'r' or 'w'"):
        mx.recordio.MXRecordIO(str(tmp_path / "a.rec"), "a")
    indexed = mx.recordio.MXIndexedRecordIO(str(FIXTURES / "raw.idx"),
                                            str(FIXTURES / "raw.rec"), "r")
    with pytest.raises(mx.DataFileError, match="has no key 7"):
        indexed.read_idx(7)
    (tmp_path / "bad.idx").write_text("0\t0\nzero\n")
    with pytest.raises(mx.DataFileError, match="bad.idx, line 2"):
        mx.recordio.MXIndexedRecordIO(str(tmp_path / "bad.idx"), str(FIXTURES / "raw.rec"), "r")
    with pytest.raises(mx.DataFileError, match="shorter than the 24-byte"):
        mx.recordio.unpack(b"short")
    with pytest.raises(mx.DataFileError, match="announces 5 labels"):
        mx.recordio.unpack(struct.pack("<IfQQ", 5, 0.0, 0, 0) + b"1234")
    with pytest.raises(mx.DataFileError, match="record 3: not an image"):
        mx.recordio.unpack_img(mx.recordio.pack((0, 1.0, 3, 0), b"not an image"))


def test_without_pillow_image_functions_say_how_to_install(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(mx.recordio.ImageLibraryError, match=r"pip install 'minimx\[image\]'"):
        mx.recordio.pack_img((0, 1.0, 0, 0), np.zeros((2, 2, 3), np.uint8))
