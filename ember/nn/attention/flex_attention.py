"""torch.nn.attention.flex_attention, eager: attention with a user ``score_mod`` and a mask.

``flex_attention(q, k, v, score_mod, block_mask)`` computes ``softmax(score_mod(q k^T *
scale)) v`` over the positions ``block_mask`` keeps. torch calls ``score_mod(score, b, h,
q_idx, kv_idx)`` and ``mask_mod(b, h, q_idx, kv_idx)`` on scalars under vmap; ember calls
them once on broadcasting index tensors (int32, shaped (B,1,1,1), (1,H,1,1), (1,1,L,1),
(1,1,1,S)), which covers the arithmetic, ``torch.where`` and tensor-indexing forms those
functions are written in. Rows that keep no position give zeros (their logsumexp -inf).
As torch on the CPU, q, k, v must not require grad (NotImplementedError); gradients flow
to tensors the mods close over.
"""
from __future__ import annotations

import math

__all__ = ["BlockMask", "flex_attention", "create_block_mask", "create_mask", "and_masks",
           "or_masks", "noop_mask"]

_DEFAULT_BLOCK = 128


def _E():
    import ember
    return ember


def _indices(B, H, L, S):
    """Index tensors b, h, q_idx, kv_idx broadcasting to (B, H, L, S)."""
    ember = _E()
    return (ember.arange(B, dtype=ember.int32).view(B, 1, 1, 1),
            ember.arange(H, dtype=ember.int32).view(1, H, 1, 1),
            ember.arange(L, dtype=ember.int32).view(1, 1, L, 1),
            ember.arange(S, dtype=ember.int32).view(1, 1, 1, S))


def noop_mask(b, h, q_idx, kv_idx):
    """Keeps every position."""
    return _E().tensor(True)


def and_masks(*mask_mods):
    """A mask_mod keeping the positions every one of ``mask_mods`` keeps."""
    def and_mask(b, h, q_idx, kv_idx):
        out = True
        for m in mask_mods:
            out = m(b, h, q_idx, kv_idx) & out
        return out
    return and_mask


def or_masks(*mask_mods):
    """A mask_mod keeping the positions any of ``mask_mods`` keeps."""
    def or_mask(b, h, q_idx, kv_idx):
        out = False
        for m in mask_mods:
            out = m(b, h, q_idx, kv_idx) | out
        return out
    return or_mask


def create_mask(mod_fn, B, H, Q_LEN, KV_LEN, device="cpu"):
    """The dense bool mask (B, H, Q_LEN, KV_LEN) of a mask_mod (B or H None: 1)."""
    ember = _E()
    B, H = B or 1, H or 1
    kept = mod_fn(*_indices(B, H, Q_LEN, KV_LEN))
    if not isinstance(kept, ember.Tensor):
        kept = ember.tensor(bool(kept))
    return kept.to(ember.bool).expand(B, H, Q_LEN, KV_LEN).contiguous()


class BlockMask:
    """Which (query block, key block) tiles hold kept positions, with the dense mask they
    come from. ``shape`` is (B, H, Q_LEN, KV_LEN); ``to_dense()`` gives the tiles (int32)."""

    def __init__(self, mask, mask_mod, BLOCK_SIZE):
        self._mask = mask
        self.mask_mod = mask_mod
        self.BLOCK_SIZE = BLOCK_SIZE
        self.shape = tuple(mask.shape)
        self.seq_lengths = tuple(mask.shape[2:])

    def to_dense(self):
        ember = _E()
        B, H, L, S = self.shape
        bq, bk = self.BLOCK_SIZE
        nq, nk = -(-L // bq), -(-S // bk)
        padded = ember.zeros(B, H, nq * bq, nk * bk, dtype=ember.bool)
        padded[:, :, :L, :S] = self._mask
        tiles = padded.view(B, H, nq, bq, nk, bk).any(5).any(3)
        return tiles.to(ember.int32)

    def sparsity(self):
        """Percent of the tiles skipped, counted against Q_LEN*KV_LEN/BLOCK area as torch."""
        L, S = self.seq_lengths
        area = L * S / (self.BLOCK_SIZE[0] * self.BLOCK_SIZE[1])
        computed = self.to_dense()[0, 0].sum().item()
        return 100 * (1 - computed / area)

    def __repr__(self):
        B, H, L, S = self.shape
        nq, nk = -(-L // self.BLOCK_SIZE[0]), -(-S // self.BLOCK_SIZE[1])
        fields = []                     # torch prints its block tables' sizes
        for side, (n, m) in (("kv", (nq, nk)), ("q", (nk, nq))):
            for prefix in ("", "full_"):
                fields.append(f"{prefix}{side}_num_blocks=torch.Size([{B}, {H}, {n}])")
                fields.append(f"{prefix}{side}_indices=torch.Size([{B}, {H}, {n}, {m}])")
        name = getattr(self.mask_mod, "__name__", type(self.mask_mod).__name__)
        body = fields + [f"BLOCK_SIZE={self.BLOCK_SIZE}", f"shape={self.shape}",
                        f"sparsity={self.sparsity():.2f}%", f"mask_mod={name}"]
        return "BlockMask(\n" + "".join(f"    {f},\n" for f in body[:-1]) + \
            f"    {body[-1]}\n)"

    def __str__(self):
        tiles = self.to_dense()
        groups = []
        for b in range(tiles.shape[0]):
            for h in range(tiles.shape[1]):
                rows = ["".join("██" if v else "  " for v in row)
                        for row in tiles[b, h].tolist() if any(row)]
                groups.append(f"({b}, {h})\n" + "".join(r + "\n" for r in rows))
        return (f"BlockMask(shape={self.shape}, sparsity={self.sparsity():.2f}%, \n"
                + "\n".join(groups) + ")")


def create_block_mask(mask_mod, B, H, Q_LEN, KV_LEN, device="cuda", BLOCK_SIZE=_DEFAULT_BLOCK,
                      _compile=False):
    """A BlockMask from ``mask_mod`` (ember computes on the CPU whatever ``device`` says)."""
    bs = (BLOCK_SIZE, BLOCK_SIZE) if isinstance(BLOCK_SIZE, int) else tuple(BLOCK_SIZE)
    return BlockMask(create_mask(mask_mod, B, H, Q_LEN, KV_LEN), mask_mod, bs)


def flex_attention(query, key, value, score_mod=None, block_mask=None, scale=None,
                   enable_gqa=False, return_lse=False, kernel_options=None, *,
                   return_aux=None):
    """query (B, Hq, L, E), key (B, Hkv, S, E), value (B, Hkv, S, Ev) -> (B, Hq, L, Ev)
    [and the logsumexp (B, Hq, L) of the modified, masked scores when ``return_lse``]."""
    ember = _E()
    if query.requires_grad or key.requires_grad or value.requires_grad:
        raise NotImplementedError("FlexAttention does not support backward on CPU. Please set "
                                  "the input requires_grad to False or use another device.")
    B, Hq, L, E = query.shape
    Hkv, S = key.shape[1], key.shape[2]
    if Hq != Hkv:
        if not enable_gqa:
            raise ValueError(f"Expect query and key/value to have the same number of heads but "
                             f"got Hq={Hq} and Hkv={Hkv}. Try setting enable_gqa=True for GQA.")
        if Hq % Hkv:
            raise ValueError(f"Expect number of query heads to be a multiple of kv heads for "
                             f"GQA but got Hq={Hq} and Hkv={Hkv}.")
        key = key.repeat_interleave(Hq // Hkv, dim=1)
        value = value.repeat_interleave(Hq // Hkv, dim=1)
    scale = 1.0 / math.sqrt(E) if scale is None else scale
    scores = query @ key.transpose(-2, -1) * scale
    if score_mod is not None:
        scores = score_mod(scores, *_indices(B, Hq, L, S))
        scores = ember.broadcast_to(scores, (B, Hq, L, S))
    if block_mask is not None:
        keep = block_mask._mask
        if tuple(keep.shape[2:]) != (L, S):
            raise ValueError(f"block_mask was created for seq lengths {tuple(keep.shape[2:])}"
                             f" but got q_len={L} and kv_len={S}")
        scores = scores.masked_fill(~keep, float("-inf"))
    top = scores.amax(-1, keepdim=True).detach()
    top = ember.where(ember.isinf(top), ember.zeros_like(top), top)
    weights = (scores - top).exp()
    total = weights.sum(-1, keepdim=True)
    out = (weights @ value) / ember.where(total == 0, ember.ones_like(total), total)
    out = out.to(query.dtype)
    if return_lse:
        return out, (total.log() + top).squeeze(-1)
    return out
