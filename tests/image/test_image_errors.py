"""`mx.image`'s errors: a missing Pillow, bad files and arguments MXNet would reject."""
from __future__ import annotations

import sys

import numpy as np
import pytest

import minimx as mx
from minimx.base import DataFileError, MinimxError


def test_without_pillow_image_library_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "PIL", None)   # `from PIL import Image` fails
    with pytest.raises(mx.recordio.ImageLibraryError, match=r"pip install 'minimx\[image\]'"):
        mx.image.imdecode(b"\x89PNG\r\n")


def test_bad_input_names_it(tmp_path):
    with pytest.raises(DataFileError, match="missing.png"):
        mx.image.imread(str(tmp_path / "missing.png"))
    with pytest.raises(MinimxError, match="flag must be 1"):
        mx.image.imdecode(b"x", flag=2)
    with pytest.raises(MinimxError, match="not str"):
        mx.image.imdecode("not bytes")
    with pytest.raises(MinimxError, match="interpolation 7"):
        mx.image.imresize(mx.nd.zeros((4, 4, 3), dtype="uint8"), 2, 2, interp=7)
    with pytest.raises(MinimxError, match="rand_resize needs rand_crop"):
        mx.image.CreateAugmenter((3, 8, 8), rand_resize=True)
    with pytest.raises(DataFileError, match="nothing.lst"):
        mx.image.ImageIter(2, (3, 8, 8), path_imglist=str(tmp_path / "nothing.lst"))


def test_jitters_keep_a_grey_image_grey():
    img = mx.nd.full((4, 5, 3), 100.0)
    out = mx.image.ColorJitterAug(0.3, 0.3, 0.3)(img.copy()).asnumpy()
    assert out.shape == (4, 5, 3)
    np.testing.assert_allclose(out[..., 0], out[..., 1], rtol=1e-5)
    assert mx.image.CastAug().dumps() == '["castaug", {"type": "float32"}]'
