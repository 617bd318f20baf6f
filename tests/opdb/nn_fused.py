"""Op database entries for the fused nn records (ember/_ops/nn_fused.py), the fused
softmax / log_softmax backward kernels (ember/_ops/reduction.py) and layer norm's fused
backward (ember/_ops/nn_norm.py). The records have no public ember.* front: their entries
have no samples (coverage only). They are tested through ember.nn.LSTM / GRU
(tests/nn/test_rnn_fused.py), softmax / log_softmax, layer_norm, embedding and
cross_entropy in tests/nn/test_fused_kernels.py
(values and gradients vs torch, float64 gradcheck / gradgradcheck, forward-mode AD)."""
from opinfo import OpInfo


def _none(dtype, rng):
    return []


OPS = [
    OpInfo("nn fused records", None, _none, method=False, supports_grad=False,
           op_records=("_lstm_layer", "_lstm_layer_backward", "_gru_layer",
                       "_gru_layer_backward", "_softmax_backward_data",
                       "_log_softmax_backward_data", "_layer_norm_backward", "embedding",
                       "_embedding_backward", "_cross_entropy", "_cross_entropy_backward")),
    # the chunked path of nn.functional.linear_cross_entropy (options=...): values and
    # gradients vs torch, chunk sizes, fallbacks in tests/nn/test_linear_cross_entropy.py
    OpInfo("linear_cross_entropy chunked records", None, _none, method=False,
           supports_grad=False, op_records=("_linear_cross_entropy_chunked",
                                            "_linear_cross_entropy_chunked_backward")),
    # scaled_dot_product_attention's record (ember/_ops/attention.py): values and gradients
    # vs torch (causal, masks, GQA), gradcheck / gradgradcheck in tests/nn/test_sdpa_fused.py
    OpInfo("scaled_dot_product_attention records", None, _none, method=False,
           supports_grad=False, op_records=("_sdpa_fused", "_sdpa_fused_backward")),
    # the one-step cells' records (ember/_ops/rnn_cell.py): values and gradients vs torch,
    # gradcheck / gradgradcheck, forward-mode AD in tests/nn/test_rnn_cells_fused.py
    OpInfo("rnn cell records", None, _none, method=False, supports_grad=False,
           op_records=("_lstm_cell", "_lstm_cell_backward", "_gru_cell", "_gru_cell_backward",
                       "_rnn_tanh_cell", "_rnn_relu_cell", "_rnn_cell_backward")),
]
