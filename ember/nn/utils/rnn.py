"""ember.nn.utils.rnn (torch.nn.utils.rnn): PackedSequence and the pack/pad helpers.

Packing and padding are single differentiable gathers (``index_select`` over a flattened
view, plus one padding row where needed), so their backward is one ``index_add``."""
from collections import namedtuple
from collections.abc import Iterable

import numpy as np

import ember as torch
from ember import Tensor

__all__ = ['PackedSequence', 'invert_permutation', 'pack_padded_sequence',
           'pad_packed_sequence', 'pad_sequence', 'unpad_sequence', 'pack_sequence',
           'unpack_sequence']


def invert_permutation(permutation):
    """The inverse of an index permutation (None stays None)."""
    if permutation is None:
        return None
    p = np.asarray(permutation.detach().numpy())
    inv = np.empty_like(p)
    inv[p] = np.arange(p.size, dtype=p.dtype)
    return torch.from_numpy(inv)


class PackedSequence(namedtuple('PackedSequence',
                                'data batch_sizes sorted_indices unsorted_indices')):
    """Packed rows of variable-length sequences: ``data`` (N, *) time-major, ``batch_sizes``
    (T,) rows per step, and the batch permutation (and its inverse) used to sort by length.
    Built by pack_padded_sequence / pack_sequence rather than by hand."""
    __slots__ = ()

    def __new__(cls, data, batch_sizes=None, sorted_indices=None, unsorted_indices=None):
        if batch_sizes is None:            # PackedSequence((data, batch_sizes))
            if not (isinstance(data, (list, tuple)) and len(data) == 2):
                raise AssertionError('Expected data to be a list or tuple of length 2')
            data, batch_sizes = data
        if unsorted_indices is None:
            unsorted_indices = invert_permutation(sorted_indices)
        return super().__new__(cls, data, batch_sizes, sorted_indices, unsorted_indices)

    def to(self, *args, **kwargs):
        """Moves/casts ``data`` only; the index tensors stay as they are."""
        data = self.data.to(*args, **kwargs)
        return self if data is self.data else self._replace(data=data)

    def cuda(self, *args, **kwargs):
        return self.to(*args, device='cuda', **kwargs)

    def cpu(self, *args, **kwargs):
        return self.to(*args, device='cpu', **kwargs)

    def pin_memory(self):
        return self

    def is_pinned(self):
        return False

    @property
    def is_cuda(self):
        return False


for _name, _dt in (('double', 'float64'), ('float', 'float32'), ('half', 'float16'),
                   ('long', 'int64'), ('int', 'int32'), ('short', 'int16'), ('char', 'int8'),
                   ('byte', 'uint8')):
    setattr(PackedSequence, _name,
            (lambda dt: lambda self: self.to(dtype=getattr(torch, dt)))(_dt))


def _idx(a):
    return torch.from_numpy(np.ascontiguousarray(a, dtype=np.int64))


def _pack_padded(input, lengths, batch_first):
    """(T, B, *) or (B, T, *) padded input + sorted lengths -> (data, batch_sizes)."""
    if batch_first:
        input = input.transpose(0, 1)
    T, B = input.shape[0], input.shape[1]
    if lengths.ndim != 1:
        raise RuntimeError(f"'lengths' argument should be a 1D CPU int64 tensor, but got "
                           f"{lengths.ndim}D cpu Long tensor")
    if lengths.shape[0] != B:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{lengths.shape[0]} (batch_size={B})")
    if B and lengths[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if B > 1 and np.any(lengths[1:] > lengths[:-1]):
        raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                           "`enforce_sorted` is True. You can pass `enforce_sorted=False` to "
                           "pack_padded_sequence and/or pack_sequence to sidestep this "
                           "requirement if you do not need ONNX exportability.")
    if B and lengths[0] > T:
        raise RuntimeError(f"Expected lengths to be at most the sequence length {T}, but got "
                           f"{int(lengths[0])}")
    steps = int(lengths[0]) if B else 0
    batch_sizes = (lengths[None, :] > np.arange(steps)[:, None]).sum(1).astype(np.int64)
    # time-major flat index of every kept (t, b)
    tt, bb = np.nonzero(np.arange(B)[None, :] < batch_sizes[:, None])
    flat = input.reshape((T * B,) + tuple(input.shape[2:]))
    data = flat.index_select(0, _idx(tt * B + bb))
    return data, torch.from_numpy(batch_sizes)


def pack_padded_sequence(input, lengths, batch_first=False, enforce_sorted=True):
    """Packs a Tensor containing padded sequences of variable length."""
    if isinstance(lengths, Tensor):
        lengths_np = np.asarray(lengths.detach().numpy()).astype(np.int64)
    else:
        lengths_np = np.asarray(lengths, dtype=np.int64)
    if enforce_sorted:
        sorted_indices = None
    else:
        # torch's order of tied lengths: its (unstable) descending sort, which ember's sort
        # reproduces (a stable argsort differs from 17 sequences on)
        lengths_sorted, sorted_indices = torch.sort(_idx(lengths_np), descending=True)
        lengths_np = lengths_sorted.numpy()
        batch_dim = 0 if batch_first else 1
        input = input.index_select(batch_dim, sorted_indices)
    data, batch_sizes = _pack_padded(input, lengths_np, batch_first)
    return PackedSequence(data, batch_sizes, sorted_indices)


def pad_packed_sequence(sequence, batch_first=False, padding_value=0.0, total_length=None):
    """Pads a packed batch of variable length sequences (inverse of pack_padded_sequence)."""
    bs = np.asarray(sequence.batch_sizes.numpy()).astype(np.int64)
    max_seq_length = bs.shape[0]
    if total_length is not None:
        if total_length < max_seq_length:
            raise ValueError(f'Expected total_length to be at least the length of the longest '
                             f'sequence in input, but got total_length={total_length} and max '
                             f'sequence length being {max_seq_length}')
        max_seq_length = total_length
    data = sequence.data
    B = int(bs[0]) if bs.size else 0
    T = max_seq_length
    n = data.shape[0]
    offsets = np.concatenate([[0], np.cumsum(bs)[:-1]]).astype(np.int64)
    idx = np.full((T, B), n, dtype=np.int64)
    for t in range(bs.shape[0]):      # over time steps only
        idx[t, :bs[t]] = offsets[t] + np.arange(bs[t])
    pad = torch.full((1,) + tuple(data.shape[1:]), padding_value, dtype=data.dtype)
    src = torch.cat([data, pad], 0)
    out = src.index_select(0, _idx(idx.reshape(-1)))
    out = out.reshape(idx.shape + tuple(data.shape[1:]))
    _copy_slices_names(out)
    if batch_first:           # a view of the time-major result, with its strides, as torch
        out = out.transpose(0, 1)
    lengths = (bs[None, :] > np.arange(B)[:, None]).sum(1).astype(np.int64)
    unsorted_indices = sequence.unsorted_indices
    if unsorted_indices is not None:
        batch_dim = 0 if batch_first else 1
        return (out.index_select(batch_dim, unsorted_indices),
                torch.from_numpy(lengths[np.asarray(unsorted_indices.numpy())]))
    return out, torch.from_numpy(lengths)


def _copy_slices_names(out):
    """torch pads by copying each step's rows into a filled tensor: its nodes (the top two
    here: the reshape and the gather) show as ``CopySlices``."""
    from ember.autograd.graph import rename_node
    node = out.grad_fn
    for _ in range(2):
        if node is None:
            return
        rename_node(node, "torch::autograd::CopySlices")
        node = node.next_functions[0][0] if node.next_functions else None


def pad_sequence(sequences, batch_first=False, padding_value=0.0, padding_side='right'):
    """Pad a list of variable length Tensors with ``padding_value``."""
    if isinstance(sequences, Tensor):
        sequences = sequences.unbind(0)
    if not isinstance(sequences, Iterable):
        raise RuntimeError(f'pad_sequence: Expected iterable for input sequences, but got arg '
                           f'of type: {type(sequences)}')
    sequences = tuple(sequences)
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    if padding_side not in ("left", "right"):
        raise RuntimeError(f"Expected padding_side to be one of left or right, but got "
                           f"{padding_side}.")
    if any(s.dim() == 0 for s in sequences):
        raise RuntimeError("pad_sequence: Expected every sequence to have at least 1 "
                           "dimension, but got a 0-dim tensor")
    trailing = tuple(sequences[0].shape[1:])
    lens = np.array([s.shape[0] for s in sequences], dtype=np.int64)
    B, L = len(sequences), int(lens.max())
    for s_ in sequences:                # torch copies each into its row: copy_'s broadcast text
        if s_.dim() == len(trailing) + 1:
            for d, (a, b) in enumerate(zip(trailing, s_.shape[1:]), 1):
                if a != b and b != 1:
                    raise RuntimeError(f"The size of tensor a ({a}) must match the size of "
                                       f"tensor b ({b}) at non-singleton dimension {d}")
    flat = [s if tuple(s.shape[1:]) == trailing else s.expand((s.shape[0],) + trailing)
            for s in sequences]
    dtype = sequences[0].dtype
    pad = torch.full((1,) + trailing, padding_value, dtype=dtype)
    src = torch.cat(list(flat) + [pad], 0)
    n = int(lens.sum())
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    pos = np.arange(L)[None, :]
    if padding_side == "right":
        valid = pos < lens[:, None]
        rel = pos
    else:
        valid = pos >= (L - lens)[:, None]
        rel = pos - (L - lens)[:, None]
    idx = np.where(valid, starts[:, None] + rel, n)          # (B, L)
    if not batch_first:
        idx = idx.T
    out = src.index_select(0, _idx(idx.reshape(-1)))
    return out.reshape(idx.shape + trailing)


def unpad_sequence(padded_sequences, lengths, batch_first=False):
    """Padded (T, B, *) (or (B, T, *)) -> a list of the B sequences, each cut to its length."""
    rows = padded_sequences.unbind(0 if batch_first else 1)
    return [row[:int(n)] for row, n in zip(rows, lengths)]


def pack_sequence(sequences, enforce_sorted=True):
    """A list of (L_i, *) tensors -> PackedSequence."""
    lengths = torch.as_tensor([len(seq) for seq in sequences])
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpack_sequence(packed_sequences):
    """PackedSequence -> the list of (L_i, *) tensors it holds, in the original order."""
    return unpad_sequence(*pad_packed_sequence(packed_sequences, batch_first=True),
                          batch_first=True)
