"""`ImageDetIter.draw_next`: each image as the iterator augments it, its boxes' outlines
in the colour asked for (OpenCV's BGR order) and nothing else changed; colour
normalisation undone; clear errors for what it cannot do."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import minimx as mx
from minimx.base import MinimxError, ShapeError
from minimx.recordio import ImageLibraryError

pytest.importorskip("PIL")

REC = str(Path(__file__).resolve().parents[1] / "fixtures" / "imagedet" / "det.rec")
SIDE = 40


def undrawn(it: mx.image.ImageDetIter) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each sample's augmented RGB image and parsed label, by the iterator's own steps."""
    it.reset()
    out = []
    while True:
        try:
            label, buf = it.next_sample()
        except StopIteration:
            return out
        data, objects = it.augmentation_transform(mx.image.imdecode(buf), it._parse_label(label))
        out.append((data.asnumpy(), objects))


def outlines(objects: np.ndarray, side: int) -> np.ndarray:
    """Where one-pixel outlines of the boxes fall in a side x side image."""
    mask = np.zeros((side + 1, side + 1), bool)   # a box may end on the edge past the last
    for _, *corners in objects[:, :5]:
        x1, y1, x2, y2 = (int(c * side) for c in corners)
        mask[y1:y2 + 1, [x1, x2]] = True
        mask[[y1, y2], x1:x2 + 1] = True
    return mask[:side, :side]


def test_boxes_are_drawn_in_bgr_and_nothing_else_changes():
    it = mx.image.ImageDetIter(1, (3, SIDE, SIDE), path_imgrec=REC)
    drawn = list(it.draw_next(color=(255, 0, 0), thickness=1))
    samples = undrawn(it)
    assert len(drawn) == len(samples) == 5
    for image, (rgb, objects) in zip(drawn, samples, strict=True):
        assert image.shape == (SIDE, SIDE, 3) and image.dtype == np.uint8
        mask = outlines(objects, SIDE)
        assert (image[mask] == [0, 0, 255]).all()       # red, in BGR
        np.testing.assert_array_equal(image[~mask], rgb[:, :, ::-1][~mask].astype(np.uint8))


def test_normalisation_is_undone_before_the_cast():
    it = mx.image.ImageDetIter(1, (3, SIDE, SIDE), path_imgrec=REC, mean=True, std=True)
    image = next(it.draw_next(color=(0, 255, 0), mean=True, std=True))
    rgb, objects = undrawn(it)[0]
    restored = np.clip(rgb.astype(np.float64) * [58.395, 57.12, 57.375]
                       + [123.68, 116.28, 103.53], 0, 255).astype(np.uint8)
    mask = outlines(objects, SIDE) | np.roll(outlines(objects, SIDE), 1, axis=(0, 1))
    # thickness 2: the outline and its next pixels inward; compare well away from it
    keep = ~(mask | np.roll(mask, -1, axis=(0, 1)))
    np.testing.assert_allclose(image[keep].astype(int), restored[:, :, ::-1][keep], atol=1)


def test_labels_are_written_in_white_inside_their_boxes():
    it = mx.image.ImageDetIter(1, (3, 96, 96), path_imgrec=REC)
    plain = next(it.draw_next(color=(0, 0, 0)))
    it.reset()
    named = next(it.draw_next(color=(0, 0, 0), id2labels={0: "cat"}))
    changed = np.argwhere((plain != named).any(axis=2))
    at = tuple(changed.T)   # Pillow's default font is antialiased: white blended in
    assert (named[at] >= plain[at]).all() and named[at].min(axis=1).max() > 230
    # sample 0's one box (class 0) starts at (0.1, 0.2) of the image: the text 5 px in
    assert changed[:, 1].min() >= int(0.1 * 96) + 5 and changed[:, 0].min() >= int(0.2 * 96) + 5


def test_what_it_cannot_do_raises(monkeypatch):
    it = mx.image.ImageDetIter(1, (3, SIDE, SIDE), path_imgrec=REC)
    with pytest.raises(ShapeError, match="std must be True or 1 or 3 numbers, got 2"):
        next(it.draw_next(std=[1.0, 2.0]))
    with pytest.raises(MinimxError, match="thickness must be >= 1, got 0"):
        next(it.draw_next(thickness=0))
    monkeypatch.setitem(sys.modules, "cv2", None)   # OpenCV missing
    with pytest.raises(ImageLibraryError, match="pip install opencv-python"):
        next(it.draw_next(waitKey=1))
