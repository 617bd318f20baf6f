"""TorchScript sources ``jit.save`` writes into archives next to the code that calls them,
for ember functions with no aten spelling whose own implementation does not script:

    multi_head_attention_forward   torch's signature: in-projection, bias_k/bias_v,
                                   static_k/v, add_zero_attn, boolean or additive masks,
                                   per-head scaled dot-product attention, output projection
    _additive_mask                 the attention modules' mask normalization
    _ember_rnn / _ember_cell       nn.RNN/LSTM/GRU (and cells) over torch's fused ops, the
                                   mode chosen at run time
    _ember_embedding_bag           embedding_bag of a 1-D (with offsets) or 2-D input
    _ember_local_response_norm     F.local_response_norm (torch's formula)
    _ember_max_unpool              F.max_unpool1d/2d/3d with the default output size
    _reduction_enum                a loss's reduction string as torch's enum at run time
    _ember_fractional_max_pool     F.fractional_max_pool2d/3d: output size from the ratio,
                                   random samples drawn when none are given (torch's)
    _ember_embedding_renorm        F.embedding's max_norm: looked-up rows renormalized in place
    _ember_softmax_dim             the implicit dim of softmax/log_softmax (torch's rule)
    _ember_gaussian_nll_loss       F.gaussian_nll_loss (torch's own does not script): var
                                   floored at eps keeping its gradient

Written in the forms torch's own printer uses (``torch.eq``, ``ops.prim.RaiseException``,
``unchecked_cast``), and with ScalarType codes for dtypes, so both torch and ember's loader
compile them.
"""

MHA_QUALNAME = "__torch__.torch.nn.functional.multi_head_attention_forward"

MHA_SOURCE = '''def multi_head_attention_forward(query: Tensor,
    key: Tensor,
    value: Tensor,
    embed_dim_to_check: int,
    num_heads: int,
    in_proj_weight: Optional[Tensor],
    in_proj_bias: Optional[Tensor],
    bias_k: Optional[Tensor],
    bias_v: Optional[Tensor],
    add_zero_attn: bool,
    dropout_p: float,
    out_proj_weight: Tensor,
    out_proj_bias: Optional[Tensor],
    training: bool=True,
    key_padding_mask: Optional[Tensor]=None,
    need_weights: bool=True,
    attn_mask: Optional[Tensor]=None,
    use_separate_proj_weight: bool=False,
    q_proj_weight: Optional[Tensor]=None,
    k_proj_weight: Optional[Tensor]=None,
    v_proj_weight: Optional[Tensor]=None,
    static_k: Optional[Tensor]=None,
    static_v: Optional[Tensor]=None,
    average_attn_weights: bool=True,
    is_causal: bool=False) -> Tuple[Tensor, Optional[Tensor]]:
  batched = torch.eq(torch.dim(query), 3)
  if torch.__not__(batched):
    query0 = torch.unsqueeze(query, 1)
    key0 = torch.unsqueeze(key, 1)
    value0 = torch.unsqueeze(value, 1)
    if torch.__isnot__(key_padding_mask, None):
      kpm0 = annotate(Optional[Tensor], torch.unsqueeze(unchecked_cast(Tensor, key_padding_mask), 0))
    else:
      kpm0 = key_padding_mask
  else:
    query0, key0, value0, kpm0 = query, key, value, key_padding_mask
  if is_causal:
    if torch.__is__(attn_mask, None):
      ops.prim.RaiseException("Need attn_mask if specifying the is_causal hint.", "builtins.RuntimeError")
    else:
      pass
  else:
    pass
  tgt_len = torch.size(query0, 0)
  bsz = torch.size(query0, 1)
  embed_dim = torch.size(query0, 2)
  if torch.ne(embed_dim, embed_dim_to_check):
    ops.prim.RaiseException("AssertionError: embedding dimension mismatch")
  else:
    pass
  head_dim = torch.floordiv(embed_dim, num_heads)
  b_q = annotate(Optional[Tensor], None)
  b_k = annotate(Optional[Tensor], None)
  b_v = annotate(Optional[Tensor], None)
  if torch.__isnot__(in_proj_bias, None):
    biases = torch.chunk(unchecked_cast(Tensor, in_proj_bias), 3)
    b_q, b_k, b_v = annotate(Optional[Tensor], biases[0]), annotate(Optional[Tensor], biases[1]), annotate(Optional[Tensor], biases[2])
  else:
    pass
  if use_separate_proj_weight:
    if torch.__isnot__(q_proj_weight, None):
      w_q = unchecked_cast(Tensor, q_proj_weight)
    else:
      ops.prim.RaiseException("AssertionError: q_proj_weight is None")
      w_q = uninitialized(Tensor)
    if torch.__isnot__(k_proj_weight, None):
      w_k = unchecked_cast(Tensor, k_proj_weight)
    else:
      ops.prim.RaiseException("AssertionError: k_proj_weight is None")
      w_k = uninitialized(Tensor)
    if torch.__isnot__(v_proj_weight, None):
      w_v = unchecked_cast(Tensor, v_proj_weight)
    else:
      ops.prim.RaiseException("AssertionError: v_proj_weight is None")
      w_v = uninitialized(Tensor)
  else:
    if torch.__isnot__(in_proj_weight, None):
      weights3 = torch.chunk(unchecked_cast(Tensor, in_proj_weight), 3)
    else:
      ops.prim.RaiseException("AssertionError: in_proj_weight is None")
      weights3 = uninitialized(List[Tensor])
    w_q, w_k, w_v = weights3[0], weights3[1], weights3[2]
  q = torch.linear(query0, w_q, b_q)
  k = torch.linear(key0, w_k, b_k)
  v = torch.linear(value0, w_v, b_v)
  am = attn_mask
  if torch.__isnot__(am, None):
    am0 = unchecked_cast(Tensor, am)
    if torch.eq(ops.prim.dtype(am0), 11):
      am1 = torch.masked_fill(torch.zeros_like(am0, dtype=ops.prim.dtype(q)), am0, -inf)
    else:
      am1 = am0
    if torch.eq(torch.dim(am1), 2):
      am2 = torch.unsqueeze(am1, 0)
    else:
      am2 = am1
    am = annotate(Optional[Tensor], am2)
  else:
    pass
  kpm = kpm0
  if torch.__isnot__(kpm, None):
    kpm1 = unchecked_cast(Tensor, kpm)
    if torch.eq(ops.prim.dtype(kpm1), 11):
      kpm2 = torch.masked_fill(torch.zeros_like(kpm1, dtype=ops.prim.dtype(q)), kpm1, -inf)
    else:
      kpm2 = kpm1
    kpm = annotate(Optional[Tensor], kpm2)
  else:
    pass
  if torch.__isnot__(bias_k, None):
    bk = unchecked_cast(Tensor, bias_k)
    k = torch.cat([k, torch.repeat(bk, [1, bsz, 1])])
    if torch.__isnot__(bias_v, None):
      bv = unchecked_cast(Tensor, bias_v)
      v = torch.cat([v, torch.repeat(bv, [1, bsz, 1])])
    else:
      ops.prim.RaiseException("AssertionError: bias_k is set but bias_v is None")
    if torch.__isnot__(am, None):
      am = annotate(Optional[Tensor], torch.constant_pad_nd(unchecked_cast(Tensor, am), [0, 1]))
    else:
      pass
    if torch.__isnot__(kpm, None):
      kpm = annotate(Optional[Tensor], torch.constant_pad_nd(unchecked_cast(Tensor, kpm), [0, 1]))
    else:
      pass
  else:
    pass
  bh = torch.mul(bsz, num_heads)
  q = torch.transpose(torch.view(torch.contiguous(q), [tgt_len, bh, head_dim]), 0, 1)
  if torch.__is__(static_k, None):
    k = torch.transpose(torch.view(torch.contiguous(k), [torch.size(k, 0), bh, head_dim]), 0, 1)
  else:
    k = unchecked_cast(Tensor, static_k)
  if torch.__is__(static_v, None):
    v = torch.transpose(torch.view(torch.contiguous(v), [torch.size(v, 0), bh, head_dim]), 0, 1)
  else:
    v = unchecked_cast(Tensor, static_v)
  if add_zero_attn:
    zeros = torch.zeros([bh, 1, head_dim], dtype=ops.prim.dtype(k), device=ops.prim.device(k))
    k = torch.cat([k, zeros], 1)
    v = torch.cat([v, zeros], 1)
    if torch.__isnot__(am, None):
      am = annotate(Optional[Tensor], torch.constant_pad_nd(unchecked_cast(Tensor, am), [0, 1]))
    else:
      pass
    if torch.__isnot__(kpm, None):
      kpm = annotate(Optional[Tensor], torch.constant_pad_nd(unchecked_cast(Tensor, kpm), [0, 1]))
    else:
      pass
  else:
    pass
  src_len = torch.size(k, 1)
  scale = torch.div(1., torch.sqrt(float(head_dim)))
  scores = torch.bmm(torch.mul(q, scale), torch.transpose(k, 1, 2))
  if torch.__isnot__(am, None):
    scores = torch.add(scores, unchecked_cast(Tensor, am))
  else:
    pass
  if torch.__isnot__(kpm, None):
    kpm3 = torch.expand(torch.view(unchecked_cast(Tensor, kpm), [bsz, 1, 1, src_len]), [-1, num_heads, -1, -1])
    scores = torch.add(scores, torch.reshape(kpm3, [bh, 1, src_len]))
  else:
    pass
  attn = torch.softmax(scores, -1)
  if torch.gt(dropout_p, 0.):
    attn = torch.dropout(attn, dropout_p, training)
  else:
    pass
  out = torch.view(torch.contiguous(torch.transpose(torch.bmm(attn, v), 0, 1)), [torch.mul(tgt_len, bsz), embed_dim])
  out = torch.view(torch.linear(out, out_proj_weight, out_proj_bias), [tgt_len, bsz, embed_dim])
  weights = annotate(Optional[Tensor], None)
  if need_weights:
    w = torch.view(attn, [bsz, num_heads, tgt_len, src_len])
    if average_attn_weights:
      w = torch.mean(w, [1])
    else:
      pass
    if torch.__not__(batched):
      w = torch.squeeze(w, 0)
    else:
      pass
    weights = annotate(Optional[Tensor], w)
  else:
    pass
  if torch.__not__(batched):
    out = torch.squeeze(out, 1)
  else:
    pass
  return (out, weights)
'''

MASK_QUALNAME = "__torch__.torch.nn.functional._additive_mask"

MASK_SOURCE = '''def _additive_mask(mask: Optional[Tensor],
    name: str,
    dtype: int,
    other: Optional[Tensor]=None,
    other_name: str="") -> Optional[Tensor]:
  if torch.__is__(mask, None):
    out = annotate(Optional[Tensor], None)
  else:
    mask0 = unchecked_cast(Tensor, mask)
    if torch.is_floating_point(mask0):
      out = annotate(Optional[Tensor], mask0)
    else:
      if torch.ne(ops.prim.dtype(mask0), 11):
        ops.prim.RaiseException("AssertionError: only bool and floating types of masks are supported")
      else:
        pass
      out = annotate(Optional[Tensor], torch.masked_fill(torch.zeros_like(mask0, dtype=dtype), mask0, -inf))
  return out
'''

MASK_ARGS = ("mask", "name", "dtype", "other", "other_name")

MHA_ARGS = ("query", "key", "value", "embed_dim_to_check", "num_heads", "in_proj_weight",
        "in_proj_bias", "bias_k", "bias_v", "add_zero_attn", "dropout_p", "out_proj_weight",
        "out_proj_bias", "training", "key_padding_mask", "need_weights", "attn_mask",
        "use_separate_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight",
        "static_k", "static_v", "average_attn_weights", "is_causal")

RNN_Q = "__torch__.torch.nn.modules.rnn"
RNN_ARGS = ("input, hx, weights, has_biases, num_layers, dropout, training, bidirectional, "
             "batch_first")
RNN_SOURCE = f"""def _ember_rnn(mode: str,
    input: Tensor,
    batch_sizes: Optional[Tensor],
    h0: Tensor,
    c0: Optional[Tensor],
    weights: List[Tensor],
    names: List[str],
    num_layers: int,
    bidirectional: bool,
    dropout: float,
    training: bool,
    batch_first: bool,
    proj_size: int) -> Tuple[Tensor, Tensor, Optional[Tensor]]:
  if torch.__isnot__(batch_sizes, None):
    ops.prim.RaiseException("packed sequences are not supported by this archive")
  else:
    pass
  has_biases = torch.__contains__(names, "bias_ih_l0")
  c_n = annotate(Optional[Tensor], None)
  if torch.eq(mode, "LSTM"):
    if torch.__isnot__(c0, None):
      hx = [h0, unchecked_cast(Tensor, c0)]
    else:
      ops.prim.RaiseException("an LSTM needs a cell state")
      hx = uninitialized(List[Tensor])
    output, h_n, c = torch.lstm({RNN_ARGS})
    c_n = c
  else:
    hx = h0
    if torch.eq(mode, "GRU"):
      output, h_n = torch.gru({RNN_ARGS})
    else:
      if torch.eq(mode, "RNN_TANH"):
        output, h_n = torch.rnn_tanh({RNN_ARGS})
      else:
        output, h_n = torch.rnn_relu({RNN_ARGS})
  return (output, h_n, c_n)
"""
CELL_SOURCE = """def _ember_cell(mode: str,
    input: Tensor,
    h: Tensor,
    c: Optional[Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Optional[Tensor],
    b_hh: Optional[Tensor]) -> Tuple[Tensor, Optional[Tensor]]:
  c_n = annotate(Optional[Tensor], None)
  if torch.eq(mode, "LSTM"):
    if torch.__isnot__(c, None):
      hx = [h, unchecked_cast(Tensor, c)]
    else:
      ops.prim.RaiseException("an LSTM cell needs a cell state")
      hx = uninitialized(List[Tensor])
    h_n, c1 = torch.lstm_cell(input, hx, w_ih, w_hh, b_ih, b_hh)
    c_n = c1
  else:
    if torch.eq(mode, "GRU"):
      h_n = torch.gru_cell(input, h, w_ih, w_hh, b_ih, b_hh)
    else:
      if torch.eq(mode, "RNN_TANH"):
        h_n = torch.rnn_tanh_cell(input, h, w_ih, w_hh, b_ih, b_hh)
      else:
        h_n = torch.rnn_relu_cell(input, h, w_ih, w_hh, b_ih, b_hh)
  return (h_n, c_n)
"""


REDUCTION_Q = "__torch__.torch.nn.functional._reduction_enum"
REDUCTION_SOURCE = """def _reduction_enum(reduction: str) -> int:
  if torch.eq(reduction, "none"):
    r = 0
  else:
    if torch.eq(reduction, "mean"):
      r = 1
    else:
      if torch.eq(reduction, "sum"):
        r = 2
      else:
        ops.prim.RaiseException(torch.add(reduction, " is not a valid value for reduction"), "builtins.ValueError")
        r = uninitialized(int)
  return r
"""


BAG_Q = "__torch__.torch.nn.functional._ember_embedding_bag"
BAG_SOURCE = """def _ember_embedding_bag(weight: Tensor,
    input: Tensor,
    offsets: Optional[Tensor],
    scale_grad_by_freq: bool,
    mode: int,
    sparse: bool,
    per_sample_weights: Optional[Tensor],
    include_last_offset: bool,
    padding_idx: Optional[int]) -> Tensor:
  if torch.__is__(offsets, None):
    n = torch.size(input, 1)
    offsets0 = torch.arange(0, torch.numel(input), n, dtype=4, device=ops.prim.device(input))
    input0 = torch.reshape(input, [-1])
    if torch.__isnot__(per_sample_weights, None):
      per_sample_weights0 = annotate(Optional[Tensor], torch.reshape(unchecked_cast(Tensor, per_sample_weights), [-1]))
    else:
      per_sample_weights0 = per_sample_weights
  else:
    offsets0 = unchecked_cast(Tensor, offsets)
    input0 = input
    per_sample_weights0 = per_sample_weights
  _0, _1, _2, _3 = torch.embedding_bag(weight, input0, offsets0, scale_grad_by_freq, mode, sparse, per_sample_weights0, include_last_offset, padding_idx)
  return _0
"""

LRN_QUALNAME = "__torch__.torch.nn.functional._ember_local_response_norm"
LRN_SOURCE = """def _ember_local_response_norm(input: Tensor,
    size: int,
    alpha: float,
    beta: float,
    k: float) -> Tensor:
  dim = torch.dim(input)
  div = torch.mul(input, input)
  if torch.eq(dim, 3):
    div0 = torch.unsqueeze(div, 1)
    div1 = torch.constant_pad_nd(div0, [0, 0, torch.floordiv(size, 2), torch.floordiv(torch.sub(size, 1), 2)])
    div2 = torch.squeeze(torch.avg_pool2d(div1, [size, 1], [1, 1]), 1)
  else:
    sizes = torch.size(input)
    div3 = torch.view(div, [sizes[0], 1, sizes[1], sizes[2], -1])
    div4 = torch.constant_pad_nd(div3, [0, 0, 0, 0, torch.floordiv(size, 2), torch.floordiv(torch.sub(size, 1), 2)])
    div5 = torch.squeeze(torch.avg_pool3d(div4, [size, 1, 1], [1, 1, 1]), 1)
    div2 = torch.view(div5, sizes)
  return torch.div(input, torch.pow(torch.add(torch.mul(div2, alpha), k), beta))
"""

UNPOOL_QUALNAME = "__torch__.torch.nn.functional._ember_max_unpool"
UNPOOL_SOURCE = """def _ember_max_unpool(input: Tensor,
    indices: Tensor,
    kernel_size: List[int],
    stride: List[int],
    padding: List[int],
    output_size: Optional[List[int]]) -> Tensor:
  n = torch.len(kernel_size)
  out = annotate(List[int], [])
  if torch.__is__(output_size, None):
    for d in range(n):
      size = torch.size(input, torch.add(torch.sub(torch.dim(input), n), d))
      _0 = torch.mul(torch.sub(size, 1), stride[d])
      _1 = torch.append(out, torch.add(torch.sub(_0, torch.mul(2, padding[d])), kernel_size[d]))
  else:
    given = unchecked_cast(List[int], output_size)
    for d0 in range(n):
      _2 = torch.append(out, given[torch.add(torch.sub(torch.len(given), n), d0)])
  if torch.eq(n, 1):
    _3 = torch.max_unpool2d(torch.unsqueeze(input, -1), torch.unsqueeze(indices, -1), torch.add(out, [1]))
    result = torch.squeeze(_3, -1)
  else:
    if torch.eq(n, 2):
      result = torch.max_unpool2d(input, indices, out)
    else:
      result = torch.max_unpool3d(input, indices, out, stride, padding)
  return result
"""

FRACTIONAL_QUALNAME = "__torch__.torch.nn.functional._ember_fractional_max_pool"
FRACTIONAL_SOURCE = """def _ember_fractional_max_pool(input: Tensor,
    kernel_size: List[int],
    output_size: Optional[List[int]],
    output_ratio: Optional[List[float]],
    _random_samples: Optional[Tensor]) -> Tuple[Tensor, Tensor]:
  n = torch.len(kernel_size)
  if torch.__is__(output_size, None):
    if torch.__is__(output_ratio, None):
      ops.prim.RaiseException("fractional_max_pool requires specifying either an output_size or an output_ratio", "builtins.ValueError")
    else:
      pass
    ratio = unchecked_cast(List[float], output_ratio)
    out = annotate(List[int], [])
    for d in range(n):
      size = torch.size(input, torch.add(torch.sub(torch.dim(input), n), d))
      _0 = torch.append(out, int(torch.mul(size, ratio[d])))
  else:
    out = unchecked_cast(List[int], output_size)
  if torch.__is__(_random_samples, None):
    if torch.eq(torch.dim(input), torch.add(n, 1)):
      n_batch = 1
    else:
      n_batch = torch.size(input, 0)
    channels = torch.size(input, torch.sub(-1, n))
    samples = torch.rand([n_batch, channels, n], dtype=ops.prim.dtype(input), layout=None, device=ops.prim.device(input))
  else:
    samples = unchecked_cast(Tensor, _random_samples)
  if torch.eq(n, 2):
    result, indices = torch.fractional_max_pool2d(input, kernel_size, out, samples)
  else:
    result, indices = torch.fractional_max_pool3d(input, kernel_size, out, samples)
  return (result, indices)
"""

GAUSSIAN_NLL_QUALNAME = "__torch__.torch.nn.functional._ember_gaussian_nll_loss"
GAUSSIAN_NLL_SOURCE = """def _ember_gaussian_nll_loss(input: Tensor,
    target: Tensor,
    var: Tensor,
    full: bool,
    eps: float,
    reduction: int) -> Tensor:
  if torch.ne(torch.size(var), torch.size(input)):
    if torch.eq(torch.slice(torch.size(input), 0, -1), torch.size(var)):
      var1 = torch.unsqueeze(var, -1)
    else:
      if torch.eq(torch.slice(torch.size(input), 0, -1), torch.slice(torch.size(var), 0, -1)):
        _0 = torch.eq(torch.size(var, -1), 1)
      else:
        _0 = False
      if torch.__not__(_0):
        ops.prim.RaiseException("var is of incorrect size", "builtins.ValueError")
      else:
        pass
      var1 = var
    var0 = var1
  else:
    var0 = var
  if bool(torch.any(torch.lt(torch.detach(var0), 0))):
    ops.prim.RaiseException("var has negative entry/entries", "builtins.ValueError")
  else:
    pass
  floor = torch.sub(torch.detach(torch.clamp(var0, eps)), torch.detach(var0))
  var2 = torch.add(var0, floor)
  _1 = torch.div(torch.pow(torch.sub(input, target), 2), var2)
  loss = torch.mul(torch.add(_1, torch.log(var2)), 0.5)
  if full:
    loss0 = torch.add(loss, 0.91893853320467278)
  else:
    loss0 = loss
  if torch.eq(reduction, 1):
    out = torch.mean(loss0)
  else:
    if torch.eq(reduction, 2):
      out = torch.sum(loss0)
    else:
      out = loss0
  return out
"""

SOFTMAX_DIM_QUALNAME = "__torch__.torch.nn.functional._ember_softmax_dim"
SOFTMAX_DIM_SOURCE = """def _ember_softmax_dim(ndim: int) -> int:
  if torch.__contains__([0, 1, 3], ndim):
    ret = 0
  else:
    ret = 1
  return ret
"""

RENORM_QUALNAME = "__torch__.torch.nn.functional._ember_embedding_renorm"
RENORM_SOURCE = """def _ember_embedding_renorm(weight: Tensor,
    input: Tensor,
    max_norm: float,
    norm_type: float) -> Tensor:
  prev = torch.is_grad_enabled()
  torch.set_grad_enabled(False)
  _0 = torch.embedding_renorm_(weight, torch.contiguous(input), max_norm, norm_type)
  torch.set_grad_enabled(prev)
  return weight
"""
