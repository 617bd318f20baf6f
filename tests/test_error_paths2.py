"""Error paths the core tests did not reach (second round, found with coverage of the
``raise`` statements in ember/): each family is called with the same bad input in ember and
in torch; both must raise the same class, and both messages must name the fault."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import ember  # noqa: E402

F = "nn.functional"


def fn(L):
    return L.nn.functional


def t(L, *shape, dtype=None, seed=0):
    """A tensor of ``shape`` with values in [0.1, 0.9) (the same in both libraries)."""
    a = np.random.default_rng(seed).uniform(0.1, 0.9, size=shape)
    x = L.tensor(a, dtype=L.float32)
    return x if dtype is None else x.to(getattr(L, dtype))


def idx(L, *values):
    return L.tensor(list(values), dtype=L.int64)


CASES = {
    # ------------------------------------------------------------------ losses
    "loss_bad_reduction": (lambda L: fn(L).l1_loss(t(L, 3), t(L, 3), reduction="x"),
                           "is not a valid value for reduction"),
    "huber_negative_delta": (lambda L: fn(L).huber_loss(t(L, 3), t(L, 3), delta=-1.0),
                             "delta"),
    "smooth_l1_negative_beta": (lambda L: fn(L).smooth_l1_loss(t(L, 3), t(L, 3), beta=-1.0),
                                "negative values for beta"),
    "nll_0d_input": (lambda L: fn(L).nll_loss(t(L), idx(L, 0)[0]), "Expected 1 or more"),
    "nll_2d_target": (lambda L: fn(L).nll_loss(t(L, 2, 3), idx(L, 0, 1).reshape(2, 1)),
                      "multi-target not supported"),
    "nll_batch_mismatch": (lambda L: fn(L).nll_loss(t(L, 2, 3), idx(L, 0, 1, 2)),
                           "to match target batch_size"),
    "nll_target_out_of_bounds": (lambda L: fn(L).nll_loss(t(L, 2, 3), idx(L, 0, 7)),
                                 "out of bounds"),
    "nll_float_target": (lambda L: fn(L).nll_loss(t(L, 2, 3), t(L, 2)), "Long"),
    "nll_weight_size": (lambda L: fn(L).nll_loss(t(L, 2, 3), idx(L, 0, 1), weight=t(L, 4)),
                        "weight tensor should be defined"),
    "nll_spatial_target": (lambda L: fn(L).nll_loss(t(L, 2, 3, 4), idx(L, 0, 1)),
                           "Expected target size"),
    "cross_entropy_smoothing": (lambda L: fn(L).cross_entropy(t(L, 2, 3), idx(L, 0, 1),
                                                              label_smoothing=2.0),
                                "label_smoothing must be between 0.0 and 1.0"),
    "cross_entropy_prob_int": (lambda L: fn(L).cross_entropy(
        t(L, 2, 3), idx(L, 0, 1, 0, 1, 0, 1).reshape(2, 3)),
        "Expected floating point type for target with class probabilities"),
    "cross_entropy_prob_ignore": (lambda L: fn(L).cross_entropy(t(L, 2, 3), t(L, 2, 3),
                                                                ignore_index=1),
                                  "ignore_index is not supported for floating point target"),
    "bce_target_size": (lambda L: fn(L).binary_cross_entropy(t(L, 3), t(L, 4)),
                        "different to the input size"),
    "bce_out_of_range": (lambda L: fn(L).binary_cross_entropy(t(L, 3) + 1, t(L, 3)),
                         "between 0 and 1"),
    "bce_logits_size": (lambda L: fn(L).binary_cross_entropy_with_logits(t(L, 3), t(L, 4)),
                        "must be the same as input size"),
    "kl_div_int": (lambda L: fn(L).kl_div(idx(L, 1, 2), idx(L, 1, 2)), "Integral"),
    "soft_margin_int": (lambda L: fn(L).soft_margin_loss(idx(L, 1, 2), idx(L, 1, 2)), None),
    "multilabel_margin_3d": (lambda L: fn(L).multilabel_margin_loss(t(L, 2, 2, 2),
                                                                    idx(L, 0, 1)),
                             "Expected non-empty vector or matrix"),
    "multilabel_margin_float_target": (lambda L: fn(L).multilabel_margin_loss(
        t(L, 2, 3), t(L, 2, 3)), "expected scalar type Long"),
    "multilabel_margin_target_size": (lambda L: fn(L).multilabel_margin_loss(
        t(L, 2, 3), idx(L, 0, 1)), "inconsistent target size"),
    "multilabel_margin_range": (lambda L: fn(L).multilabel_margin_loss(
        t(L, 2, 3), idx(L, 0, 9, 0, 1, 2, -1).reshape(2, 3)),
            "argument #2 'target' is out of range"),
    "multi_margin_p3": (lambda L: fn(L).multi_margin_loss(t(L, 2, 3), idx(L, 0, 1), p=3),
                        "only p == 1 and p == 2 supported"),
    "multi_margin_weight_2d": (lambda L: fn(L).multi_margin_loss(t(L, 2, 3), idx(L, 0, 1),
                                                                 weight=t(L, 3, 1)),
                               "weight must be one-dimensional"),
    "multi_margin_3d": (lambda L: fn(L).multi_margin_loss(t(L, 2, 3, 2), idx(L, 0, 1)),
                        "Expected non-empty vector or matrix"),
    "multi_margin_float_target": (lambda L: fn(L).multi_margin_loss(t(L, 2, 3), t(L, 2)),
                                  "expected scalar type Long"),
    "multi_margin_target_size": (lambda L: fn(L).multi_margin_loss(t(L, 2, 3),
                                                                   idx(L, 0, 1, 2)),
                                 "target tensor should be 1-D"),
    "multi_margin_target_range": (lambda L: fn(L).multi_margin_loss(t(L, 2, 3),
                                                                    idx(L, 0, 5)),
                                  "target out of range"),
    "cosine_embedding_2d_target": (lambda L: fn(L).cosine_embedding_loss(
        t(L, 2, 3), t(L, 2, 3), t(L, 2, 1)), "multi-target not supported"),
    "cosine_embedding_dims": (lambda L: fn(L).cosine_embedding_loss(
        t(L, 3), t(L, 3), t(L, 2)), "target tensor expects"),
    "margin_ranking_dims": (lambda L: fn(L).margin_ranking_loss(t(L, 3), t(L, 3, 1), t(L, 3)),
                            "All input tensors should have same dimension"),
    "triplet_dims": (lambda L: fn(L).triplet_margin_loss(t(L, 3), t(L, 2, 3), t(L, 2, 3)),
                     "expected to have the same number of dimensions"),
    "triplet_distance_margin": (lambda L: fn(L).triplet_margin_with_distance_loss(
        t(L, 2, 3), t(L, 2, 3), t(L, 2, 3), margin=-1.0),
            "margin must be greater than 0, got -1.0"),
    "gaussian_nll_negative_var": (lambda L: fn(L).gaussian_nll_loss(t(L, 3), t(L, 3),
                                                                    -t(L, 3)),
                                  "var has negative entry"),
    "gaussian_nll_var_size": (lambda L: fn(L).gaussian_nll_loss(t(L, 3, 2), t(L, 3, 2),
                                                                t(L, 2, 2)),
                              "var is of incorrect size"),
    "gaussian_nll_reduction": (lambda L: fn(L).gaussian_nll_loss(t(L, 3), t(L, 3), t(L, 3),
                                                                 reduction="x"),
                               "is not valid"),
    "poisson_nll_bad_reduction": (lambda L: fn(L).poisson_nll_loss(t(L, 3), t(L, 3),
                                                                   reduction="x"),
                                  "is not a valid value for reduction"),
    "ctc_float_lengths": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                   idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                   t(L, 2), idx(L, 2, 2)), "integral"),
    "ctc_length_count": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                  idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                  idx(L, 5, 5, 5), idx(L, 2, 2)),
                         "must be of size batch_size"),
    "ctc_4d_log_probs": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4, 1),
                                                  idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                  idx(L, 5, 5), idx(L, 2, 2)),
                         "Expected 3-dimensional tensor"),
    "ctc_empty_log_probs": (lambda L: fn(L).ctc_loss(t(L, 0, 2, 4),
                                                     idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                     idx(L, 5, 5), idx(L, 2, 2)),
                            "log_probs tensor must not be empty"),
    "ctc_blank_range": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                 idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                 idx(L, 5, 5), idx(L, 2, 2), blank=9),
                        "blank must be in label range"),
    "ctc_input_too_long": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                    idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                    idx(L, 9, 5), idx(L, 2, 2)),
                           "Expected input_lengths to have value at most 5"),
    "ctc_target_3d": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                               idx(L, 1, 2, 1, 2).reshape(2, 2, 1),
                                               idx(L, 5, 5), idx(L, 2, 2)), None),
    # ------------------------------------------------------------------ linear / embedding
    "bilinear_batch": (lambda L: fn(L).bilinear(t(L, 2, 3), t(L, 3, 4), t(L, 5, 3, 4)),
                       None),
    "bilinear_weight_2d": (lambda L: fn(L).bilinear(t(L, 2, 3), t(L, 2, 4), t(L, 3, 4)),
                           None),
    "bilinear_input1": (lambda L: fn(L).bilinear(t(L, 2, 2), t(L, 2, 4), t(L, 5, 3, 4)),
                        None),
    "bilinear_input2": (lambda L: fn(L).bilinear(t(L, 2, 3), t(L, 2, 2), t(L, 5, 3, 4)),
                        None),
    "embedding_list_indices": (lambda L: fn(L).embedding([0, 1], t(L, 4, 3)), "must be Tensor"),
    "embedding_float_indices": (lambda L: fn(L).embedding(t(L, 2), t(L, 4, 3)),
                                "Expected tensor for argument #1 'indices'"),
    "embedding_padding_idx": (lambda L: fn(L).embedding(idx(L, 0), t(L, 4, 3), padding_idx=9),
                              "Padding_idx must be within num_embeddings"),
    "embedding_weight_1d": (lambda L: fn(L).embedding(idx(L, 0), t(L, 4)), "must be 2-D"),
    "embedding_out_of_range": (lambda L: fn(L).embedding(idx(L, 9), t(L, 4, 3)),
                               "index out of range in self"),
    "embedding_bag_weight_1d": (lambda L: fn(L).embedding_bag(idx(L, 0, 1), t(L, 4),
                                                              idx(L, 0)), "weight has to be a 2D"),
    "embedding_bag_psw_mode": (lambda L: fn(L).embedding_bag(
        idx(L, 0, 1), t(L, 4, 3), idx(L, 0), mode="max", per_sample_weights=t(L, 2)),
        "per_sample_weights"),
    "embedding_bag_padding": (lambda L: fn(L).embedding_bag(idx(L, 0, 1), t(L, 4, 3),
                                                            idx(L, 0), padding_idx=9),
                              "padding_idx must be within the number of embeddings, -4 through 3"),
    "embedding_bag_2d_offsets": (lambda L: fn(L).embedding_bag(idx(L, 0, 1).reshape(1, 2),
                                                               t(L, 4, 3), idx(L, 0)),
                                 "offsets has to be None"),
    "embedding_bag_offsets_2d": (lambda L: fn(L).embedding_bag(idx(L, 0, 1), t(L, 4, 3),
                                                               idx(L, 0).reshape(1, 1)),
                                 "offsets has to be a 1D Tensor"),
    "embedding_bag_3d": (lambda L: fn(L).embedding_bag(idx(L, 0, 1).reshape(1, 1, 2),
                                                       t(L, 4, 3)),
                         "input has to be 1D or 2D Tensor"),
    "embedding_bag_mode": (lambda L: fn(L).embedding_bag(idx(L, 0, 1), t(L, 4, 3), idx(L, 0),
                                                         mode="min"),
                           "mode has to be one of sum, mean or max"),
    "embedding_bag_out_of_range": (lambda L: fn(L).embedding_bag(idx(L, 0, 9), t(L, 4, 3),
                                                                 idx(L, 0)),
                                   "Index 1 of input takes value 9 which is not in the valid"),
    "embedding_bag_max_out_of_range": (lambda L: fn(L).embedding_bag(
        idx(L, -1, 0), t(L, 4, 3), idx(L, 0), mode="max"), "found idx to be -1"),
    "dropout_p": (lambda L: fn(L).dropout(t(L, 3), p=1.5), "dropout probability has to be"),
    "dropout1d_4d": (lambda L: fn(L).dropout1d(t(L, 1, 2, 3, 4)), "Expected 2D or 3D input"),
    "feature_alpha_dropout_1d": (lambda L: fn(L).feature_alpha_dropout(t(L, 3), 0.5, True),
                                 None),
    "one_hot_float": (lambda L: fn(L).one_hot(t(L, 3)), "LongTensor"),
    "one_hot_empty": (lambda L: fn(L).one_hot(idx(L)), "Can not infer total number of classes"),
    "one_hot_negative": (lambda L: fn(L).one_hot(idx(L, -1, 0)),
        "Class values must be non-negative"),
    "one_hot_too_big": (lambda L: fn(L).one_hot(idx(L, 5), 3), "Class values must be smaller"),
}
CASES.update({
    # ------------------------------------------------------------------ normalization
    "batch_norm_one_value": (lambda L: fn(L).batch_norm(t(L, 1, 3), None, None, training=True),
                             "Expected more than 1 value per channel when training"),
    "batch_norm_eval_no_stats": (lambda L: fn(L).batch_norm(t(L, 2, 3), None, None), None),
    "batch_norm_stats_size": (lambda L: fn(L).batch_norm(t(L, 2, 3), t(L, 4), t(L, 4)),
                              "running_mean should contain 3 elements not 4"),
    "batch_norm_weight_size": (lambda L: fn(L).batch_norm(t(L, 2, 3), t(L, 3), t(L, 3),
                                                          weight=t(L, 4)),
                               "weight should contain 3 elements not 4"),
    "instance_norm_one_spatial": (lambda L: fn(L).instance_norm(t(L, 2, 3, 1)),
                                  "Expected more than 1 spatial element when training"),
    "layer_norm_shape": (lambda L: fn(L).layer_norm(t(L, 2, 3), (4,)), None),
    "group_norm_1d": (lambda L: fn(L).group_norm(t(L, 6), 2), None),
    "group_norm_groups": (lambda L: fn(L).group_norm(t(L, 2, 6), 4),
                          "Expected number of channels in input to be divisible by num_groups"),
    "local_response_norm_2d": (lambda L: fn(L).local_response_norm(t(L, 2, 3), 2),
                               "Expected 3D or higher dimensionality"),
    # ------------------------------------------------------------------ pooling
    "max_pool2d_1d": (lambda L: fn(L).max_pool2d(t(L, 4), 2), None),
    "max_pool2d_kernel_zero": (lambda L: fn(L).max_pool2d(t(L, 1, 4, 4), 0),
                               "stride should not be zero"),
    "max_pool2d_kernel_zero_stride": (lambda L: fn(L).max_pool2d(t(L, 1, 4, 4), 0, stride=1),
        "kernel size should be greater than zero, but got kH: 0 kW: 0"),
    "max_pool1d_kernel_zero": (lambda L: fn(L).max_pool1d(t(L, 1, 4), 0),
                               "max_pool1d() kernel_size must be greater than zero"),
    "avg_pool1d_negative_stride": (lambda L: fn(L).avg_pool1d(t(L, 1, 4), 2, stride=-1),
                                   "stride should be greater than zero, but got dH: 1 dW: -1"),
    "max_pool2d_stride_zero": (lambda L: fn(L).max_pool2d(t(L, 1, 4, 4), 2, stride=0),
                               "stride should not be zero"),
    "max_pool2d_pad_negative": (lambda L: fn(L).max_pool2d(t(L, 1, 4, 4), 2, padding=-1),
                                "pad must be non-negative"),
    "max_pool2d_pad_half": (lambda L: fn(L).max_pool2d(t(L, 1, 4, 4), 2, padding=2),
                            "pad should be at most half of"),
    "max_pool2d_too_small": (lambda L: fn(L).max_pool2d(t(L, 1, 2, 2), 3),
                             "Output size is too small"),
    "max_pool2d_dilation": (lambda L: fn(L).max_pool2d(t(L, 1, 4, 4), 2, dilation=0),
                            "dilation should be greater than zero"),
    "avg_pool3d_too_small": (lambda L: fn(L).avg_pool3d(t(L, 1, 2, 2, 2), 3), None),
    "adaptive_avg_negative": (lambda L: fn(L).adaptive_avg_pool2d(t(L, 1, 4, 4), (-1, 2)),
                              None),
    "adaptive_avg_empty": (lambda L: fn(L).adaptive_avg_pool2d(t(L, 1, 0, 4), 2),
                           "Expected input to have non-zero size for non-batch dimensions"),
    "adaptive_avg_1d_input": (lambda L: fn(L).adaptive_avg_pool2d(t(L, 4), 2), None),
    "adaptive_max_1d_input": (lambda L: fn(L).adaptive_max_pool2d(t(L, 4), 2), None),
    "max_unpool_output_size": (lambda L: fn(L).max_unpool2d(t(L, 1, 1, 2, 2),
                                                            idx(L, 0, 1, 2, 3).reshape(1, 1, 2, 2),
                                                            2, output_size=(1, 2, 3)),
                               "output_size should be a sequence containing"),
    "max_unpool_output_range": (lambda L: fn(L).max_unpool2d(t(L, 1, 1, 2, 2),
                                                             idx(L, 0, 1, 2, 3).reshape(1, 1, 2, 2),
                                                             2, output_size=(9, 9)),
                                "invalid output_size"),
    "max_unpool_bad_index": (lambda L: fn(L).max_unpool2d(t(L, 1, 1, 2, 2),
                                                          idx(L, 0, 1, 2, 99).reshape(1, 1, 2, 2),
                                                          2), "Found an invalid max index"),
    # ------------------------------------------------------------------ padding / resizing
    "pad_odd": (lambda L: fn(L).pad(t(L, 2, 3), (1,)), "Padding length must be divisible by 2"),
    "pad_value_reflect": (lambda L: fn(L).pad(t(L, 1, 2, 3), (1, 1), mode="reflect", value=1.0),
                          "doesn't take in value argument"),
    "pad_bad_mode": (lambda L: fn(L).pad(t(L, 1, 2, 3), (1, 1), mode="nope"), None),
    "pad_reflect_too_big": (lambda L: fn(L).pad(t(L, 1, 2, 3), (3, 3), mode="reflect"),
                            "Padding size should be less than the corresponding input dimension"),
    "pad_circular_wrap": (lambda L: fn(L).pad(t(L, 1, 2, 3), (4, 4), mode="circular"),
                          "Padding value causes wrapping around more than once"),
    "pad_replicate_empty": (lambda L: fn(L).pad(t(L, 1, 2, 0), (1, 1), mode="replicate"),
                            None),
    "pad_reflect_1d": (lambda L: fn(L).pad(t(L, 3), (1, 1), mode="reflect"), None),
    "interpolate_2d_input": (lambda L: fn(L).interpolate(t(L, 2, 3), size=4), None),
    "interpolate_align_nearest": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), size=4,
                                                              align_corners=True),
                                  "align_corners option can only be set with the interpolating"),
    "interpolate_antialias_nearest": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), size=4,
                                                                  antialias=True),
                                      "Anti-alias option"),
    "interpolate_both": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), size=4, scale_factor=2.0),
                         "only one of size or scale_factor should be defined"),
    "interpolate_size_len": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), size=(4, 4)),
                             "Input and output must have the same number of spatial dimensions"),
    "interpolate_scale_len": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), scale_factor=(2., 2.)),
                              "Input and scale_factor must have the same number of spatial"),
    "interpolate_neither": (lambda L: fn(L).interpolate(t(L, 1, 2, 3)),
                            "either size or scale_factor should be defined"),
    "interpolate_zero": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), size=0),
                         "Input and output sizes should be greater than 0"),
    "interpolate_bilinear_3d": (lambda L: fn(L).interpolate(t(L, 1, 2, 3), size=4,
                                                            mode="bilinear"), None),
    "pixel_shuffle_2d": (lambda L: fn(L).pixel_shuffle(t(L, 4, 4), 2),
                         "pixel_shuffle expects input to have at least 3 dimensions"),
    "pixel_shuffle_channels": (lambda L: fn(L).pixel_shuffle(t(L, 3, 2, 2), 2),
                               "divisible by the square of upscale_factor"),
    "pixel_unshuffle_2d": (lambda L: fn(L).pixel_unshuffle(t(L, 4, 4), 2),
                           "pixel_unshuffle expects input to have at least 3 dimensions"),
    "pixel_unshuffle_height": (lambda L: fn(L).pixel_unshuffle(t(L, 1, 3, 4), 2),
                               "pixel_unshuffle expects height to be divisible"),
    "pixel_unshuffle_width": (lambda L: fn(L).pixel_unshuffle(t(L, 1, 4, 3), 2),
                              "pixel_unshuffle expects width to be divisible"),
    "channel_shuffle_groups": (lambda L: fn(L).channel_shuffle(t(L, 1, 4, 2, 2), 0),
                               "Number of groups to divide channels in must be positive"),
    "channel_shuffle_2d": (lambda L: fn(L).channel_shuffle(t(L, 4, 2), 2),
                           "channel_shuffle expects input with > 2 dims"),
    "channel_shuffle_divisible": (lambda L: fn(L).channel_shuffle(t(L, 1, 3, 2, 2), 2),
                                  "Number of channels must be divisible by groups"),
    "unfold_2d": (lambda L: fn(L).unfold(t(L, 4, 4), 2), "Dimension out of range"),
    "unfold_5d": (lambda L: fn(L).unfold(t(L, 1, 1, 1, 4, 4), 2),
                  "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size"),
    "fold_4d": (lambda L: fn(L).fold(t(L, 1, 4, 4, 1), (3, 3), 2), None),
    "fold_channels": (lambda L: fn(L).fold(t(L, 1, 3, 4), (3, 3), 2),
                      "Expected size of input's dimension 1 to be divisible by the product"),
    "fold_blocks": (lambda L: fn(L).fold(t(L, 1, 4, 5), (3, 3), 2), None),
    # ------------------------------------------------------------------ attention
    "sdpa_1d": (lambda L: fn(L).scaled_dot_product_attention(t(L, 4), t(L, 4), t(L, 4)), None),
    "sdpa_embed_dim": (lambda L: fn(L).scaled_dot_product_attention(t(L, 2, 3, 4), t(L, 2, 3, 5),
                                                                    t(L, 2, 3, 5)), None),
    "sdpa_seq_len": (lambda L: fn(L).scaled_dot_product_attention(t(L, 2, 3, 4), t(L, 2, 3, 4),
                                                                  t(L, 2, 5, 4)), None),
    "sdpa_mask_and_causal": (lambda L: fn(L).scaled_dot_product_attention(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4), attn_mask=t(L, 3, 3), is_causal=True),
        None),
    "sdpa_int_mask": (lambda L: fn(L).scaled_dot_product_attention(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4), attn_mask=idx(L, 1, 0, 1)), None),
    "sdpa_gqa_heads": (lambda L: fn(L).scaled_dot_product_attention(
        t(L, 1, 3, 2, 4), t(L, 1, 2, 2, 4), t(L, 1, 2, 2, 4), enable_gqa=True), None),
    "mha_module_bad_heads": (lambda L: L.nn.MultiheadAttention(4, 0),
                             "embed_dim and num_heads must be greater than 0"),
    "mha_module_indivisible": (lambda L: L.nn.MultiheadAttention(5, 2),
                               "embed_dim must be divisible by num_heads"),
    "mha_4d_query": (lambda L: L.nn.MultiheadAttention(4, 2)(t(L, 1, 2, 3, 4), t(L, 1, 2, 3, 4),
                                                             t(L, 1, 2, 3, 4)),
                     "query should be unbatched 2D or batched 3D tensor"),
    "mha_key_dims": (lambda L: L.nn.MultiheadAttention(4, 2)(t(L, 2, 3, 4), t(L, 3, 4),
                                                             t(L, 3, 4)),
                     "expected `key` and `value` to be 3-D"),
    "mha_embed_mismatch": (lambda L: L.nn.MultiheadAttention(4, 2)(t(L, 2, 3, 5), t(L, 2, 3, 5),
                                                                   t(L, 2, 3, 5)),
                           "was expecting embedding dimension of 4"),
    "mha_key_value_shape": (lambda L: L.nn.MultiheadAttention(4, 2)(t(L, 2, 3, 4), t(L, 2, 3, 4),
                                                                    t(L, 5, 3, 4)), None),
    "mha_mask_shape": (lambda L: L.nn.MultiheadAttention(4, 2)(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4), attn_mask=t(L, 3, 3)),
        "The shape of the 2D attn_mask is"),
    "mha_mask_4d": (lambda L: L.nn.MultiheadAttention(4, 2)(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4), attn_mask=t(L, 1, 1, 2, 2)),
        None),
    "mha_int_mask": (lambda L: L.nn.MultiheadAttention(4, 2)(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4), attn_mask=idx(L, 1, 0, 0, 1).reshape(2, 2)),
        "only bool and floating types of attn_mask are supported"),
    "mha_causal_no_mask": (lambda L: L.nn.MultiheadAttention(4, 2)(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4), is_causal=True),
        "Need attn_mask if specifying the is_causal hint"),
    "mha_padding_mask_shape": (lambda L: L.nn.MultiheadAttention(4, 2)(
        t(L, 2, 3, 4), t(L, 2, 3, 4), t(L, 2, 3, 4),
        key_padding_mask=L.zeros(3, 5, dtype=L.bool)), None),
})
CASES.update({
    # ------------------------------------------------------------------ shape kernels
    "split_0d": (lambda L: L.split(t(L), 1), "split expects at least a 1-dimensional tensor"),
    "split_negative_size": (lambda L: L.split(t(L, 4), [5, -1]),
                            "split_with_sizes expects split_sizes have only non-negative"),
    "tensor_split_0d": (lambda L: L.tensor_split(t(L), 2),
                        "tensor_split expected at least a 1-dimensional tensor"),
    "chunk_0d": (lambda L: L.chunk(t(L), 2), "chunk expects at least a 1-dimensional tensor"),
    "movedim_repeated_destination": (lambda L: L.movedim(t(L, 2, 3), (0, 1), (1, 1)),
                                     "movedim: repeated dim in `destination`"),
    "view_dtype_stride": (lambda L: t(L, 4, 4)[:, :3].view(L.float64), None),
    "as_strided_overflow": (lambda L: L.as_strided(t(L, 4), (2 ** 62, 4), (2 ** 62, 1)), None),
    "cat_empty_list": (lambda L: L.cat([]), None),
    "stack_empty_list": (lambda L: L.stack([]), "stack expects a non-empty TensorList"),
    "roll_0d": (lambda L: L.roll(t(L), 1, 0), None),
    "repeat_interleave_float": (lambda L: L.repeat_interleave(t(L, 3)), None),
    "tril_indices_negative_col": (lambda L: L.tril_indices(3, -1), "col must be non-negative"),
    "gather_dims": (lambda L: L.gather(t(L, 2, 3), 1, idx(L, 0, 1)),
                    "Index tensor must have the same number of dimensions as input"),
    "scatter_dims": (lambda L: L.zeros(2, 3).scatter_(1, idx(L, 0, 1), t(L, 2, 3)),
                     "Index tensor must have the same number of dimensions as self"),
    "index_add_2d_index": (lambda L: L.zeros(3).index_add_(0, idx(L, 0, 1).reshape(1, 2),
                                                           t(L, 2)),
                           "Index is supposed to be a vector"),
    "index_copy_2d_index": (lambda L: L.zeros(3).index_copy_(0, idx(L, 0, 1).reshape(1, 2),
                                                             t(L, 2)),
                            "Index should have dimension 1 or 0"),
    "index_copy_source_dims": (lambda L: L.zeros(3, 2).index_copy_(0, idx(L, 0),
                                                                   t(L, 1, 3)), None),
    "index_fill_2d_index": (lambda L: L.zeros(3).index_fill_(0, idx(L, 0, 1).reshape(1, 2),
                                                             1.0),
                            "Index has to be a vector/scalar"),
    "getitem_too_many": (lambda L: t(L, 2)[0, 0], "too many indices for tensor of dimension 1"),
    "getitem_mask_shape": (lambda L: t(L, 2, 3)[L.tensor([True, False, True])],
                           "The shape of the mask [3] at index 0 does not match"),
    "getitem_float_index": (lambda L: t(L, 3)[t(L, 2)],
                            "tensors used as indices must be long, int, byte or bool tensors"),
    "getitem_too_many_tensors": (lambda L: t(L, 3)[idx(L, 0), idx(L, 0)],
                                 "too many indices for tensor of dimension 1"),
    "unflatten_0d": (lambda L: L.ones(()).unflatten(0, (1,)), None),
    "unflatten_two_inferred": (lambda L: t(L, 6).unflatten(0, (-1, -1)),
                               "only one dimension can be inferred"),
    "stack_not_tuple": (lambda L: L.stack(t(L, 2)), "must be tuple of Tensors"),
    "diag_3d": (lambda L: L.diag(t(L, 2, 2, 2)), "Supports 1D or 2D tensors. Got 3D"),
    "scatter_src_and_value": (lambda L: L.zeros(3).scatter(0, idx(L, 0), src=t(L, 1),
                                                           value=1.0), None),
    # ------------------------------------------------------------------ blas / einsum
    "einsum_no_operands": (lambda L: L.einsum("i"),
        "must specify the equation string and at least one operand"),
    "einsum_bad_dot": (lambda L: L.einsum("i.j", t(L, 2, 2)), None),
    "einsum_output_dot": (lambda L: L.einsum("ij->.", t(L, 2, 2)), None),
    "einsum_bad_subscript": (lambda L: L.einsum("ij->i1", t(L, 2, 2)), None),
    "einsum_equation_type": (lambda L: L.einsum(1, t(L, 2)), None),
    "bmm_bool": (lambda L: L.bmm(L.ones(1, 2, 2, dtype=L.bool), L.ones(1, 2, 2, dtype=L.bool)),
                 "not implemented for 'Bool'"),
    "cdist_int": (lambda L: L.cdist(idx(L, 1, 2).reshape(1, 2), idx(L, 1, 2).reshape(1, 2)),
                  "cdist only supports floating-point dtypes"),
    "addmm_shapes": (lambda L: L.addmm(t(L, 2, 2), t(L, 2, 3), t(L, 4, 2)),
                     "mat1 and mat2 shapes cannot be multiplied"),
    # ------------------------------------------------------------------ linalg
    "linalg_int_input": (lambda L: L.linalg.inv(idx(L, 1, 0, 0, 1).reshape(2, 2)),
                         "Expected a floating point or complex tensor as input"),
    "linalg_1d_input": (lambda L: L.linalg.inv(t(L, 3)), "must have at least 2 dimensions"),
    "linalg_non_square": (lambda L: L.linalg.inv(t(L, 2, 3)),
                          "must be batches of square matrices"),
    "linalg_solve_dtypes": (lambda L: L.linalg.solve(t(L, 2, 2), t(L, 2, dtype="float64")),
                            "to have the same dtype"),
    "linalg_solve_triangular_1d": (lambda L: L.linalg.solve_triangular(t(L, 2, 2), t(L, 2),
                                                                       upper=True),
                                   "must have at least 2 dimensions"),
    "linalg_solve_shapes": (lambda L: L.linalg.solve(t(L, 2, 2), t(L, 3, 1)),
                            "Incompatible shapes of A and B"),
    "linalg_singular": (lambda L: L.linalg.solve(L.zeros(2, 2), t(L, 2, 1)), "singular"),
    "cholesky_not_pd": (lambda L: L.linalg.cholesky(-L.eye(2)), "not positive-definite"),
    "qr_mode": (lambda L: L.linalg.qr(t(L, 2, 2), mode="x"), "qr received unrecognized mode"),
    "eigh_uplo": (lambda L: L.linalg.eigh(t(L, 2, 2), UPLO="X"),
                  "Expected UPLO argument to be 'L' or 'U'"),
    "eig_nan": (lambda L: L.linalg.eig(L.full((2, 2), float("nan"))),
                "should not contain infs or NaNs"),
    "lstsq_dtypes": (lambda L: L.linalg.lstsq(t(L, 2, 2), t(L, 2, 1, dtype="float64")),
                     "Expected input and other to have the same dtype"),
    "lstsq_driver": (lambda L: L.linalg.lstsq(t(L, 2, 2), t(L, 2, 1), driver="x"),
                     "parameter `driver` should be one of"),
    "lstsq_rows": (lambda L: L.linalg.lstsq(t(L, 2, 2), t(L, 3, 1)),
                   "input.size(-2) should match other.size(-2)"),
    "geqrf_1d": (lambda L: L.geqrf(t(L, 3)), "input must have at least 2 dimensions"),
    "geqrf_int": (lambda L: L.geqrf(idx(L, 1, 2, 3, 4).reshape(2, 2)),
        "not implemented for 'Long'"),
    # ------------------------------------------------------------------ fft
    "fft_norm": (lambda L: L.fft.fft(t(L, 4), norm="x"), "Invalid normalization mode"),
    "fft_list": (lambda L: L.fft.fft([1.0, 2.0]), "must be Tensor"),
    "fft_dim": (lambda L: L.fft.fft(t(L, 4), dim=3), "Dimension out of range"),
    "fft_n_zero": (lambda L: L.fft.fft(t(L, 4), n=0), "Invalid number of data points (0)"),
    "fftn_repeated_dims": (lambda L: L.fft.fftn(t(L, 4, 4), dim=(0, 0)), "FFT dims must be unique"),
    "fftn_s_dim_len": (lambda L: L.fft.fftn(t(L, 4, 4), s=(2, 2), dim=(0,)),
                       "When given, dim and shape arguments must have the same length"),
    "fftn_s_too_long": (lambda L: L.fft.fftn(t(L, 4), s=(2, 2)),
                        "Got shape with 2 values but input tensor only has 1 dimensions"),
    "rfft_complex": (lambda L: L.fft.rfft(t(L, 4).to(L.complex64)), "expects a real input tensor"),
    "ihfft_complex": (lambda L: L.fft.ihfft(t(L, 4).to(L.complex64)),
                      "ihfft expects a real input tensor"),
    "ihfftn_complex": (lambda L: L.fft.ihfftn(t(L, 4).to(L.complex64)), None),
    # ------------------------------------------------------------------ tensor / creation
    "tensor_grad_bad_type": (lambda L: setattr(t(L, 2), "grad", 1.0),
                             "assigned grad expected to be a Tensor or None"),
    "tensor_numpy_requires_grad": (lambda L: t(L, 2).requires_grad_().numpy(),
                                   "Can't call numpy() on Tensor that requires grad"),
    "tensor_H_3d": (lambda L: t(L, 2, 2, 2).H, "tensor.H is only supported on matrices"),
    "tensor_retain_grad_no_grad": (lambda L: t(L, 2).retain_grad(),
                                   "can't retain_grad on Tensor that has requires_grad=False"),
    "tensor_negative_stride_numpy": (lambda L: L.from_numpy(np.arange(4.0)[::-1]),
                                     "At least one stride in the given numpy array is negative"),
    "tensor_int8_overflow": (lambda L: L.full((1,), 300, dtype=L.int8),
                             "value cannot be converted to type int8"),
    "fill_int8_overflow": (lambda L: L.zeros(1, dtype=L.int8).fill_(300),
                           "value cannot be converted to type int8"),
    "tensor_int_overflow": (lambda L: L.tensor([2 ** 70]), "Overflow when unpacking long"),
})


# ------------------------------------------------------------------ modules, optim, data
def _opt(L, *groups, **kw):
    return L.optim.SGD(list(groups) if groups else [L.nn.Parameter(L.ones(2))], lr=0.1, **kw)


def _scheduler(L, name, *args, **kw):
    return getattr(L.optim.lr_scheduler, name)(_opt(L), *args, **kw)


def _module_call(L, build, *inputs):
    return build(L)(*inputs)


def _register(L, how, *args):
    m = L.nn.Linear(2, 2)
    return getattr(m, how)(*args)


def _setattr(L, name, value):
    m = L.nn.Linear(2, 2)
    setattr(m, name, value(L) if callable(value) else value)


def _optimizer_load(L, change):
    p = L.nn.Parameter(L.ones(2))
    o = L.optim.SGD([p], lr=0.1)
    sd = o.state_dict()
    change(sd)
    o.load_state_dict(sd)


CASES.update({
    "module_register_buffer_dot": (lambda L: _register(L, "register_buffer", "a.b", L.ones(1)),
                                   'buffer name can'),
    "module_register_buffer_empty": (lambda L: _register(L, "register_buffer", "", L.ones(1)),
                                     "t be empty string"),
    "module_register_buffer_exists": (lambda L: _register(L, "register_buffer", "weight",
                                                          L.ones(1)), "already exists"),
    "module_register_buffer_not_tensor": (lambda L: _register(L, "register_buffer", "b", 3),
                                          "cannot assign 'int' object to buffer 'b'"),
    "module_register_buffer_name_type": (lambda L: _register(L, "register_buffer", 3,
                                                             L.ones(1)),
                                         "buffer name should be a string"),
    "module_register_parameter_tensor": (lambda L: _register(L, "register_parameter", "p",
                                                             L.ones(1)),
                                         "cannot assign 'torch.FloatTensor' object to parameter"),
    "module_register_parameter_non_leaf": (lambda L: _register(
        L, "register_parameter", "p", L.nn.Parameter(L.ones(1)) * 2), None),
    "module_add_module_not_module": (lambda L: _register(L, "add_module", "m", 3),
                                     "is not a Module subclass"),
    "module_add_module_name_type": (lambda L: _register(L, "add_module", 3, L.nn.ReLU()),
                                    "module name should be a string"),
    "module_add_module_dot": (lambda L: _register(L, "add_module", "a.b", L.nn.ReLU()),
                              "t contain \".\", got: a.b"),
    "module_add_module_empty": (lambda L: _register(L, "add_module", "", L.nn.ReLU()),
                                "t be empty string"),
    "module_add_module_exists": (lambda L: _register(L, "add_module", "weight", L.nn.ReLU()),
                                 "already exists"),
    "module_get_submodule_missing": (lambda L: L.nn.Sequential(L.nn.ReLU()).get_submodule("x"),
                                     "has no attribute `x`"),
    "module_get_submodule_not_module": (lambda L: L.nn.Linear(2, 2).get_submodule("weight"),
                                        "is not an nn.Module"),
    "module_get_parameter_missing": (lambda L: L.nn.Linear(2, 2).get_parameter("nope"),
                                     "has no attribute `nope`"),
    "module_get_parameter_not_param": (lambda L: L.nn.BatchNorm1d(2).get_parameter(
        "running_mean"), "is not an nn.Parameter"),
    "module_get_buffer_not_buffer": (lambda L: L.nn.Linear(2, 2).get_buffer("weight"),
                                     "is not a buffer"),
    "module_set_submodule_empty": (lambda L: L.nn.Sequential(L.nn.ReLU()).set_submodule(
        "", L.nn.ReLU()), "Cannot set the submodule without a target name"),
    "module_set_submodule_not_module": (lambda L: L.nn.Sequential(L.nn.ReLU()).set_submodule(
        "0", 3), "is not an nn.Module"),
    "module_to_int_dtype": (lambda L: L.nn.Linear(2, 2).to(L.int64),
                            "nn.Module.to only accepts floating point or complex dtypes"),
    "module_train_not_bool": (lambda L: L.nn.Linear(2, 2).train(3),
                              "training mode is expected to be boolean"),
    "module_set_param_tensor": (lambda L: _setattr(L, "weight", lambda L: L.ones(2, 2)),
                                "cannot assign 'torch.FloatTensor' as parameter 'weight'"),
    "module_set_submodule_attr": (lambda L: _setattr(L, "weight", lambda L: L.nn.ReLU()), None),
    "module_extra_state": (lambda L: L.nn.Linear(2, 2).get_extra_state(), None),
    "module_init_kwargs": (lambda L: L.nn.Module(foo=1),
                           "got an unexpected keyword argument 'foo'"),
    "module_init_args": (lambda L: L.nn.Module(1), "takes 1 positional argument"),
    # containers
    "sequential_index": (lambda L: L.nn.Sequential(L.nn.ReLU())[3], "index 3 is out of range"),
    "sequential_mul_zero": (lambda L: L.nn.Sequential(L.nn.ReLU()) * 0,
                            "Non-positive multiplication factor"),
    "sequential_mul_type": (lambda L: L.nn.Sequential(L.nn.ReLU()) * 1.5,
                            "unsupported operand type(s) for *"),
    "sequential_add_type": (lambda L: L.nn.Sequential(L.nn.ReLU()) + 3,
                            "add operator supports only objects of Sequential class"),
    "sequential_insert_type": (lambda L: L.nn.Sequential(L.nn.ReLU()).insert(0, 3),
                               "module should be of type"),
    "sequential_insert_index": (lambda L: L.nn.Sequential(L.nn.ReLU()).insert(5, L.nn.ReLU()),
                                "Index out of range: 5"),
    "module_list_extend": (lambda L: L.nn.ModuleList().extend(3),
                           "ModuleList.extend should be called with an iterable"),
    "module_dict_update": (lambda L: L.nn.ModuleDict().update(3),
                           "should be called with an iterable of key/value pairs"),
    "module_dict_update_element": (lambda L: L.nn.ModuleDict().update([3]),
                                   "update sequence element #0 should be Iterable"),
    "module_dict_update_length": (lambda L: L.nn.ModuleDict().update([("a",)]),
                                  "update sequence element #0 has length 1; 2 is required"),
    "parameter_list_call": (lambda L: L.nn.ParameterList()(), "ParameterList should not be called"),
    "parameter_list_extend": (lambda L: L.nn.ParameterList().extend(3),
                              "ParameterList.extend should be called with an iterable"),
    "parameter_dict_call": (lambda L: L.nn.ParameterDict()(1),
        "ParameterDict should not be called"),
    "parameter_dict_bad_key": (lambda L: L.nn.ParameterDict()[3], None),
    # RNNs
    "rnn_dropout_range": (lambda L: L.nn.RNN(2, 3, dropout=2.0),
                          "dropout should be a number in range [0, 1]"),
    "rnn_input_size_zero": (lambda L: L.nn.RNN(0, 3), "input_size must be greater than zero"),
    "rnn_hidden_size_type": (lambda L: L.nn.RNN(2, 3.0), "hidden_size should be of type int"),
    "rnn_hidden_size_zero": (lambda L: L.nn.RNN(2, 0), "hidden_size must be greater than zero"),
    "rnn_num_layers_zero": (lambda L: L.nn.RNN(2, 3, num_layers=0),
                            "num_layers must be greater than zero"),
    "lstm_proj_negative": (lambda L: L.nn.LSTM(2, 3, proj_size=-1),
                           "proj_size should be a positive integer or zero"),
    "lstm_proj_too_big": (lambda L: L.nn.LSTM(2, 3, proj_size=3),
                          "proj_size has to be smaller than hidden_size"),
    "gru_proj": (lambda L: L.nn.GRU(2, 3, proj_size=1),
        "proj_size argument is only supported for LSTM"),
    "rnn_nonlinearity": (lambda L: L.nn.RNN(2, 3, nonlinearity="relu6"), "Unknown nonlinearity"),
    "rnn_input_dims": (lambda L: L.nn.RNN(2, 3)(t(L, 1, 1, 1, 2)),
                       "Expected input to be 2D or 3D"),
    "rnn_input_size": (lambda L: L.nn.RNN(2, 3)(t(L, 4, 1, 5)),
                       "input.size(-1) must be equal to input_size"),
    "rnn_hidden_shape": (lambda L: L.nn.RNN(2, 3)(t(L, 4, 1, 2), t(L, 1, 1, 4)),
                         "Expected hidden size"),
    "rnn_hidden_dims": (lambda L: L.nn.RNN(2, 3)(t(L, 4, 1, 2), t(L, 1, 3)),
                        "hx should also be 3-D"),
    "lstm_input_dims": (lambda L: L.nn.LSTM(2, 3)(t(L, 2)), "LSTM: Expected input to be 2D or 3D"),
    "lstm_hidden_dims": (lambda L: L.nn.LSTM(2, 3)(t(L, 4, 1, 2), (t(L, 1, 3), t(L, 1, 3))),
                         "hx and cx should also be 3-D"),
    "rnn_cell_input_dims": (lambda L: L.nn.RNNCell(2, 3)(t(L, 1, 1, 2)),
                            "Expected input to be 1D or 2D"),
    "gru_cell_hidden_dims": (lambda L: L.nn.GRUCell(2, 3)(t(L, 1, 2), t(L, 1, 1, 3)), None),
    "rnn_cell_input_size": (lambda L: L.nn.RNNCell(2, 3)(t(L, 1, 5)),
                            "input has inconsistent input_size"),
    "rnn_cell_batch": (lambda L: L.nn.RNNCell(2, 3)(t(L, 2, 2), t(L, 3, 3)),
                       "Input batch size 2 doesn't match hidden0 batch size 3"),
    "rnn_cell_hidden_size": (lambda L: L.nn.RNNCell(2, 3)(t(L, 2, 2), t(L, 2, 4)),
                             "hidden0 has inconsistent hidden_size"),
    "rnn_empty_sequence": (lambda L: L.nn.RNN(2, 3)(t(L, 0, 1, 2)),
                           "Expected sequence length to be larger than 0 in RNN"),
    "rnn_dtype": (lambda L: L.nn.RNN(2, 3)(t(L, 4, 1, 2, dtype="float64")), None),
    # optimizers
    "optimizer_tensor_params": (lambda L: L.optim.SGD(L.ones(2), lr=0.1),
                                "params argument given to the optimizer should be an iterable"),
    "optimizer_empty": (lambda L: L.optim.SGD([], lr=0.1), "optimizer got an empty parameter list"),
    "optimizer_group_type": (lambda L: _opt(L).add_param_group(3), "param_group must be a dict"),
    "optimizer_group_set": (lambda L: _opt(L).add_param_group(
        {"params": {L.nn.Parameter(L.ones(1))}}), "ordered collections"),
    "optimizer_non_tensor": (lambda L: L.optim.SGD([3], lr=0.1),
        "optimizer can only optimize Tensors"),
    "optimizer_non_leaf": (lambda L: L.optim.SGD([L.ones(2, requires_grad=True) * 2], lr=0.1),
                           "can't optimize a non-leaf Tensor"),
    "optimizer_duplicate_group": (lambda L: (lambda p: L.optim.SGD([{"params": [p]},
                                                                    {"params": [p]}], lr=0.1))(
        L.nn.Parameter(L.ones(1))), "some parameters appear in more than one parameter group"),
    "optimizer_bad_lr": (lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], lr=-1.0),
                         "Invalid learning rate"),
    "optimizer_tensor_lr": (lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], lr=L.ones(2)),
                            "Tensor lr must be 1-element"),
    "optimizer_fused_foreach": (lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))], fused=True,
                                                       foreach=True),
                                "`fused` and `foreach` cannot be `True` together"),
    "optimizer_fused_differentiable": (lambda L: L.optim.Adam([L.nn.Parameter(L.ones(1))],
                                                              fused=True, differentiable=True),
                                       "`fused` does not support `differentiable`"),
    "optimizer_load_groups": (lambda L: _optimizer_load(L, lambda sd: sd["param_groups"].append(
        dict(sd["param_groups"][0]))), "different number of parameter groups"),
    "optimizer_load_sizes": (lambda L: _optimizer_load(L, lambda sd: sd["param_groups"][0].update(
        params=[0, 1])), "doesn't match the size of optimizer's group"),
    # lr schedulers
    "scheduler_not_optimizer": (lambda L: L.optim.lr_scheduler.StepLR(3, 1), "is not an Optimizer"),
    "lambda_lr_count": (lambda L: _scheduler(L, "LambdaLR", [lambda e: 1, lambda e: 1]),
                        "Expected 1 lr_lambdas, but got 2"),
    "scheduler_last_epoch_no_initial_lr": (lambda L: _scheduler(L, "StepLR", 1, last_epoch=3),
                                           "param 'initial_lr' is not specified"),
    "constant_lr_factor": (lambda L: _scheduler(L, "ConstantLR", factor=2.0),
                           "Constant multiplicative factor expected to be between 0 and 1"),
    "linear_lr_start": (lambda L: _scheduler(L, "LinearLR", start_factor=0.0),
                        "Starting multiplicative factor expected to be greater than 0"),
    "linear_lr_end": (lambda L: _scheduler(L, "LinearLR", end_factor=2.0),
                      "Ending multiplicative factor expected to be between 0 and 1"),
    "cosine_warm_restarts_t0": (lambda L: _scheduler(L, "CosineAnnealingWarmRestarts", 0),
                                "Expected positive integer T_0"),
    "cosine_warm_restarts_tmult": (lambda L: _scheduler(L, "CosineAnnealingWarmRestarts", 2,
                                                        T_mult=0),
                                   "Expected integer T_mult >= 1"),
    "cosine_warm_restarts_eta": (lambda L: _scheduler(L, "CosineAnnealingWarmRestarts", 2,
                                                      eta_min="x"),
                                 "Expected float or int eta_min"),
    "cosine_warm_restarts_epoch": (lambda L: _scheduler(L, "CosineAnnealingWarmRestarts", 2)
                                   .step(-1), "Expected non-negative epoch"),
    "sequential_lr_empty": (lambda L: L.optim.lr_scheduler.SequentialLR(_opt(L), [], []), None),
    "chained_scheduler_empty": (lambda L: L.optim.lr_scheduler.ChainedScheduler([]), None),
    "plateau_factor": (lambda L: _scheduler(L, "ReduceLROnPlateau", factor=2.0),
                       "Factor should be < 1.0"),
    "plateau_min_lrs": (lambda L: _scheduler(L, "ReduceLROnPlateau", min_lr=[0.1, 0.2]),
                        "expected 1 min_lrs, got 2"),
    "plateau_mode": (lambda L: _scheduler(L, "ReduceLROnPlateau", mode="x"), "mode x is unknown"),
    "plateau_threshold_mode": (lambda L: _scheduler(L, "ReduceLROnPlateau", threshold_mode="x"),
                               "threshold mode x is unknown"),
    "cyclic_lr_no_momentum": (lambda L: L.optim.lr_scheduler.CyclicLR(
        L.optim.Adagrad([L.nn.Parameter(L.ones(1))]), 0.1, 1.0), None),
    "cyclic_lr_mode": (lambda L: _scheduler(L, "CyclicLR", 0.1, 1.0, mode="x"),
                       "mode is invalid and scale_fn is None"),
    "one_cycle_no_steps": (lambda L: _scheduler(L, "OneCycleLR", 1.0),
                           "You must define either total_steps OR"),
    "one_cycle_pct": (lambda L: _scheduler(L, "OneCycleLR", 1.0, total_steps=10, pct_start=2.0),
                      "Expected float between 0 and 1 pct_start"),
    "one_cycle_anneal": (lambda L: _scheduler(L, "OneCycleLR", 1.0, total_steps=10,
                                              anneal_strategy="x"),
                         "anneal_strategy must be one of 'cos' or 'linear'"),
    "one_cycle_epochs": (lambda L: _scheduler(L, "OneCycleLR", 1.0, epochs=0, steps_per_epoch=2),
                         "Expected positive integer epochs"),
})


# ------------------------------------------------------------------ device, dtype, func, utils
def _prune_module(L):
    import importlib
    return importlib.import_module(L.__name__ + ".nn.utils.prune")


def _prune(L, method, **kw):
    _prune_module(L)
    m = L.nn.Linear(3, 2)
    return getattr(L.nn.utils.prune, method)(m, "weight", **kw)


def _parametrize(L, param, name="weight"):
    m = L.nn.Linear(2, 2)
    L.nn.utils.parametrize.register_parametrization(m, name, param(L))


class _Identity:
    """A parametrization built per library (a module of that library)."""
    def __call__(self, L):
        class P(L.nn.Module):
            def forward(self, x):
                return x
        return P()


def _scaler_twice(L):
    s = L.amp.GradScaler("cpu")
    p = L.nn.Parameter(L.ones(2))
    s.scale((p * 2).sum()).backward()
    o = L.optim.SGD([p], lr=0.1)
    s.unscale_(o)
    s.unscale_(o)


CASES.update({
    "device_bad_string": (lambda L: L.device("gpu"), None),
    "device_index_in_string_and_arg": (lambda L: L.device("cpu:0", 1),
                                       "must not include an index because index was passed"),
    "device_negative_index": (lambda L: L.device("cpu", -1), "Device index must not be negative"),
    "device_bad_type": (lambda L: L.device(1.5), "received an invalid combination of arguments"),
    "device_bad_suffix": (lambda L: L.device("cpu:x"), "Invalid device string"),
    "set_default_dtype_int": (lambda L: L.set_default_dtype(L.int64),
                              "only floating-point types are supported as the default type"),
    "finfo_int": (lambda L: L.finfo(L.int64), "torch.finfo() requires a floating point input type"),
    "iinfo_bool": (lambda L: L.iinfo(L.bool), "torch.bool is not supported by torch.iinfo"),
    "iinfo_float": (lambda L: L.iinfo(L.float32), "torch.iinfo() requires an integer input type"),
    "result_type_kwarg": (lambda L: L.result_type(t(L, 2), other=1, foo=2), None),
    "to_complex_of_int": (lambda L: L.int64.to_complex(), None),
    # func transforms
    "vmap_not_callable": (lambda L: L.func.vmap(3)(t(L, 2)), "'int' object is not callable"),
    "vmap_randomness": (lambda L: L.func.vmap(lambda x: x, randomness="x")(t(L, 2)),
                        "Only allowed values for randomness are"),
    "vmap_chunk_size": (lambda L: L.func.vmap(lambda x: x, chunk_size=0)(t(L, 2)),
                        "chunk_size should be None or greater than 0"),
    "vmap_in_dims_len": (lambda L: L.func.vmap(lambda x, y: x, in_dims=(0,))(t(L, 2), t(L, 2)),
                         "in_dims is not compatible with the structure of `inputs`"),
    "vmap_in_dim_range": (lambda L: L.func.vmap(lambda x: x, in_dims=2)(t(L, 2)), None),
    "vmap_in_dim_type": (lambda L: L.func.vmap(lambda x: x, in_dims=1.5)(t(L, 2)), None),
    "vmap_sizes_differ": (lambda L: L.func.vmap(lambda x, y: x + y)(t(L, 2), t(L, 3)),
                          "Expected all tensors to have the same size in the mapped dimension"),
    "vmap_no_tensor_inputs": (lambda L: L.func.vmap(lambda x: x)(3), None),
    "vmap_returns_non_tensor": (lambda L: L.func.vmap(lambda x: 3)(t(L, 2)),
                                "must only return Tensors"),
    "vmap_item": (lambda L: L.func.vmap(lambda x: x.item())(t(L, 2)),
                  "It looks like you're calling .item() on a Tensor"),
    "vmap_tolist": (lambda L: L.func.vmap(lambda x: x.tolist())(t(L, 2)), None),
    "vmap_data_dependent": (lambda L: L.func.vmap(lambda x: x if x > 0 else -x)(t(L, 2)),
                            "data-dependent control flow"),
    "vmap_out_dims": (lambda L: L.func.vmap(lambda x: x, out_dims=(0, 1))(t(L, 2)), None),
    "vmap_random_error": (lambda L: L.func.vmap(lambda x: L.rand(2) + x)(t(L, 2)),
                          "called random operation while in randomness error mode"),
    "grad_non_scalar": (lambda L: L.func.grad(lambda x: x)(t(L, 2)), None),
    "grad_argnums_type": (lambda L: L.func.grad(lambda x: x.sum(), argnums=1.5)(t(L, 2)),
                          "argnums must be int or Tuple"),
    "grad_argnums_range": (lambda L: L.func.grad(lambda x: x.sum(), argnums=2)(t(L, 2)),
                           "Got argnum=2, but only 1 positional inputs"),
    "grad_int_input": (lambda L: L.func.grad(lambda x: x.sum())(idx(L, 1, 2)),
                       "only Tensors of floating point dtype can require gradients"),
    "grad_and_value_aux": (lambda L: L.func.grad_and_value(lambda x: x.sum(), has_aux=True)(
        t(L, 2)), None),
    "vjp_non_tensor_output": (lambda L: L.func.vjp(lambda x: 3, t(L, 2)), None),
    "vjp_cotangent_shape": (lambda L: L.func.vjp(lambda x: x * 2, t(L, 2))[1](t(L, 3)),
                            "Mismatch in shape"),
    "jvp_primals_not_tuple": (lambda L: L.func.jvp(lambda x: x, t(L, 2), (t(L, 2),)),
                              "Expected primals to be a tuple"),
    "jvp_length": (lambda L: L.func.jvp(lambda x: x, (t(L, 2),), (t(L, 2), t(L, 2))),
                   "Expected primals and tangents to have the same"),
    "jvp_shapes": (lambda L: L.func.jvp(lambda x: x, (t(L, 2),), (t(L, 3),)), None),
    "stack_module_state_empty": (lambda L: L.func.stack_module_state([]),
                                 "Expected at least one model, got 0"),
    "stack_module_state_modes": (lambda L: L.func.stack_module_state(
        [L.nn.Linear(2, 2), L.nn.Linear(2, 2).eval()]), "same training/eval mode"),
    # init
    "init_gain_nonlinearity": (lambda L: L.nn.init.calculate_gain("x"), "Unsupported nonlinearity"),
    "init_gain_slope": (lambda L: L.nn.init.calculate_gain("leaky_relu", "x"),
                        "negative_slope x not a valid number"),
    "init_eye_3d": (lambda L: L.nn.init.eye_(t(L, 2, 2, 2)), "Only tensors with 2 dimensions"),
    "init_dirac_2d": (lambda L: L.nn.init.dirac_(t(L, 2, 2)), "Only tensors with 3, 4, or 5"),
    "init_dirac_groups": (lambda L: L.nn.init.dirac_(t(L, 3, 2, 2), groups=2),
                          "dim 0 must be divisible by groups"),
    "init_xavier_1d": (lambda L: L.nn.init.xavier_uniform_(t(L, 3)),
                       "Fan in and fan out can not be computed"),
    "init_kaiming_mode": (lambda L: L.nn.init.kaiming_uniform_(t(L, 3, 3), mode="x"),
                          "Mode x not supported"),
    "init_orthogonal_1d": (lambda L: L.nn.init.orthogonal_(t(L, 3)),
                           "Only tensors with 2 or more dimensions are supported"),
    "init_sparse_3d": (lambda L: L.nn.init.sparse_(t(L, 2, 2, 2), 0.5),
                       "Only tensors with 2 dimensions are supported"),
    # prune
    "prune_amount_type": (lambda L: _prune(L, "random_unstructured", amount="x"),
                          "Invalid type for amount"),
    "prune_amount_range": (lambda L: _prune(L, "random_unstructured", amount=1.5),
                           "should either be a float in the range [0, 1]"),
    "prune_amount_too_many": (lambda L: _prune(L, "random_unstructured", amount=10),
                              "should be smaller than the number of parameters to prune"),
    "prune_structured_dim": (lambda L: _prune(L, "ln_structured", amount=1, n=2, dim=5), None),
    "prune_importance_shape": (lambda L: _prune(L, "l1_unstructured", amount=1,
                                                importance_scores=t(L, 5)),
                               "importance_scores should have the same shape"),
    "prune_remove_unpruned": (lambda L: _prune_module(L).remove(L.nn.Linear(2, 2), "weight"),
                              "has to be pruned before pruning can be removed"),
    "prune_global_not_iterable": (lambda L: _prune_module(L).global_unstructured(
        3, _prune_module(L).L1Unstructured, amount=1), "parameters is not an Iterable"),
    "prune_global_scores_type": (lambda L: _prune_module(L).global_unstructured(
        [(L.nn.Linear(2, 2), "weight")], _prune_module(L).L1Unstructured,
        importance_scores=3, amount=1), "importance_scores must be of type dict"),
    "prune_global_structured": (lambda L: _prune_module(L).global_unstructured(
        [(L.nn.Linear(2, 2), "weight")], _prune_module(L).LnStructured, amount=1, n=2, dim=0),
        'Only "unstructured" PRUNING_TYPE supported'),
    # parametrize
    "parametrize_missing_tensor": (lambda L: _parametrize(L, _Identity(), "nope"),
        "does not have a parameter, a buffer, or a parametrized element"),
    "parametrize_remove_missing": (lambda L: L.nn.utils.parametrize.remove_parametrizations(
        L.nn.Linear(2, 2), "weight"), "does not have a parametrization on weight"),
    "parametrize_not_module": (lambda L: _parametrize(L, lambda L: (lambda x: x)), None),
    # rnn utils
    "pack_lengths_2d": (lambda L: L.nn.utils.rnn.pack_padded_sequence(
        t(L, 3, 2, 1), idx(L, 3, 2).reshape(1, 2)), "'lengths' argument should be a 1D CPU int64"),
    "pack_lengths_count": (lambda L: L.nn.utils.rnn.pack_padded_sequence(
        t(L, 3, 2, 1), idx(L, 3, 2, 1)), "Expected `len(lengths)` to be equal to batch_size"),
    "pack_zero_length": (lambda L: L.nn.utils.rnn.pack_padded_sequence(t(L, 3, 2, 1),
                                                                       idx(L, 3, 0)),
                         "Length of all samples has to be greater than 0"),
    "pack_unsorted": (lambda L: L.nn.utils.rnn.pack_padded_sequence(t(L, 3, 2, 1), idx(L, 2, 3)),
                      "`lengths` array must be sorted in decreasing order"),
    "pad_packed_total_length": (lambda L: L.nn.utils.rnn.pad_packed_sequence(
        L.nn.utils.rnn.pack_padded_sequence(t(L, 3, 2, 1), idx(L, 3, 2)), total_length=2),
        "Expected total_length to be at least the length of the longest sequence"),
    "pad_sequence_not_iterable": (lambda L: L.nn.utils.rnn.pad_sequence(3), None),
    "pad_sequence_empty": (lambda L: L.nn.utils.rnn.pad_sequence([]),
                           "received an empty list of sequences"),
    "pad_sequence_side": (lambda L: L.nn.utils.rnn.pad_sequence([t(L, 2)], padding_side="x"),
                          "Expected padding_side to be one of left or right"),
    "pad_sequence_0d": (lambda L: L.nn.utils.rnn.pad_sequence([t(L)]), None),
    # amp
    "grad_scaler_growth": (lambda L: L.amp.GradScaler("cpu", growth_factor=0.5),
                           "The growth factor must be > 1.0"),
    "grad_scaler_backoff": (lambda L: L.amp.GradScaler("cpu", backoff_factor=2.0),
                            "The backoff factor must be < 1.0"),
    "grad_scaler_scale_type": (lambda L: L.amp.GradScaler("cpu").scale(3),
                               "outputs must be a Tensor or an iterable of Tensors"),
    "grad_scaler_unscale_twice": (_scaler_twice, "unscale_() has already been called"),
    # masked
    "masked_repeated_dims": (lambda L: L.masked.sum(t(L, 2, 3), (0, 0), mask=L.ones(2, 3) > 0),
                             "appears multiple times in the list of dims"),
    "masked_dim_range": (lambda L: L.masked.sum(t(L, 2, 3), 5, mask=L.ones(2, 3) > 0),
                         "Dimension out of range"),
    "masked_mask_shape": (lambda L: L.masked.sum(t(L, 2, 3), 0, mask=L.ones(4, 1) > 0), None),
    "masked_var_correction": (lambda L: L.masked.var(t(L, 2, 3), 0, unbiased=True, correction=1,
                                                     mask=L.ones(2, 3) > 0),
                              "Only one of unbiased and correction may be given"),
    "masked_mean_int": (lambda L: L.masked.mean(idx(L, 1, 2), 0, mask=L.ones(2) > 0),
                        "Could not infer output dtype"),
})


# ------------------------------------------------------------------ conv, random, data, misc
def _data(L):
    import importlib
    return importlib.import_module(L.__name__ + ".utils.data")


def _checkpoint(L, fn, *args, **kw):
    import importlib
    return importlib.import_module(L.__name__ + ".utils.checkpoint").checkpoint(fn, *args, **kw)


CASES.update({
    "conv2d_groups_zero": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3), groups=0),
                           "non-positive groups is not supported"),
    "conv2d_stride_zero": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3), stride=0),
                           "non-positive stride is not supported"),
    "conv2d_negative_padding": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3),
                                                       padding=-1),
                                "negative padding is not supported"),
    "conv2d_dilation_zero": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3),
                                                    dilation=0),
                             "dilation should be greater than zero"),
    "conv2d_groups_weight": (lambda L: fn(L).conv2d(t(L, 1, 4, 4, 4), t(L, 3, 2, 3, 3), groups=2),
                             "expected weight to be divisible by 2"),
    "conv2d_input_dims": (lambda L: fn(L).conv2d(t(L, 4, 4), t(L, 2, 2, 3, 3)),
                          "Expected 3D (unbatched) or 4D (batched) input"),
    "conv2d_too_small": (lambda L: fn(L).conv2d(t(L, 1, 2, 2, 2), t(L, 2, 2, 3, 3)),
                         "Kernel size can't be greater than actual input size"),
    "conv2d_dtypes": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3, dtype="float64")),
                      "expected scalar type Float but found Double"),
    "conv2d_bias_dtype": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3),
                                                 t(L, 2, dtype="float64")),
                          "Input type (float) and bias type (double) should be the same"),
    "conv2d_same_strided": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3),
                                                   padding="same", stride=2),
                            "padding='same' is not supported for strided convolutions"),
    "conv2d_bad_padding_string": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3),
                                                         padding="x"),
                                  "Invalid padding string: 'x'"),
    "conv2d_stride_len": (lambda L: fn(L).conv2d(t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3),
                                                 stride=(1, 1, 1)),
                          "expected stride to be a single integer value or a list of 2 values"),
    "conv_transpose_output_padding": (lambda L: fn(L).conv_transpose2d(
        t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3), output_padding=2),
        "output padding must be smaller than either stride or dilation"),
    "conv_transpose_negative_output_padding": (lambda L: fn(L).conv_transpose2d(
        t(L, 1, 2, 4, 4), t(L, 2, 2, 3, 3), output_padding=-1),
        "negative output_padding is not supported"),
    "conv_transpose_weight": (lambda L: fn(L).conv_transpose2d(t(L, 1, 3, 4, 4),
                                                               t(L, 2, 2, 3, 3)), None),
    "conv_module_groups": (lambda L: L.nn.Conv2d(2, 2, 3, groups=0),
                           "groups must be a positive integer"),
    "conv_module_divisible": (lambda L: L.nn.Conv2d(3, 2, 3, groups=2),
                              "in_channels must be divisible by groups"),
    "conv_module_padding_string": (lambda L: L.nn.Conv2d(2, 2, 3, padding="x"),
                                   "Invalid padding string 'x'"),
    "conv_module_same_strided": (lambda L: L.nn.Conv2d(2, 2, 3, padding="same", stride=2),
                                 "padding='same' is not supported for strided convolutions"),
    "conv_module_padding_mode": (lambda L: L.nn.Conv2d(2, 2, 3, padding_mode="x"),
                                 "padding_mode must be one of"),
    "conv_transpose_module_padding_mode": (lambda L: L.nn.ConvTranspose2d(
        2, 2, 3, padding_mode="reflect"), 'Only "zeros" padding mode is supported'),
    "conv_transpose_output_size": (lambda L: L.nn.ConvTranspose2d(2, 2, 3)(
        t(L, 1, 2, 4, 4), output_size=(1, 2, 3)), None),
    "conv_transpose_output_size_range": (lambda L: L.nn.ConvTranspose2d(2, 2, 3)(
        t(L, 1, 2, 4, 4), output_size=(20, 20)), "requested an output size of"),
    "constant_pad_too_long": (lambda L: fn(L).pad(t(L, 2), (1, 1, 1, 1)),
        "Padding length should be less than or equal to two times the input dimension"),
    "constant_pad_negative": (lambda L: fn(L).pad(t(L, 2), (-2, -1)), None),
    "grid_sample_mode": (lambda L: fn(L).grid_sample(t(L, 1, 1, 2, 2), t(L, 1, 2, 2, 2),
                                                     mode="x"), "expected mode to be 'bilinear'"),
    "grid_sample_padding_mode": (lambda L: fn(L).grid_sample(t(L, 1, 1, 2, 2), t(L, 1, 2, 2, 2),
                                                             padding_mode="x"),
                                 "expected padding_mode to be 'zeros'"),
    "grid_sample_dims": (lambda L: fn(L).grid_sample(t(L, 1, 1, 2, 2), t(L, 1, 2, 2, 2, 3)),
                         None),
    "grid_sample_batch": (lambda L: fn(L).grid_sample(t(L, 1, 1, 2, 2), t(L, 2, 2, 2, 2)),
                          "expected grid and input to have same batch size"),
    "grid_sample_last_dim": (lambda L: fn(L).grid_sample(t(L, 1, 1, 2, 2), t(L, 1, 2, 2, 3)),
                             "expected grid to have size 2 in last dimension"),
    "grid_sample_bicubic_5d": (lambda L: fn(L).grid_sample(t(L, 1, 1, 2, 2, 2),
                                                           t(L, 1, 2, 2, 2, 3), mode="bicubic"),
                               "bicubic interpolation only supports 4D input"),
    "affine_grid_int": (lambda L: fn(L).affine_grid(idx(L, 1, 0, 0, 0, 1, 0).reshape(1, 2, 3),
                                                    (1, 1, 2, 2)),
                        "Expected theta to have floating point type"),
    "affine_grid_shape": (lambda L: fn(L).affine_grid(t(L, 1, 3, 3), (1, 1, 2, 2)),
                          "Expected a batch of 2D affine matrices of shape Nx2x3"),
    "affine_grid_3d_shape": (lambda L: fn(L).affine_grid(t(L, 1, 2, 3), (1, 1, 2, 2, 2)),
                             "Expected a batch of 3D affine matrices of shape Nx3x4"),
    "affine_grid_size": (lambda L: fn(L).affine_grid(t(L, 1, 2, 3), (1, 2, 2)),
                         "affine_grid only supports 4D and 5D sizes"),
    "pdist_3d": (lambda L: fn(L).pdist(t(L, 2, 2, 2)), "pdist only supports 2D tensors, got: 3D"),
    "pdist_negative_p": (lambda L: fn(L).pdist(t(L, 2, 2), p=-1),
                         "pdist only supports non-negative p values"),
    "pdist_int": (lambda L: fn(L).pdist(idx(L, 1, 2, 3, 4).reshape(2, 2)),
                  "pdist only supports floating-point dtypes"),
    # random
    "generator_seed_float": (lambda L: L.Generator().manual_seed(1.5),
                             "manual_seed expected a long"),
    "manual_seed_overflow": (lambda L: L.manual_seed(2 ** 70), "Overflow when unpacking long"),
    "set_rng_state_type": (lambda L: L.set_rng_state(3), None),
    "set_rng_state_size": (lambda L: L.set_rng_state(L.zeros(3, dtype=L.uint8)), None),
    "random_from_out_of_bounds": (lambda L: L.zeros(2, dtype=L.uint8).random_(-1, 5),
                                  "from is out of bounds for unsigned char"),
    "randperm_bool": (lambda L: L.randperm(3, dtype=L.bool),
        "\"randperm\" not implemented for 'Bool'"),
    "randperm_too_big": (lambda L: L.randperm(5000, dtype=L.float16),
                         "n cannot be greater than 2049 for Half type."),
    "bernoulli_int": (lambda L: L.zeros(2, dtype=L.int64).bernoulli_(idx(L, 1, 0)), None),
    "bernoulli_shape": (lambda L: L.zeros(2).bernoulli_(t(L, 3)), None),
    "multinomial_int": (lambda L: L.multinomial(idx(L, 1, 2), 1), None),
    "rand_bad_kwarg": (lambda L: L.rand(2, foo=1), None),
    # data
    "tensor_dataset_sizes": (lambda L: _data(L).TensorDataset(t(L, 2), t(L, 3)),
                             "Size mismatch between tensors"),
    "concat_dataset_empty": (lambda L: _data(L).ConcatDataset([]),
        "datasets should not be an empty"),
    "concat_dataset_index": (lambda L: _data(L).ConcatDataset([[1, 2]])[-5],
                             "absolute value of index should not exceed dataset length"),
    "random_split_fractions": (lambda L: _data(L).random_split(range(4), [1.5, -0.5]), None),
    "random_split_lengths": (lambda L: _data(L).random_split(range(4), [1, 2]),
                             "Sum of input lengths does not equal the length of the input dataset"),
    "random_sampler_replacement": (lambda L: _data(L).RandomSampler(range(4), replacement=1),
                                   "replacement should be a boolean value"),
    "random_sampler_num_samples": (lambda L: _data(L).RandomSampler(range(4), num_samples=0),
                                   "num_samples should be a positive integer value"),
    "weighted_sampler_num_samples": (lambda L: _data(L).WeightedRandomSampler([1.0], 0),
                                     "num_samples should be a positive integer value"),
    "weighted_sampler_replacement": (lambda L: _data(L).WeightedRandomSampler([1.0], 1,
                                                                              replacement=1),
                                     "replacement should be a boolean value"),
    "weighted_sampler_2d": (lambda L: _data(L).WeightedRandomSampler([[1.0]], 1),
                            "weights should be a 1d sequence"),
    "batch_sampler_size": (lambda L: _data(L).BatchSampler(range(4), 0, False),
                           "batch_size should be a positive integer value"),
    "batch_sampler_drop_last": (lambda L: _data(L).BatchSampler(range(4), 2, 1),
                                "drop_last should be a boolean value"),
    "dataloader_sampler_and_shuffle": (lambda L: _data(L).DataLoader(
        range(4), sampler=range(4), shuffle=True), "sampler option is mutually exclusive with"),
    "dataloader_batch_sampler_options": (lambda L: _data(L).DataLoader(
        range(4), batch_sampler=[[0]], batch_size=2), "batch_sampler option is mutually exclusive"),
    "dataloader_timeout": (lambda L: _data(L).DataLoader(range(4), timeout=-1),
                           "timeout option should be non-negative"),
    "dataloader_workers": (lambda L: _data(L).DataLoader(range(4), num_workers=-1),
                           "num_workers option should be non-negative"),
    "dataloader_prefetch": (lambda L: _data(L).DataLoader(range(4), prefetch_factor=2),
                            "prefetch_factor option could only be specified in multiprocessing"),
    "dataloader_persistent": (lambda L: _data(L).DataLoader(range(4), persistent_workers=True),
                              "persistent_workers option needs num_workers > 0"),
    "dataloader_mp_context": (lambda L: _data(L).DataLoader(range(4),
                                                            multiprocessing_context="spawn"),
                              "multiprocessing_context can only be used with multi-process"),
    "dataloader_set_after_init": (lambda L: setattr(_data(L).DataLoader(range(4)),
                                                    "batch_size", 3),
                                  "attribute should not be set after"),
    # checkpoint
    "checkpoint_kwargs": (lambda L: _checkpoint(L, lambda x: x, t(L, 2), use_reentrant=True,
                                                foo=1), "Unexpected keyword arguments: foo"),
    "checkpoint_context_reentrant": (lambda L: _checkpoint(L, lambda x: x, t(L, 2),
                                                           use_reentrant=True, debug=True),
                                     "Passing `context_fn` or `debug` is only supported"),
    "checkpoint_determinism": (lambda L: _checkpoint(L, lambda x: x, t(L, 2), use_reentrant=False,
                                                     determinism_check="x"),
                               "determinism_check should be one of"),
    # storage, testing
    "storage_bad_args": (lambda L: L.UntypedStorage("x"),
                         "tried to construct a storage from a sequence (str)"),
    "storage_index": (lambda L: L.UntypedStorage(4)[9], "out of range for storage of size 4"),
    "storage_step_slice": (lambda L: L.UntypedStorage(4)[::2], "Trying to slice with a step of 2"),
    "storage_index_type": (lambda L: L.UntypedStorage(4)[1.5], "can't index a"),
    "assert_close_rtol_only": (lambda L: L.testing.assert_close(t(L, 2), t(L, 2), rtol=0.1),
                               "Both 'rtol' and 'atol' must be either specified or omitted"),
    "assert_close_types": (lambda L: L.testing.assert_close(t(L, 2), [1.0, 2.0]),
                           "No comparison pair was able to handle inputs of type"),
    "assert_close_none": (lambda L: L.testing.assert_close(None, 1), None),
    "assert_close_lengths": (lambda L: L.testing.assert_close([1.0], [1.0, 2.0]),
                             "The length of the sequences mismatch"),
    "assert_close_scalars": (lambda L: L.testing.assert_close(1.0, 2.0), "Scalars are not close"),
    "assert_close_dtype": (lambda L: L.testing.assert_close(t(L, 2), t(L, 2, dtype="float64")),
                           "The values for attribute 'dtype' do not match"),
    "assert_close_unsupported": (lambda L: L.testing.assert_close(object(), object()),
                                 "No comparison pair was able to handle inputs of type"),
    "make_tensor_low_high": (lambda L: L.testing.make_tensor(2, dtype=L.float32, device="cpu",
                                                             low=2, high=1),
                             "`low` must be less than `high`"),
    "make_tensor_nan": (lambda L: L.testing.make_tensor(2, dtype=L.float32, device="cpu",
                                                        low=float("nan")),
                        "`low` and `high` cannot be NaN"),
    "make_tensor_bool_grad": (lambda L: L.testing.make_tensor(2, dtype=L.bool, device="cpu",
                                                              requires_grad=True),
                              "`requires_grad=True` is not supported for boolean"),
})


# ------------------------------------------------------------------ activations, utils, misc
def _twice_hook(L, register):
    m = L.nn.Linear(3, 2)
    register(L, m)
    register(L, m)


def _spectral(L, m):
    L.nn.utils.spectral_norm(m)


def _weight_norm(L, m):
    L.nn.utils.weight_norm(m)


def _save_to_missing_dir(L):
    L.save(L.ones(2), "/nonexistent_dir_ember_test/x.pt")


CASES.update({
    "hardtanh_bounds": (lambda L: fn(L).hardtanh(t(L, 3), min_val=1.0, max_val=0.0),
                        "min_val cannot be greater than max_val"),
    "glu_odd": (lambda L: fn(L).glu(t(L, 3)), "Halving dimension must be even"),
    "softshrink_negative": (lambda L: fn(L).softshrink(t(L, 3), -1.0),
        "lambda must be in range [0, 3.40282e+38] for input dtype Float, but found -1"),
    "gelu_int": (lambda L: fn(L).gelu(idx(L, 1, 2)), "not implemented for 'Long'"),
    "multi_margin_module_p": (lambda L: L.nn.MultiMarginLoss(p=3),
                              "only p == 1 and p == 2 supported"),
    "multi_margin_module_weight": (lambda L: L.nn.MultiMarginLoss(weight=t(L, 2, 2)), None),
    "huber_module_delta": (lambda L: L.nn.HuberLoss(delta="x")(t(L, 2), t(L, 2)), None),
    "triplet_module_margin": (lambda L: L.nn.TripletMarginWithDistanceLoss(margin=-1.0)(
        t(L, 2, 3), t(L, 2, 3), t(L, 2, 3)), None),
    "parameter_int_grad": (lambda L: L.nn.Parameter(idx(L, 1, 2)),
        "Only Tensors of floating point and complex dtype can require gradients"),
    "uninitialized_parameter_shape": (lambda L: L.nn.parameter.UninitializedParameter().shape,
                                      "Can't access the shape of an uninitialized parameter"),
    "spectral_norm_twice": (lambda L: _twice_hook(L, _spectral),
                            "Cannot register two spectral_norm hooks on the same parameter"),
    "spectral_norm_iterations": (lambda L: L.nn.utils.spectral_norm(L.nn.Linear(2, 2),
                                                                    n_power_iterations=0),
                                 "Expected n_power_iterations to be positive"),
    "spectral_norm_remove_missing": (lambda L: L.nn.utils.remove_spectral_norm(L.nn.Linear(2, 2)),
                                     "spectral_norm of 'weight' not found in"),
    "weight_norm_twice": (lambda L: _twice_hook(L, _weight_norm),
                          "Cannot register two weight_norm hooks on the same parameter"),
    "weight_norm_remove_missing": (lambda L: L.nn.utils.remove_weight_norm(L.nn.Linear(2, 2)),
                                   "weight_norm of 'weight' not found in"),
    "weight_norm_dim": (lambda L: L.nn.utils.weight_norm(L.nn.Linear(2, 2), dim=5),
                        "Dimension out of range"),
    "functional_call_tied_keys": (lambda L: L.func.functional_call(
        L.nn.Linear(2, 2), ({"weight": t(L, 2, 2)}, {"weight": t(L, 2, 2)}), (t(L, 2),)),
        "appeared in multiple dictionaries"),
    "functional_call_bad_key": (lambda L: L.func.functional_call(
        L.nn.Linear(2, 2), {"nope.x": t(L, 2, 2)}, (t(L, 2),)), None),
    "linear_cross_entropy_dims": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 2, 3), t(L, 4, 3), idx(L, 0, 1)), "expected input with dimensionality 1 or 2"),
    "linear_cross_entropy_weight_1d": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 3), idx(L, 0, 1)),
            "expected linear_weight with dimensionality at least 2"),
    "linear_cross_entropy_last_dim": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 5), idx(L, 0, 1)), "expected equal input and linear_weight last"),
    "linear_cross_entropy_bias": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 3), idx(L, 0, 1), linear_bias=t(L, 5)), "expected linear_bias shape"),
    "linear_cross_entropy_smoothing": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 3), idx(L, 0, 1), label_smoothing=2.0),
        "label_smoothing must be between 0.0 and 1.0"),
    "linear_cross_entropy_weight": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 3), idx(L, 0, 1), weight=t(L, 5)),
        "weight tensor should be defined either for all 4 classes or no classes"),
    "linear_cross_entropy_reduction": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 3), idx(L, 0, 1), reduction="x"), "is not a valid value for reduction"),
    "linear_cross_entropy_target_dtype": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 3), t(L, 2)), None),
    "linear_cross_entropy_batch": (lambda L: fn(L).linear_cross_entropy(
        t(L, 2, 3), t(L, 4, 3), idx(L, 0, 1, 2)), None),
    # serialization, ops namespace
    "save_missing_parent": (_save_to_missing_dir, "Parent directory"),
    "save_bad_file": (lambda L: L.save(L.ones(2), 3), None),
    "load_bad_map_location": (lambda L: L.load(__import__("io").BytesIO(_saved(L)),
                                               map_location=3), None),
    "aten_missing_op": (lambda L: L.ops.aten.no_such_op_xyz, None),
    "ops_missing_namespace_attr": (lambda L: L.ops.no_such_namespace_xyz.op, None),
    # linalg / blas kernels
    "dot_dtypes": (lambda L: L.dot(t(L, 2), t(L, 2, dtype="float64")),
                   "dot : expected both vectors to have same dtype"),
    "dot_sizes": (lambda L: L.dot(t(L, 2), t(L, 3)), "inconsistent tensor size"),
    "mm_dtypes": (lambda L: L.mm(t(L, 2, 2), t(L, 2, 2, dtype="float64")),
                  "expected m1 and m2 to have the same dtype"),
    "expand_bad": (lambda L: t(L, 3).expand(2, 4), None),
    "view_as_complex_stride": (lambda L: L.view_as_complex(t(L, 2, 4)[:, :2].t()), None),
    "view_as_complex_last_dim": (lambda L: L.view_as_complex(t(L, 2, 3)), None),
    "view_as_complex_int": (lambda L: L.view_as_complex(idx(L, 1, 2)), None),
    "take_along_dim_dims": (lambda L: L.take_along_dim(t(L, 2, 3), idx(L, 0), dim=1),
                            "input and indices should have the same number of dimensions"),
    "histogramdd_bins": (lambda L: L.histogramdd(t(L, 4, 2), bins=[0, 2]),
                         "bins must be > 0"),
    "bincount_minlength": (lambda L: L.bincount(idx(L, 1, 2), minlength=1.5), None),
    "arange_bool": (lambda L: L.arange(3, dtype=L.bool), None),
    "arange_bad_range": (lambda L: L.arange(0, 5, -1),
                         "upper bound and lower bound inconsistent with step sign"),
    "empty_channels_last_3d": (lambda L: L.empty(2, 3, memory_format=L.channels_last), None),
    "eye_negative": (lambda L: L.eye(-1), "n must be greater or equal to 0, got -1"),
    "unique_zero_dim_other": (lambda L: L.unique(L.empty(0, 3), dim=1), None),
    # backends, hooks
    "backends_preferred_linalg": (lambda L: L.backends.cuda.preferred_linalg_library("x"),
                                  "Unknown input value. Choose from: default, cusolver, magma"),
    "backends_preferred_blas": (lambda L: L.backends.cuda.preferred_blas_library("x"), None),
    "backends_matmul_attr": (lambda L: L.backends.cuda.matmul.no_such_attr, "Unknown attribute"),
})


def _saved(L):
    import io
    buf = io.BytesIO()
    L.save(L.ones(2), buf)
    return buf.getvalue()


# ------------------------------------------------------------------ autograd, gradcheck, creation
def _function(L, backward):
    class F(L.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return backward(L, g)
    return F


def _gradcheck(L, backward, **kw):
    x = L.ones(3, dtype=L.float64, requires_grad=True)
    return L.autograd.gradcheck(_function(L, backward).apply, (x,), **kw)


def _hook_returns(L, value):
    x = L.ones(2, requires_grad=True)
    y = x * 2
    y.register_hook(lambda g: value(L))
    y.sum().backward()


def _unpack_hook_returns(L):
    x = L.ones(2, requires_grad=True)
    with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: 3):
        y = x * x
    y.sum().backward()


def _post_accumulate_non_leaf(L):
    x = L.ones(2, requires_grad=True)
    (x * 2).register_post_accumulate_grad_hook(lambda t: None)


CASES.update({
    "gradcheck_wrong_backward": (lambda L: _gradcheck(L, lambda L, g: g * 3),
                                 "Jacobian mismatch for output 0 with respect to input 0"),
    "gradcheck_wrong_size": (lambda L: _gradcheck(L, lambda L, g: L.ones(4, dtype=L.float64)),
                             None),
    "gradcheck_not_multiplied": (lambda L: _gradcheck(L, lambda L, g: L.full_like(g, 2.0)),
                                 None),
    "gradcheck_float32": (lambda L: L.autograd.gradcheck(lambda x: x * 2,
                                                         (L.ones(2, requires_grad=True),)),
                          None),
    "hook_returns_non_tensor": (lambda L: _hook_returns(L, lambda L: 3), None),
    "hook_returns_wrong_shape": (lambda L: _hook_returns(L, lambda L: L.ones(3)),
                                 "hook '<lambda>' has changed the size of value"),
    "unpack_hook_non_tensor": (_unpack_hook_returns,
                               "Output of saved tensor unpack_hook expected to be a Tensor"),
    "post_accumulate_non_leaf": (_post_accumulate_non_leaf,
                                 "post accumulate grad hooks cannot be registered on non-leaf"),
    "gradient_edge_no_grad": (lambda L: L.autograd.graph.get_gradient_edge(L.ones(2)),
                              "It is not possible to get the gradient edge for a Tensor"),
    "function_backward_too_many": (lambda L: _function(L, lambda L, g: (g, g)).apply(
        L.ones(2, requires_grad=True)).sum().backward(),
        "function FBackward returned an incorrect number of gradients (expected 1, got 2)"),
    "function_backward_wrong_type": (lambda L: _function(L, lambda L, g: 3).apply(
        L.ones(2, requires_grad=True)).sum().backward(), None),
    "tensor_from_numpy_object": (lambda L: L.from_numpy(np.array([object()])),
                                 "can't convert np.ndarray of type numpy.object_"),
    "tensor_overflow_long": (lambda L: L.tensor([2 ** 64]), None),
    "tensor_complex_into_float": (lambda L: L.tensor(1 + 2j, dtype=L.float32), None),
    "full_int8_float_overflow": (lambda L: L.full((1,), 1e10, dtype=L.int8), None),
    "tensor_bad_object": (lambda L: L.tensor([object()]), None),
})


# ------------------------------------------------------------------ losses, norms, attention (2)
def _mha(L, *args, **kw):
    """multi_head_attention_forward with (L=2, N=1, E=4, 2 heads) defaults."""
    q = t(L, 2, 1, 4)
    base = dict(query=q, key=q, value=q, embed_dim_to_check=4, num_heads=2,
                in_proj_weight=t(L, 12, 4), in_proj_bias=t(L, 12), bias_k=None, bias_v=None,
                add_zero_attn=False, dropout_p=0.0, out_proj_weight=t(L, 4, 4),
                out_proj_bias=t(L, 4))
    base.update(kw)
    return fn(L).multi_head_attention_forward(**base)


CASES.update({
    "nll_1d_target_size": (lambda L: fn(L).nll_loss(t(L, 3), idx(L, 0, 1)),
                           "For 1D input, 1D target must have size 1"),
    "nll_weight_dtype": (lambda L: fn(L).nll_loss(t(L, 2, 3), idx(L, 0, 1),
                                                  weight=t(L, 3, dtype="float64")), None),
    "nll_0d_target_out_of_bounds": (lambda L: fn(L).nll_loss(t(L, 3), idx(L, 5)[0]),
                                    "out of bounds"),
    "cross_entropy_0d_input": (lambda L: fn(L).cross_entropy(t(L), idx(L, 0)[0]), None),
    "bce_target_dtype": (lambda L: fn(L).binary_cross_entropy(t(L, 3), t(L, 3, dtype="float64")),
                         "Found dtype Double but expected Float"),
    "bce_weight_shape": (lambda L: fn(L).binary_cross_entropy(t(L, 3), t(L, 3), weight=t(L, 2)),
                         None),
    "bce_logits_int": (lambda L: fn(L).binary_cross_entropy_with_logits(idx(L, 1, 2),
                                                                        idx(L, 1, 2)),
                       "\"log_sigmoid_cpu\" not implemented for 'Long'"),
    "bce_logits_int_target": (lambda L: fn(L).binary_cross_entropy_with_logits(t(L, 2),
                                                                               idx(L, 1, 2)),
                              "result type Float can't be cast to the desired output type Long"),
    "l1_loss_int": (lambda L: fn(L).l1_loss(idx(L, 1, 2), idx(L, 1, 2)), None),
    "multilabel_soft_margin_0d": (lambda L: fn(L).multilabel_soft_margin_loss(t(L), t(L)),
                                  "Dimension specified as -1 but tensor has no dimensions"),
    "multi_margin_weight_dtype": (lambda L: fn(L).multi_margin_loss(
        t(L, 2, 3), idx(L, 0, 1), weight=t(L, 3, dtype="float64")), None),
    "cosine_embedding_dims3": (lambda L: fn(L).cosine_embedding_loss(
        t(L, 2, 3), t(L, 2, 3, 1), t(L, 2)), None),
    "gaussian_nll_var_negative_scalar": (lambda L: fn(L).gaussian_nll_loss(
        t(L, 3), t(L, 3), -t(L, 1)), "var has negative entry"),
    "ctc_negative_length": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                     idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                     idx(L, 5, 5), idx(L, -1, 2)),
                            "to have value at least 0"),
    "ctc_targets_too_short": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                       idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                       idx(L, 5, 5), idx(L, 3, 2)), None),
    "ctc_concatenated_size": (lambda L: fn(L).ctc_loss(t(L, 5, 2, 4).log_softmax(2),
                                                       idx(L, 1, 2, 1), idx(L, 5, 5),
                                                       idx(L, 2, 2)),
                              "Expected tensor to have size 4 at dimension 0"),
    "ctc_int_log_probs": (lambda L: fn(L).ctc_loss(idx(L, *range(40)).reshape(5, 2, 4),
                                                   idx(L, 1, 2, 1, 2).reshape(2, 2),
                                                   idx(L, 5, 5), idx(L, 2, 2)), None),
    "batch_norm_eps_negative": (lambda L: fn(L).batch_norm(t(L, 2, 3), t(L, 3), t(L, 3),
                                                           eps=-1.0), None),
    "batch_norm_one_stat": (lambda L: fn(L).batch_norm(t(L, 2, 3), t(L, 3), None), None),
    "batch_norm_int": (lambda L: fn(L).batch_norm(idx(L, 1, 2, 3, 4).reshape(2, 2), t(L, 2),
                                                  t(L, 2)), None),
    "instance_norm_no_stats_eval": (lambda L: fn(L).instance_norm(t(L, 2, 3, 4),
                                                                  use_input_stats=False),
                                    "Expected running_mean and running_var to be defined"),
    "layer_norm_empty_shape": (lambda L: fn(L).layer_norm(t(L, 2, 3), ()),
                               "Expected normalized_shape to be at least 1-dimensional"),
    "layer_norm_mixed_dtype": (lambda L: fn(L).layer_norm(t(L, 2, 3), (3,),
                                                          weight=t(L, 3, dtype="float64")),
                               "mixed dtype (CPU): expect parameter to have scalar type of Float"),
    "layer_norm_double_float": (lambda L: fn(L).layer_norm(t(L, 2, 3, dtype="float64"), (3,),
                                                           bias=t(L, 3)),
                                "mixed dtype (CPU): all inputs must share same datatype."),
    "group_norm_weight_size": (lambda L: fn(L).group_norm(t(L, 2, 4), 2, weight=t(L, 3)), None),
    "mha_embed_not_divisible": (lambda L: _mha(L, num_heads=3), None),
    "mha_in_proj_none": (lambda L: _mha(L, in_proj_weight=None),
                         "use_separate_proj_weight is False but in_proj_weight is None"),
    "mha_separate_none": (lambda L: _mha(L, use_separate_proj_weight=True, q_proj_weight=None,
                                         k_proj_weight=t(L, 4, 4), v_proj_weight=t(L, 4, 4)),
                          "use_separate_proj_weight is True but q_proj_weight is None"),
    "mha_bias_k_only": (lambda L: _mha(L, bias_k=t(L, 1, 1, 4)),
                        "bias_k is set but bias_v is None"),
    "mha_bias_v_only": (lambda L: _mha(L, bias_v=t(L, 1, 1, 4)),
                        "bias_v is set but bias_k is None"),
    "mha_mask_3d_shape": (lambda L: _mha(L, attn_mask=t(L, 3, 2, 2)),
                          "The shape of the 3D attn_mask is"),
    "mha_mask_1d": (lambda L: _mha(L, attn_mask=t(L, 2)), None),
    "mha_static_k_batch": (lambda L: _mha(L, static_k=t(L, 3, 2, 2)),
                           "expecting static_k.size(0) of 2"),
    "mha_static_k_head_dim": (lambda L: _mha(L, static_k=t(L, 2, 2, 3)),
                              "expecting static_k.size(2) of 2"),
    "mha_padding_mask_dims": (lambda L: _mha(L, key_padding_mask=L.zeros(1, 2, 2,
                                                                        dtype=L.bool)), None),
    "mha_unbatched_mask": (lambda L: _mha(L, query=t(L, 2, 4), key=t(L, 2, 4), value=t(L, 2, 4),
                                          attn_mask=t(L, 1, 1, 2, 2)), None),
    "mha_in_proj_bias_shape": (lambda L: _mha(L, in_proj_bias=t(L, 5)), None),
    "mha_separate_weight_shape": (lambda L: _mha(L, use_separate_proj_weight=True,
                                                 q_proj_weight=t(L, 4, 3),
                                                 k_proj_weight=t(L, 4, 4),
                                                 v_proj_weight=t(L, 4, 4)), None),
})


# ------------------------------------------------------------------ parametrize, module hooks
def _param_with(L, right_inverse=None, forward=None, unsafe=False):
    """register_parametrization of a module whose forward/right_inverse are given."""
    class P(L.nn.Module):
        def forward(self, x):
            return x if forward is None else forward(L, x)
    if right_inverse is not None:
        P.right_inverse = lambda self, x: right_inverse(L, x)
    m = L.nn.Linear(2, 2)
    L.nn.utils.parametrize.register_parametrization(m, "weight", P(), unsafe=unsafe)
    return m.weight


def _pre_hook_returns(L, value):
    m = L.nn.Linear(2, 2)
    m.register_forward_pre_hook(lambda mod, args: value)
    m(t(L, 1, 2))


def _no_init_assign(L, value):
    class M(L.nn.Module):
        def __init__(self):
            self.p = value(L)
    M()


CASES.update({
    "parametrize_right_inverse_type": (lambda L: _param_with(L, right_inverse=lambda L, x: 3),
                                       "'right_inverse' must return a Tensor or a Sequence"),
    "parametrize_right_inverse_shape": (lambda L: _param_with(
        L, right_inverse=lambda L, x: x[:1]),
        "Registering a parametrization may not change the shape"),
    "parametrize_right_inverse_dtype": (lambda L: _param_with(
        L, right_inverse=lambda L, x: x.double()), None),
    "parametrize_forward_shape": (lambda L: _param_with(L, forward=lambda L, x: x[:1]),
                                  "Registering a parametrization may not change the shape"),
    "parametrize_forward_dtype": (lambda L: _param_with(L, forward=lambda L, x: x.double()),
                                  "Registering a parametrization may not change the dtype"),
    "parametrize_forward_non_tensor": (lambda L: _param_with(L, forward=lambda L, x: 3), None),
    "parametrize_right_inverse_list": (lambda L: _param_with(
        L, right_inverse=lambda L, x: [x, 3]), None),
    "module_pre_hook_bad_return": (lambda L: _pre_hook_returns(L, 3),
                                   "linear(): argument 'input' (position 1) must be Tensor"),
    "module_assign_param_before_init": (lambda L: _no_init_assign(
        L, lambda L: L.nn.Parameter(L.ones(1))),
        "cannot assign parameters before Module.__init__() call"),
    "module_assign_module_before_init": (lambda L: _no_init_assign(L, lambda L: L.nn.ReLU()),
                                         "cannot assign module before Module.__init__() call"),
    "module_assign_buffer_type": (lambda L: setattr(
        (lambda m: (m.register_buffer("b", L.ones(1)), m)[1])(L.nn.Linear(2, 2)), "b", 3),
        "cannot assign 'int' as buffer 'b'"),
    "module_to_bad_args": (lambda L: L.nn.Linear(2, 2).to("cpu", "x"), None),
    "module_to_bad_kwarg": (lambda L: L.nn.Linear(2, 2).to(foo=1), None),
    "module_set_submodule_missing_parent": (lambda L: L.nn.Sequential(L.nn.ReLU()).set_submodule(
        "x.y", L.nn.ReLU()), "has no attribute `x`"),
})


def _outcome(call, lib):
    try:
        call(lib)
    except Exception as e:       # noqa: BLE001 - the class is what is compared
        return type(e), str(e)
    return None, None


_BASES = (IndexError, ValueError, TypeError, NotImplementedError, RuntimeError, KeyError,
          AttributeError, AssertionError, OverflowError)


@pytest.mark.parametrize("name", sorted(CASES))
def test_error_path_matches_torch(name):
    """Same exception class as torch; the fragment (the fault) in both messages."""
    call, fragment = CASES[name]
    t_cls, t_msg = _outcome(call, torch)
    e_cls, e_msg = _outcome(call, ember)
    assert t_cls is not None, "torch accepts this call"
    assert e_cls is not None, f"ember accepts what torch refuses with {t_cls.__name__}: {t_msg}"
    base = next(c for c in _BASES if issubclass(t_cls, c))
    assert issubclass(e_cls, base), (e_cls, e_msg, t_cls, t_msg)
    if fragment is not None:
        assert fragment in t_msg, ("torch", t_msg)
        assert fragment in e_msg, ("ember", e_msg, "torch:", t_msg)
