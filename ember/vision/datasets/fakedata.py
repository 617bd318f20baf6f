import ember

from .vision import VisionDataset, _pil_image

__all__ = ["FakeData"]


def _to_pil(img):
    """torchvision's ToPILImage for a float CHW tensor: scale by 255, cast to uint8."""
    try:
        from ..transforms import ToPILImage
    except ImportError:
        ToPILImage = None
    if ToPILImage is not None:
        return ToPILImage()(img)
    Image = _pil_image()
    arr = img.mul(255).byte().numpy().transpose(1, 2, 0)
    if arr.shape[2] == 1:
        return Image.fromarray(arr[:, :, 0], mode="L")
    return Image.fromarray(arr, mode={3: "RGB", 4: "RGBA"}[arr.shape[2]])


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

    def __getitem__(self, index):
        if index >= len(self):
            raise IndexError(f"{self.__class__.__name__} index out of range")
        rng_state = ember.get_rng_state()
        ember.manual_seed(index + self.random_offset)
        img = ember.randn(*self.image_size)
        target = ember.randint(0, self.num_classes, size=(1,), dtype=ember.long)[0]
        ember.set_rng_state(rng_state)
        img = _to_pil(img)
        if self.transform is not None:
            img = self.transform(img)
        if self.target_transform is not None:
            target = self.target_transform(target)
        return img, target.item()

    def __len__(self):
        return self.size
