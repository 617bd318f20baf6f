"""FakeData: random images drawn reproducibly per index."""
import ember

from .vision import VisionDataset, _pil_image

__all__ = ["FakeData"]


def _to_pil(img):
    """A float CHW tensor in [0, 1] as a PIL image, as ToPILImage makes it (x255, to uint8)."""
    try:
        from ..transforms import ToPILImage
    except ImportError:  # transforms unavailable: the same conversion by hand
        pixels = img.mul(255).byte().numpy().transpose(1, 2, 0)
        mode = {1: "L", 3: "RGB", 4: "RGBA"}[pixels.shape[2]]
        return _pil_image().fromarray(pixels[:, :, 0] if mode == "L" else pixels, mode=mode)
    return ToPILImage()(img)


class FakeData(VisionDataset):
    """Random images as PIL images; image ``i`` is drawn after ``manual_seed(i + random_offset)``
    (the global RNG state is restored afterwards), as torchvision does, so both give equal data."""

    def __init__(self, size=1000, image_size=(3, 224, 224), num_classes=10, transform=None,
                 target_transform=None, random_offset=0):
        super().__init__(transform=transform, target_transform=target_transform)
        self.size = size
        self.num_classes = num_classes
        self.image_size = image_size
        self.random_offset = random_offset

    def _draw(self, index):
        """The image tensor and the label tensor of item ``index``, leaving the RNG as it was."""
        saved = ember.get_rng_state()
        try:
            ember.manual_seed(index + self.random_offset)
            pixels = ember.randn(*self.image_size)
            label = ember.randint(0, self.num_classes, size=(1,), dtype=ember.long)[0]
        finally:
            ember.set_rng_state(saved)
        return pixels, label

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{type(self).__name__} index out of range")
        pixels, label = self._draw(index)
        img, label = self._transformed(_to_pil(pixels), label)
        return img, label.item()

    def __len__(self):
        return self.size
