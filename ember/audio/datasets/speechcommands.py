import os

from ember.audio.datasets._utils import Dataset, load_audio, no_download, require_dir

_NOISE = "_background_noise_"


def _load_list(root, *names):
    out = []
    for name in names:
        with open(os.path.join(root, name)) as f:
            out += [os.path.normpath(os.path.join(root, line.strip())) for line in f
                    if line.strip()]
    return out


class SPEECHCOMMANDS(Dataset):
    """Speech Commands: ``root/<folder_in_archive>/<url>/<label>/<speaker>_nohash_<n>.wav``.
    ``subset``: None, "training", "validation" (validation_list.txt) or "testing"
    (testing_list.txt). Item n: ``(waveform, sample_rate, label, speaker_id,
    utterance_number)``."""

    def __init__(self, root, url="speech_commands_v0.02", folder_in_archive="SpeechCommands",
                 download=False, subset=None):
        if subset not in (None, "training", "validation", "testing"):
            raise ValueError("When `subset` is not None, it must be one of ['training', "
                             "'validation', 'testing'].")
        if url in ("speech_commands_v0.01", "speech_commands_v0.02"):
            base = url
        else:
            base = os.path.basename(url).rsplit(".tar.gz", 1)[0]
        self._path = os.path.join(os.fspath(root), folder_in_archive, base)
        if download and not os.path.isdir(self._path):
            no_download("SPEECHCOMMANDS", self._path)
        require_dir("SPEECHCOMMANDS", self._path)
        if subset == "validation":
            self._walker = _load_list(self._path, "validation_list.txt")
        elif subset == "testing":
            self._walker = _load_list(self._path, "testing_list.txt")
        else:
            walker = []
            for label in sorted(os.listdir(self._path)):
                d = os.path.join(self._path, label)
                if label == _NOISE or not os.path.isdir(d):
                    continue
                walker += [os.path.normpath(os.path.join(d, f)) for f in sorted(os.listdir(d))
                           if f.endswith(".wav")]
            if subset == "training":
                held = set(_load_list(self._path, "validation_list.txt", "testing_list.txt"))
                walker = [w for w in walker if w not in held]
            self._walker = sorted(walker)

    def get_metadata(self, n):
        path = self._walker[n]
        label = os.path.basename(os.path.dirname(path))
        speaker, _, utterance = os.path.splitext(os.path.basename(path))[0].split("_")
        return path, 16000, label, speaker, int(utterance)

    def __getitem__(self, n):
        path, _, label, speaker, utterance = self.get_metadata(n)
        waveform, sample_rate = load_audio(path)
        return waveform, sample_rate, label, speaker, utterance

    def __len__(self):
        return len(self._walker)
