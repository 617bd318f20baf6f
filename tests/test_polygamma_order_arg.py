"""polygamma's order ``n`` is an int in torch's parser: a float or bool is its TypeError,
for the function, the method, the in-place method and torch.special's."""
import pytest

import ember

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("n", [1.5, 2.0, True])
def test_polygamma_refuses_a_non_int_order(n):
    for lib in (ember, torch):
        x = lib.rand(3)
        calls = [(lambda: lib.polygamma(n, x), "polygamma"),
                 (lambda: x.polygamma(n), "polygamma"),
                 (lambda: x.clone().polygamma_(n), "polygamma_"),
                 (lambda: lib.special.polygamma(n, x), "special_polygamma")]
        for call, name in calls:
            with pytest.raises(TypeError) as e:
                call()
            assert str(e.value) == (f"{name}(): argument 'n' (position 1) must be int, not "
                                    f"{type(n).__name__}")


def test_polygamma_int_order_unchanged():
    x = [0.3, 1.7, 4.0]
    got = ember.special.polygamma(2, ember.tensor(x, dtype=ember.float64))
    want = torch.special.polygamma(2, torch.tensor(x, dtype=torch.float64))
    assert got.tolist() == pytest.approx(want.tolist(), rel=1e-12)
    assert ember.polygamma(1, ember.tensor(x, dtype=ember.float64)).tolist() == pytest.approx(
        torch.polygamma(1, torch.tensor(x, dtype=torch.float64)).tolist(), rel=1e-8)  # (SciPy vs torch's series)
