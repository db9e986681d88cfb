"""The Dirichlet output transform used inside decoding/rollouts draws only from its generator."""
import numpy as np
import torch

from core.defenses.dirichlet import torch_output_transform


def test_a_draw_is_fixed_by_its_generator_not_by_the_global_rng():
    lp = torch.log_softmax(torch.randn(4, 50, generator=torch.Generator().manual_seed(3)), -1)
    outs = []
    for global_seed in (1, 2):
        torch.manual_seed(global_seed)
        outs.append(torch_output_transform(1.0, 1e-6, torch.Generator().manual_seed(0))(lp))
    assert torch.equal(outs[0], outs[1])
    other = torch_output_transform(1.0, 1e-6, torch.Generator().manual_seed(1))(lp)
    assert not torch.equal(outs[0], other)


def test_transform_samples_have_mean_p():
    p = torch.tensor([[0.6, 0.3, 0.1]], dtype=torch.float64)
    t = torch_output_transform(2.0, 1e-6, torch.Generator().manual_seed(0))
    x = torch.cat([t(p.log()).exp() for _ in range(4000)])
    np.testing.assert_allclose(x.mean(0).numpy(), p[0].numpy(), atol=0.02)
    assert torch.allclose(x.sum(1), torch.ones(4000, dtype=torch.float64))
