import os

from ember.audio.datasets._utils import Dataset, load_audio, no_download, require_dir


class YESNO(Dataset):
    """Sixty Hebrew yes/no recordings: ``root/<folder_in_archive>/0_1_0_0_1_0_1_1.wav``.
    Item n: ``(waveform, sample_rate, labels)`` with the eight 0/1 labels of the name."""

    def __init__(self, root, url="http://www.openslr.org/resources/1/waves_yesno.tar.gz",
                 folder_in_archive="waves_yesno", download=False):
        self._path = os.path.join(os.fspath(root), folder_in_archive)
        if download and not os.path.isdir(self._path):
            no_download("YESNO", self._path)
        require_dir("YESNO", self._path)
        self._walker = sorted(os.path.splitext(f)[0] for f in os.listdir(self._path)
                              if f.endswith(".wav"))

    def get_metadata(self, n):
        fileid = self._walker[n]
        return (os.path.join(self._path, fileid + ".wav"), 8000,
                [int(c) for c in fileid.split("_")])

    def __getitem__(self, n):
        path, _, labels = self.get_metadata(n)
        waveform, sample_rate = load_audio(path)
        return waveform, sample_rate, labels

    def __len__(self):
        return len(self._walker)
