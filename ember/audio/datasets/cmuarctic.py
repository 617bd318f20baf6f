import os

from ember.audio.datasets._utils import Dataset, load_audio, no_download, require_dir


def _parse_line(line):
    """``( arctic_a0001 "Author of the danger trail." )`` -> (utterance_id, transcript)."""
    utterance_id, transcript = line.strip().split(" ", 2)[1:]
    return utterance_id, transcript[1:-3]


class CMUARCTIC(Dataset):
    """CMU ARCTIC: ``root/<folder_in_archive>/cmu_us_<url>_arctic/`` holding
    ``etc/txt.done.data`` and ``wav/<utterance_id>.wav``. Item n: ``(waveform,
    sample_rate, transcript, utterance_id)``."""

    def __init__(self, root, url="aew", folder_in_archive="ARCTIC", download=False):
        if url.startswith("http"):
            base = os.path.basename(url).rsplit(".tar.bz2", 1)[0]
        else:
            base = "cmu_us_" + url + "_arctic"
        self._path = os.path.join(os.fspath(root), folder_in_archive, base)
        if download and not os.path.isdir(self._path):
            no_download("CMUARCTIC", self._path)
        require_dir("CMUARCTIC", self._path)
        self._text = os.path.join(self._path, "etc", "txt.done.data")
        with open(self._text) as f:
            self._walker = [_parse_line(line) for line in f if line.strip()]

    def get_metadata(self, n):
        utterance_id, transcript = self._walker[n]
        return (os.path.join(self._path, "wav", utterance_id + ".wav"), 16000, transcript,
                utterance_id)

    def __getitem__(self, n):
        path, _, transcript, utterance_id = self.get_metadata(n)
        waveform, sample_rate = load_audio(path)
        return waveform, sample_rate, transcript, utterance_id

    def __len__(self):
        return len(self._walker)
