"""minimx.formats.params_file against MXNet-written fixtures, hand-built legacy records, and
mutated files that must always end in GraphFormatError.

Records are built here from the documented layout (mxnet-formats.md), not with the
writer under test, so a shared misreading of the format cannot pass unnoticed.
"""
from __future__ import annotations

import io
import os
import struct
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from minimx.base import (
    BFLOAT16,
    DTYPE_TO_FLAG,
    MXNET_BFLOAT16,
    DTypeError,
    GraphFormatError,
    MinimxError,
    ShapeError,
)
from minimx.formats.params_file import (
    NDARRAY_V1_MAGIC,
    NDARRAY_V2_MAGIC,
    NDARRAY_V3_MAGIC,
    load_arrays,
    save_arrays,
)

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
PARAMS_FIXTURES = sorted((FIXTURES / "params").glob("*.params"))
# Every .params MXNet wrote with mx.nd.save / export / save_checkpoint (V2, dense).
V2_DENSE_FIXTURES = [p for p in sorted(FIXTURES.rglob("*.params"))
                     if p.stem not in ("sparse", "v3_np_shape")]


# -- building files from the documented layout ---------------------------------------------
def container(records: list[bytes], names: list[str] | None = None) -> bytes:
    out = struct.pack("<QQQ", 0x112, 0, len(records)) + b"".join(records)
    names = names or []
    out += struct.pack("<Q", len(names))
    for name in names:
        raw = name.encode()
        out += struct.pack("<Q", len(raw)) + raw
    return out


def le_bytes(array: np.ndarray) -> bytes:
    return array.astype(array.dtype.newbyteorder("<")).tobytes()


def _tail(array: np.ndarray, flag: int, dev_type: int = 1) -> bytes:
    return struct.pack("<iii", dev_type, 0, flag) + le_bytes(array)


def v2_record(array: np.ndarray, dev_type: int = 1, magic: int = NDARRAY_V2_MAGIC) -> bytes:
    head = struct.pack(f"<Iii{array.ndim}q", magic, 0, array.ndim, *array.shape)
    return head + _tail(array, DTYPE_TO_FLAG[array.dtype], dev_type)


def v1_record(array: np.ndarray) -> bytes:
    head = struct.pack(f"<Ii{array.ndim}q", NDARRAY_V1_MAGIC, array.ndim, *array.shape)
    return head + _tail(array, DTYPE_TO_FLAG[array.dtype])


def pre_v1_record(array: np.ndarray) -> bytes:
    head = struct.pack(f"<I{array.ndim}I", array.ndim, *array.shape)
    return head + _tail(array, DTYPE_TO_FLAG[array.dtype])


def npz_like(path: Path) -> list[np.ndarray] | dict[str, np.ndarray]:
    """The fixtures' .npz convention: arr_0, arr_1, ... for a list, names for a dict."""
    with np.load(path) as npz:
        items = {k: npz[k] for k in npz.files}
    if list(items) == [f"arr_{i}" for i in range(len(items))]:
        return list(items.values())
    return items


def assert_same(got: list | dict, want: list | dict) -> None:
    assert type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)
        got, want = list(got.values()), list(want.values())
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if w.dtype == MXNET_BFLOAT16:  # MXNet's view of bfloat16 loads as ml_dtypes'
            w = w.view(BFLOAT16)
        assert (g.dtype, g.shape) == (w.dtype, w.shape)
        assert g.tobytes() == w.tobytes()


# -- round trips -----------------------------------------------------------------------------
SUPPORTED = sorted((d for d in DTYPE_TO_FLAG if d != BFLOAT16), key=str)  # bf16: its bits


@st.composite
def arrays_in_any_dtype(draw: st.DrawFn) -> np.ndarray:
    shape = draw(hnp.array_shapes(min_dims=1, max_dims=5, min_side=0, max_side=4))
    if draw(st.booleans()) and draw(st.booleans()):
        return draw(hnp.arrays(np.uint16, shape)).view(draw(st.sampled_from(
            [BFLOAT16, MXNET_BFLOAT16])))
    return draw(hnp.arrays(draw(st.sampled_from(SUPPORTED)), shape))


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.lists(arrays_in_any_dtype(), max_size=5),
                 st.dictionaries(st.text(max_size=8), arrays_in_any_dtype(), max_size=5)))
def test_round_trip(data: list | dict) -> None:
    buf = io.BytesIO()
    save_arrays(buf, data)
    loaded = load_arrays(buf.getvalue())
    if isinstance(data, dict) and not data:
        assert loaded == []  # an empty dict writes the same bytes as an empty list
        return
    assert_same(loaded, data)
    assert all(a.flags.writeable for a in (loaded.values() if isinstance(loaded, dict) else loaded))


def test_round_trip_through_a_path(tmp_path: Path) -> None:
    data = {"arg:w": np.arange(6, dtype=np.float32).reshape(2, 3)}
    save_arrays(tmp_path / "w.params", data)
    assert_same(load_arrays(tmp_path / "w.params"), data)
    assert_same(load_arrays(str(tmp_path / "w.params")), data)
    with open(tmp_path / "w.params", "rb") as f:
        assert_same(load_arrays(f), data)


def test_single_array_saves_as_one_element_list() -> None:
    buf = io.BytesIO()
    save_arrays(buf, np.ones((2, 3), np.float32))
    assert len(buf.getvalue()) == 96  # as MXNet 1.9.1 writes a 2x3 float32 array
    assert_same(load_arrays(buf.getvalue()), [np.ones((2, 3), np.float32)])


def test_inputs_are_normalized_to_contiguous_little_endian() -> None:
    base = np.arange(12, dtype=">f8").reshape(3, 4)
    buf = io.BytesIO()
    save_arrays(buf, [base.T, base[:, ::2]])
    want = [np.ascontiguousarray(view, "<f8") for view in (base.T, base[:, ::2])]
    assert_same(load_arrays(buf.getvalue()), want)


def test_save_rejects_what_the_format_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(ShapeError, match="0-d"):
        save_arrays(io.BytesIO(), [np.ones((), np.float32)])
    for bad in (np.zeros(2, np.complex64), np.array(["a"]), np.zeros(2, object)):
        with pytest.raises(DTypeError, match="cannot hold"):
            save_arrays(io.BytesIO(), {"x": bad})
    with pytest.raises(MinimxError, match="keys must be str"):
        save_arrays(io.BytesIO(), {1: np.ones(1)})
    with pytest.raises(MinimxError, match="not a numpy array"):
        save_arrays(io.BytesIO(), [[1.0, 2.0]])
    # Checked before the file is opened: a bad entry leaves no file behind.
    with pytest.raises(ShapeError):
        save_arrays(tmp_path / "bad.params", [np.ones(2), np.ones(())])
    assert not (tmp_path / "bad.params").exists()


# -- MXNet-written fixtures ------------------------------------------------------------------
@pytest.mark.parametrize("path", PARAMS_FIXTURES, ids=lambda p: p.name)
def test_mxnet_fixture_matches_its_npz(path: Path) -> None:
    assert_same(load_arrays(path), npz_like(path.with_suffix(".npz")))


@pytest.mark.parametrize("path", V2_DENSE_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_save_writes_mxnets_bytes(path: Path) -> None:
    buf = io.BytesIO()
    save_arrays(buf, load_arrays(path))
    assert buf.getvalue() == path.read_bytes()


def test_fixture_set_is_complete() -> None:
    names = {p.name for p in PARAMS_FIXTURES}
    assert {"dtypes_list.params", "dtypes_dict.params", "sparse.params", "bfloat16.params",
            "v3_np_shape.params", "empty_list.params", "single_array.params"} <= names
    assert len(V2_DENSE_FIXTURES) >= 10


def test_bfloat16_loads_as_ml_dtypes_bfloat16() -> None:
    (value,) = load_arrays(FIXTURES / "params" / "bfloat16.params").values()
    assert value.dtype == BFLOAT16
    as_float = value.astype(np.float32)
    np.testing.assert_array_equal(as_float[0], [1.0, -2.5, 3.140625])
    np.testing.assert_allclose(as_float[1], [0.0, 65280.0, -1 / 3], rtol=2 ** -8)


def test_v3_records_hold_scalars_and_empty_arrays() -> None:
    got = load_arrays(FIXTURES / "params" / "v3_np_shape.params")
    assert got["scalar"].shape == () and got["scalar"] == 3.5
    assert got["empty"].shape == (0, 3)


# -- hand-built records ----------------------------------------------------------------------
def test_legacy_v1_and_pre_v1_records() -> None:
    a = np.arange(4, dtype=np.float64).reshape(2, 2)
    b = np.arange(6, dtype=np.int32).reshape(2, 3)
    c = np.array([1, 0, 1], dtype=np.uint8)
    assert_same(load_arrays(container([v1_record(a), pre_v1_record(b), v2_record(c)])), [a, b, c])
    assert_same(load_arrays(container([pre_v1_record(b)], ["w"])), {"w": b})


def test_empty_dims_and_extra_type_flags() -> None:
    arrays = [np.zeros((0, 3), np.float32), np.arange(3, dtype=np.int16),
              np.arange(3, dtype=np.uint16), np.arange(3, dtype=np.uint32),
              np.arange(3, dtype=np.uint64)]
    assert_same(load_arrays(container([v2_record(a) for a in arrays])), arrays)


def test_context_is_ignored() -> None:
    a = np.array([1.0, 2.0], np.float32)
    assert_same(load_arrays(container([v2_record(a, dev_type=2)])), [a])


def test_bool_bytes_other_than_one_are_true() -> None:
    raw = container([v2_record(np.array([0, 1, 2, 255], np.uint8))])
    flag_at = raw.index(struct.pack("<iii", 1, 0, 3)) + 8
    patched = raw[:flag_at] + struct.pack("<i", 7) + raw[flag_at + 4:]
    np.testing.assert_array_equal(load_arrays(patched)[0], [False, True, True, True])


@pytest.mark.parametrize("record", [
    struct.pack("<Iii", NDARRAY_V2_MAGIC, 0, 0),      # V2 ndim 0
    struct.pack("<Ii", NDARRAY_V1_MAGIC, 0),          # V1 ndim 0
    struct.pack("<I", 0),                             # pre-V1 ndim 0
    struct.pack("<Iiiq", NDARRAY_V3_MAGIC, 0, 1, -1),  # V3 unknown dim
], ids=["v2", "v1", "pre-v1", "v3"])
def test_none_arrays_are_rejected_as_mxnet_does(record: bytes) -> None:
    ok = v2_record(np.ones(2, np.float32))
    with pytest.raises(GraphFormatError, match="record 0 of 2.*'none' array"):
        load_arrays(container([record, ok]))


def test_duplicate_names_keep_the_last_and_trailing_bytes_are_ignored() -> None:
    a, b = np.ones(2, np.float32), np.zeros(2, np.float32)
    got = load_arrays(container([v2_record(a), v2_record(b)], ["w", "w"]) + b"junk")
    assert list(got) == ["w"] and got["w"].tobytes() == b.tobytes()


def sparse_record(stype: int, shape: tuple, sshape: tuple, data: np.ndarray,
                  aux: list[np.ndarray], v: int = NDARRAY_V2_MAGIC) -> bytes:
    def shp(s: tuple) -> bytes:
        return struct.pack(f"<i{len(s)}q", len(s), *s)
    out = struct.pack("<Ii", v, stype) + shp(sshape) + shp(shape) + struct.pack("<iii", 1, 0, 0)
    for a in aux:
        out += struct.pack("<i", DTYPE_TO_FLAG[a.dtype]) + shp(a.shape)
    return out + le_bytes(data.astype(np.float32)) + b"".join(le_bytes(a) for a in aux)


def test_sparse_records_load_densified() -> None:
    rows = sparse_record(1, (4, 2), (2, 2), np.array([[1, 2], [3, 4]]), [np.array([0, 3])])
    csr = sparse_record(2, (2, 3), (2,), np.array([5, 6]),
                        [np.array([0, 1, 2], np.int64), np.array([2, 0], np.int64)])
    got = load_arrays(container([rows, csr]))
    np.testing.assert_array_equal(got[0], [[1, 2], [0, 0], [0, 0], [3, 4]])
    np.testing.assert_array_equal(got[1], [[0, 0, 5], [6, 0, 0]])


@pytest.mark.parametrize("record, message", [
    (sparse_record(1, (4, 2), (2, 2), np.ones((2, 2)), [np.array([0, 4])]), "out of range"),
    (sparse_record(1, (4, 2), (2, 3), np.ones((2, 3)), [np.array([0, 1])]), "inconsistent"),
    (sparse_record(1, (4, 2), (2, 2), np.ones((2, 2)), [np.array([0, 1, 2])]), "inconsistent"),
    (sparse_record(2, (2, 3), (2,), np.ones(2), [np.array([0, 2, 1]), np.array([0, 1])]),
     "indptr"),
    (sparse_record(2, (2, 3), (2,), np.ones(2), [np.array([0, 1, 2]), np.array([0, 3])]),
     "column index"),
    (sparse_record(2, (2, 3), (2,), np.ones(2), [np.array([0, 1, 2], np.uint64),
                                                np.array([0, 7], np.uint64)]), "column index"),
    (sparse_record(2, (2, 3, 1), (2,), np.ones(2), [np.array([0, 1, 2]), np.array([0, 1])]),
     "inconsistent"),
    (sparse_record(1, (2 ** 40, 2), (0, 2), np.ones((0, 2)), [np.zeros(0, np.int64)]),
     "densify"),
    (sparse_record(1, (4, 2), (1, 2), np.ones((1, 2)), [np.array([1.0])]), "integers"),
    (sparse_record(1, (4, 2), (1, 2), np.ones((1, 2)), [np.array([1])], NDARRAY_V3_MAGIC),
     "dense only"),
    (sparse_record(3, (4, 2), (1, 2), np.ones((1, 2)), [np.array([1])]), "storage type"),
])
def test_bad_sparse_records(record: bytes, message: str) -> None:
    with pytest.raises(GraphFormatError, match=message):
        load_arrays(container([record]))


# -- robustness ------------------------------------------------------------------------------
def small_files() -> list[bytes]:
    """Files covering every record kind, each a few hundred bytes."""
    legacy = container([v1_record(np.arange(3, dtype=np.int64)),
                        pre_v1_record(np.ones((2, 2), np.float16))], ["a", "b"])
    picked = [FIXTURES / "params" / f for f in
              ("dtypes_dict.params", "sparse.params", "v3_np_shape.params", "bfloat16.params")]
    return [legacy] + [p.read_bytes() for p in picked]


SMALL_FILES = small_files()


def assert_fails_cleanly(data: bytes) -> None:
    start = time.perf_counter()
    with pytest.raises(GraphFormatError, match=r"byte offset \d+"):
        load_arrays(data)
    assert time.perf_counter() - start < 0.5


def load_or_fail_cleanly(data: bytes) -> None:
    """A mutated file may still be valid; anything else must be a GraphFormatError."""
    start = time.perf_counter()
    try:
        load_arrays(data)
    except GraphFormatError:
        pass
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("index", range(len(SMALL_FILES)))
def test_every_truncation_fails_cleanly(index: int) -> None:
    data = SMALL_FILES[index]
    for end in range(len(data)):
        assert_fails_cleanly(data[:end])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(SMALL_FILES), st.data())
def test_flipped_bytes_never_escape(data: bytes, draw: st.DataObject) -> None:
    mutated = bytearray(data)
    for _ in range(draw.draw(st.integers(1, 4))):
        at = draw.draw(st.integers(0, len(data) - 1))
        mutated[at] ^= draw.draw(st.integers(1, 255))
    load_or_fail_cleanly(bytes(mutated))


EXTREMES = [0, 1, 2 ** 31 - 1, 2 ** 32 - 1, 2 ** 62, 2 ** 63 - 1, 2 ** 64 - 1, 2 ** 64 - 2]


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(SMALL_FILES), st.data())
def test_extreme_values_written_anywhere_never_escape(data: bytes, draw: st.DataObject) -> None:
    """Counts, ndims, dims and lengths read as huge numbers must not allocate or loop."""
    width = draw.draw(st.sampled_from([4, 8]))
    at = draw.draw(st.integers(0, len(data) - width))
    value = draw.draw(st.sampled_from(EXTREMES)) % (1 << (8 * width))
    patched = data[:at] + value.to_bytes(width, "little") + data[at + width:]
    load_or_fail_cleanly(patched)


def _patch(data: bytes, at: int, fmt: str, value: int) -> bytes:
    return data[:at] + struct.pack(fmt, value) + data[at + struct.calcsize(fmt):]


ONE = container([v2_record(np.ones((2, 3), np.float32))], ["w"])  # record at 24, ndim at 32


@pytest.mark.parametrize("patched, message", [
    (_patch(ONE, 0, "<Q", 0x113), "header"),
    (_patch(ONE, 16, "<Q", 2 ** 64 - 1), "array count"),
    (_patch(ONE, 16, "<Q", 2 ** 40), "array count"),
    (_patch(ONE, 24, "<I", 2 ** 31), "pre-V1 shape"),
    (_patch(ONE, 32, "<i", 2 ** 31 - 1), "shape dims"),
    (_patch(ONE, 32, "<i", 65), "shape dims"),
    (_patch(ONE, 32, "<i", -5), "negative ndim"),
    (_patch(ONE, 36, "<q", 2 ** 62), "data"),
    (_patch(ONE, 36, "<q", -1), "negative dimension"),
    (_patch(_patch(ONE, 36, "<q", 0), 44, "<q", 2 ** 62), "data"),
    (_patch(ONE, 60, "<i", 13), "unknown type flag"),
    (_patch(ONE, 88, "<Q", 2), "name count"),
    (_patch(ONE, 96, "<Q", 2 ** 64 - 1), "name bytes"),
    (_patch(ONE, 32, "<i", 65) + bytes(600), "numpy's limit of 64"),
    (_patch(ONE, 104, "<B", 0xFF), "not UTF-8"),
    (ONE[:-1], "name bytes"),
    (b"", "header"),
])
def test_targeted_corruption(patched: bytes, message: str) -> None:
    start = time.perf_counter()
    with pytest.raises(GraphFormatError, match=message):
        load_arrays(patched)
    assert time.perf_counter() - start < 0.5


def test_empty_array_with_huge_other_dims_is_rejected() -> None:
    record = struct.pack("<Iii3qiii", NDARRAY_V2_MAGIC, 0, 3, 0, 2 ** 62, 2 ** 62, 1, 0, 0)
    with pytest.raises(GraphFormatError, match="too large for numpy"):
        load_arrays(container([record]))


def test_errors_name_source_record_field_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "cut.params"
    path.write_bytes(ONE[:62])  # inside the type flag
    with pytest.raises(GraphFormatError) as info:
        load_arrays(path)
    message = str(info.value)
    assert str(path) in message and "record 0 of 1" in message
    assert "type flag at byte offset 60: needs 4 bytes but only 2 remain" in message


# -- the minimx -> MXNet direction -----------------------------------------------------------
MXNET_PYTHON = Path(os.environ.get("MXNET_ORACLE_PYTHON", "/work/venvs/mxnet191/bin/python"))


@pytest.mark.skipif(not MXNET_PYTHON.exists(), reason="no MXNet 1.9.1 virtualenv")
def test_files_written_here_load_in_mxnet(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    mxnet_dtypes = [d for d in SUPPORTED if DTYPE_TO_FLAG[d] <= 7]
    samples: dict[str, list | dict] = {
        "dtypes_list": [(rng.standard_normal((2, 3)) * 50).astype(d) for d in mxnet_dtypes],
        "dtypes_dict": {f"arg:{d}": (rng.standard_normal((1, 2, 2)) * 50).astype(d)
                        for d in mxnet_dtypes},
        "shapes": [np.ones((1, 2, 1, 3, 1, 2), np.float32), np.zeros((0, 3), np.float32),
                   np.arange(12, dtype=">i4").reshape(3, 4).T],
        "names": {"ünïcode": np.ones(1, np.float32), "aux:bn_moving_var": np.ones(4, np.float32)},
        "bfloat16": {"w": np.array([0x3F80, 0xC020, 0x7F80], np.uint16).view(MXNET_BFLOAT16)},
        "empty": [],
        "int16_mxnet_cannot_load": [np.arange(3, dtype=np.int16)],
    }
    for stem, data in samples.items():
        save_arrays(tmp_path / f"{stem}.params", data)
        want = data if isinstance(data, dict) else {f"arr_{i}": a for i, a in enumerate(data)}
        # What MXNet should give back: contiguous, native byte order.
        native = {k: np.ascontiguousarray(v, v.dtype.newbyteorder("=")) for k, v in want.items()}
        np.savez(tmp_path / f"{stem}.npz", **native)
    result = subprocess.run([str(MXNET_PYTHON), str(REPO / "tools" / "mxnet_fixtures.py"),
                             "--check-minimx-params", str(tmp_path)],
                            capture_output=True, text=True, timeout=120, check=False,
                            env={**os.environ, "PYTHONPATH": ""})
    lines = {line.split()[1].rstrip(":"): line.split()[0]
             for line in result.stdout.splitlines() if line[:4] in ("OK  ", "FAIL")}
    assert lines == {f"{stem}.params": ("FAIL" if "cannot" in stem else "OK")
                     for stem in samples}, result.stdout + result.stderr


def test_mxnets_legacy_ndarray_v0_file() -> None:
    # MXNet's tests/python/unittest/legacy_ndarray.v0, rebuilt byte for byte (3224
    # bytes): six pre-V1 records of arange(128) float32 and no names.
    arange = np.arange(128, dtype=np.float32)
    data = container([pre_v1_record(arange)] * 6)
    assert len(data) == 3224
    assert_same(load_arrays(data), [arange] * 6)
