"""Notebook 02 (tensor backprop) filled in as a learner would: one answer per placeholder,
written independently of the solution blocks."""

from __future__ import annotations

from checks.authoring.student import ROOT

NAME = "02-tensor-backprop.ipynb"


SOLUTION = ROOT / "solutions" / NAME


STUDENT = ROOT / "notebooks" / NAME


# One line per placeholder, written independently of the solution blocks (in the order the
# placeholders appear). Each answer uses only the given tensors, so that one wrong answer below
# cannot spoil the checks after it.
ANSWERS = {
    "dY": ["dD * 1.0"],
    "ds": ["-(dD.sum(dim=1, keepdim=True))"],
    "dX": ["(-dD.sum(1, keepdim=True)).expand(X.shape)"],
    "dZ": ["(Z == zmax).to(Z.dtype) * dzmax"],
    "dW11": ["a1 * dN1 + a3 * dN3"],
    "dW12": ["a1 * dN2 + a3 * dN4"],
    "dW21": ["a2 * dN1 + a4 * dN3"],
    "dW22": ["a2 * dN2 + a4 * dN4"],
    "da1": ["W11 * dN1 + W12 * dN2"],
    "da2": ["W21 * dN1 + W22 * dN2"],
    "da3": ["W11 * dN3 + W12 * dN4"],
    "da4": ["W21 * dN3 + W22 * dN4"],
    "db1": ["dN1 + dN3"],
    "db2": ["dN2 + dN4"],
    "dW": ["torch.einsum('si,sj->ij', A.detach(), dN)", "A.detach().t() @ dN"],
    "dA": ["torch.einsum('sj,ij->si', dN, W.detach())", "dN @ W.detach().t()"],
    "db": ["dN.sum(dim=0).unsqueeze(0)", "dN.sum(dim=0).unsqueeze(0)"],
    "dvmax": ["-(dU.sum(1, keepdim=True))"],
    "dV": ["dU - (V == vmax) * dU.sum(1, keepdim=True)"],
}
