import os

from ember.audio.datasets._utils import Dataset, load_audio, no_download, require_dir

gtzan_genres = ["blues", "classical", "country", "disco", "hiphop", "jazz", "metal", "pop",
                "reggae", "rock"]


class GTZAN(Dataset):
    """GTZAN genres: ``root/<folder_in_archive>/<genre>/<genre>.000NN.wav``. Item n:
    ``(waveform, sample_rate, label)``. The fixed train/validation/test splits (``subset``)
    are torchaudio's file lists, which ember does not carry: only ``subset=None``."""

    def __init__(self, root, url="http://opihi.cs.uvic.ca/sound/genres.tar.gz",
                 folder_in_archive="genres", download=False, subset=None):
        if subset is not None:
            if subset not in ("training", "validation", "testing"):
                raise ValueError("When `subset` is not None, it must be one of ['training', "
                                 "'validation', 'testing'].")
            raise NotImplementedError("GTZAN: the fixed 'training'/'validation'/'testing' "
                                      "splits are not carried by ember; use subset=None")
        self._path = os.path.join(os.fspath(root), folder_in_archive)
        if download and not os.path.isdir(self._path):
            no_download("GTZAN", self._path)
        require_dir("GTZAN", self._path)
        self._walker = []
        for genre in gtzan_genres:
            d = os.path.join(self._path, genre)
            if not os.path.isdir(d):
                continue
            for fname in sorted(os.listdir(d)):
                name, ext = os.path.splitext(fname)
                if ext.lower() == ".wav" and "." in name:
                    self._walker.append(name)

    def get_metadata(self, n):
        fileid = self._walker[n]
        label = fileid.split(".")[0]
        return os.path.join(self._path, label, fileid + ".wav"), 22050, label

    def __getitem__(self, n):
        path, _, label = self.get_metadata(n)
        waveform, sample_rate = load_audio(path)
        return waveform, sample_rate, label

    def __len__(self):
        return len(self._walker)
