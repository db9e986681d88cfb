"""The CPU attack ensemble's hand-written parts (core/attacks/attack_ensemble.py): Adam run on the flat
tensors must be torch.optim.Adam's update bit for bit, the ReLU mask must multiply exactly as the bool mask did,
and the MLP bank's gradients, written into the flat gradient, must be autograd's (up to float rounding)."""
import numpy as np
import torch

from core.attacks.attack_ensemble import FitMember, _FlatParameters, _MLPBank, _relu_mask
from core.models.attack import AttackMLP


def test_relu_mask_multiplies_as_the_bool_mask_bit_for_bit():
    """Wherever the pre-activation is a number (a NaN one makes the whole step's gradients NaN either way)."""
    pre = torch.tensor([[1.5, 0.0, -0.0, -2.0, 3e-38, -3e-38, float("-inf"), float("inf")]])
    grad = torch.tensor([[-1.0, -2.0, 3.0, -4.0, -5.0, 6.0, 7.0, float("nan")]])
    old = grad * (pre > 0)
    new = grad.clone().mul_(_relu_mask(pre))
    assert torch.equal(old.view(torch.int32), new.view(torch.int32))  # the signs of zeros too


def test_flat_adam_step_is_torch_adams_bit_for_bit():
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(7))]
    reference = torch.nn.Parameter(torch.cat([p.detach().reshape(-1) for p in params]))
    flat = _FlatParameters(params, lr=3e-3)
    adam = torch.optim.Adam([reference], lr=3e-3, foreach=True)
    for step in range(40):
        grad = None if step in (3, 4, 17) else torch.randn(reference.shape) * 10.0 ** (step % 5 - 2)
        reference.grad = None if grad is None else grad.clone()
        adam.step()
        if grad is not None:
            for p, g in zip(params, grad.split([p.numel() for p in params])):
                p.grad = g.view_as(p).clone()
        flat.gather_gradients()
        assert (flat.flat.grad is None) == (grad is None)
        flat.adam_step()
        assert torch.equal(flat.flat.detach(), reference.detach()), step
    assert torch.equal(torch.cat([p.detach().reshape(-1) for p in params]), reference.detach())  # views of the flat


def test_hand_written_gradients_land_in_the_flat_gradient_as_autograds():
    torch.manual_seed(1)
    rng = np.random.default_rng(1)
    members = [FitMember(AttackMLP(f, 16), torch.randn(50, 1, f), torch.ones(50), rng.random(50) > 0.5, 1, 20, 1e-3, 0)
               for f in (3, 7, 5)]  # different widths: inputs zero-padded to the widest
    bank = _MLPBank(members, torch.device("cpu"))
    at = torch.as_tensor(rng.permutation(50)[:20])
    bank.loss(at, at).backward()
    expected = {name: p.grad.clone() for name, p in bank.module.named_parameters()}
    for p in bank.module.parameters():
        p.grad = None
    flat = _FlatParameters(list(bank.module.parameters()), lr=1e-3)
    bank.gradients(at, at, flat.gradient_of)
    flat.gather_gradients()
    assert flat.flat.grad is flat.buffer
    start = 0
    for name, p in bank.module.named_parameters():
        got = flat.buffer[start : start + p.numel()].view_as(p)
        torch.testing.assert_close(got, expected[name], rtol=1e-5, atol=1e-7, msg=name)
        start += p.numel()
    assert all(p.grad is None for p in bank.module.parameters())
