"""`mx.image`: MXNet 1.9.1's image functions, augmenters and `ImageIter` - decode images
into height x width x channels NDArrays (RGB), resize them as OpenCV does, crop, rotate,
normalise and augment them, and batch them from .rec files or image lists; and the
detection augmenters and `ImageDetIter`, which carry object boxes along. Decoding
needs Pillow (the `image` extra).

>>> import minimx as mx, numpy as np
>>> img = mx.nd.array(np.arange(48).reshape(4, 4, 3), dtype="uint8")
>>> mx.image.center_crop(img, (2, 2))[0].shape
(2, 2, 3)
"""
from .augmenters import (
                         Augmenter,
                         BrightnessJitterAug,
                         CastAug,
                         CenterCropAug,
                         ColorJitterAug,
                         ColorNormalizeAug,
                         ContrastJitterAug,
                         CreateAugmenter,
                         ForceResizeAug,
                         HorizontalFlipAug,
                         HueJitterAug,
                         LightingAug,
                         RandomCropAug,
                         RandomGrayAug,
                         RandomOrderAug,
                         RandomSizedCropAug,
                         ResizeAug,
                         SaturationJitterAug,
                         SequentialAug,
)
from .detection import (
                         CreateDetAugmenter,
                         CreateMultiRandCropAugmenter,
                         DetAugmenter,
                         DetBorrowAug,
                         DetHorizontalFlipAug,
                         DetRandomCropAug,
                         DetRandomPadAug,
                         DetRandomSelectAug,
)
from .detection_iter import ImageDetIter
from .image import (
                         center_crop,
                         color_normalize,
                         copyMakeBorder,
                         fixed_crop,
                         imdecode,
                         imread,
                         imresize,
                         imrotate,
                         random_crop,
                         random_rotate,
                         random_size_crop,
                         resize_short,
                         scale_down,
)
from .image_iter import ImageIter

__all__ = ["Augmenter", "BrightnessJitterAug", "CastAug", "CenterCropAug", "ColorJitterAug",
           "ColorNormalizeAug", "ContrastJitterAug", "CreateAugmenter", "CreateDetAugmenter",
           "CreateMultiRandCropAugmenter", "DetAugmenter", "DetBorrowAug",
           "DetHorizontalFlipAug", "DetRandomCropAug", "DetRandomPadAug", "DetRandomSelectAug",
           "ForceResizeAug", "HorizontalFlipAug", "HueJitterAug", "ImageDetIter", "ImageIter",
           "LightingAug", "RandomCropAug", "RandomGrayAug", "RandomOrderAug",
           "RandomSizedCropAug", "ResizeAug", "SaturationJitterAug", "SequentialAug",
           "center_crop", "color_normalize", "copyMakeBorder", "fixed_crop", "imdecode",
           "imread", "imresize", "imrotate", "random_crop", "random_rotate",
           "random_size_crop", "resize_short", "scale_down"]
