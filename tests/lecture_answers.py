"""The lecture's own answers for every placeholder of notebook 03, verbatim.

Source: Andrej Karpathy, "Building makemore Part 4: Becoming a Backprop Ninja", the solved notebook
``lectures/makemore/makemore_part4_backprop.ipynb`` in the repository karpathy/nn-zero-to-hero
(https://github.com/karpathy/nn-zero-to-hero, MIT licence, Copyright (c) 2022 Andrej Karpathy), read
at commit 00cb06c29ec3a4f5090404aabf67d148be62d581.

``LECTURE`` maps the id of each code cell of ``notebooks/03-makemore-backprop.ipynb`` that holds
placeholders to the lecture's lines that replace that cell's block of ``dX = ...  # TODO`` lines
(the cell's placeholders are one contiguous block in every cell). Every line is the lecture's,
character for character: its spacing, its ``dC[ix] += ...`` double loop with two-space indentation,
its in-place ``+=``, ``-=``, ``/=`` and its forms whose shape differs from ours
(``dbnmeani = (-dbndiff).sum(0)`` is (64,) where ``bnmeani`` is (1, 64)). Nothing was rewritten;
only whole lines were placed, as follows.

Exercise 1 (the lecture's cell "Exercise 1: backprop through the whole thing manually"). The lecture
writes it as one cell; ours asks for the same names in 18 cells, in the lecture's order, each
followed by its checks. Three of the lecture's statements stand earlier than the cell of ours that
asks for their name, so they were moved down to that cell (each is a name's first assignment and
nothing between uses it, so the values are the lecture's):

- ``dcounts = counts_sum_inv * dprobs`` stands before ``dcounts_sum = ...`` in the lecture; it goes
  to our ``dcounts`` cell, before the lecture's
  ``dcounts += torch.ones_like(counts) * dcounts_sum``.
- ``dlogits = dnorm_logits.clone()`` stands before ``dlogit_maxes = ...``; it goes to our
  ``dlogits`` cell, before ``dlogits += F.one_hot(...) * dlogit_maxes``.
- ``dbndiff = bnvar_inv * dbnraw`` stands before ``dbnvar_inv = ...``; it goes to our ``dbndiff``
  cell, before ``dbndiff += (2*bndiff) * dbndiff2``.

Within a cell the lecture's order is kept: our ``dbnmeani``/``dhprebn`` cell gets
``dhprebn = dbndiff.clone()``, ``dbnmeani = (-dbndiff).sum(0)``, ``dhprebn += ...`` in that order
although its placeholders name ``dbnmeani`` first. The double loop for ``dC`` assigns ``ix``,
overwriting the notebook's global minibatch indices ``ix`` (as in the lecture; no later cell reads
that ``ix`` before assigning it again). The blank line with trailing spaces that ends the lecture's
block is left out.

Exercises 2 and 3: the lecture's backward-pass cells, their answer lines only.

Exercise 4: the lecture's training loop has its own backward pass
("manual backprop! #swole_doge_meme"); its lines from ``dlogits = F.softmax(logits, 1)`` to the
``dC`` loop, comments included, replace the placeholders of our ``step(net, Xb, Yb)``. They stand at
four spaces in the lecture (inside ``with`` and ``for``), which is the indentation of the body of
``step()``. Left out: the lecture's ``grads = [dC, dW1, db1, dW2, db2, dbngain, dbnbias]``, which
our ``step()`` already has after the placeholders, in the same order.

Names: the lecture's names for every gradient and every forward tensor these lines read are ours.
The one name that differs is the batch mean in exercise 4's forward pass (lecture ``bnmean``, our
``step()`` ``bnmeani``); the lecture's backward lines do not read it, nor ``bndiff`` (which our
``step()`` does not define), so no name had to be mapped and no adapter line was needed. Everything
else they read is defined in ``step()``: ``C, W1, b1, W2, b2, bngain, bnbias`` (from ``net``),
``n = Xb.shape[0]``, ``Xb, Yb``, ``emb, embcat, hprebn, bnvar_inv, bnraw, h, logits``.
"""

from __future__ import annotations

LECTURE: dict[str, list[str]] = {
    # ---------------------------------------------------------------- exercise 1
    "ce5e137d": [  # dlogprobs
        "dlogprobs = torch.zeros_like(logprobs)",
        "dlogprobs[range(n), Yb] = -1.0/n",
    ],
    "e7129945": [  # dprobs
        "dprobs = (1.0 / probs) * dlogprobs",
    ],
    "e77ccebf": [  # dcounts_sum_inv
        "dcounts_sum_inv = (counts * dprobs).sum(1, keepdim=True)",
    ],
    "8e44e9ab": [  # dcounts_sum (the lecture's first dcounts line, before it: see a716a346)
        "dcounts_sum = (-counts_sum**-2) * dcounts_sum_inv",
    ],
    "a716a346": [  # dcounts
        "dcounts = counts_sum_inv * dprobs",  # moved here from before dcounts_sum
        "dcounts += torch.ones_like(counts) * dcounts_sum",
    ],
    "82069340": [  # dnorm_logits
        "dnorm_logits = counts * dcounts",
    ],
    "51d2cdb6": [  # dlogit_maxes (the lecture's dlogits clone, before it: see 9c079ee5)
        "dlogit_maxes = (-dnorm_logits).sum(1, keepdim=True)",
    ],
    "9c079ee5": [  # dlogits
        "dlogits = dnorm_logits.clone()",  # moved here from before dlogit_maxes
        "dlogits += F.one_hot(logits.max(1).indices, num_classes=logits.shape[1]) * dlogit_maxes",
    ],
    "8b93f0d5": [  # dh, dW2, db2
        "dh = dlogits @ W2.T",
        "dW2 = h.T @ dlogits",
        "db2 = dlogits.sum(0)",
    ],
    "ac005a81": [  # dhpreact
        "dhpreact = (1.0 - h**2) * dh",
    ],
    "098b1cf7": [  # dbngain, dbnraw, dbnbias (the first dbndiff line, next: see f04750df)
        "dbngain = (bnraw * dhpreact).sum(0, keepdim=True)",
        "dbnraw = bngain * dhpreact",
        "dbnbias = dhpreact.sum(0, keepdim=True)",
    ],
    "c9d13940": [  # dbnvar_inv
        "dbnvar_inv = (bndiff * dbnraw).sum(0, keepdim=True)",
    ],
    "baabf967": [  # dbnvar
        "dbnvar = (-0.5*(bnvar + 1e-5)**-1.5) * dbnvar_inv",
    ],
    "07640227": [  # dbndiff2
        "dbndiff2 = (1.0/(n-1))*torch.ones_like(bndiff2) * dbnvar",
    ],
    "f04750df": [  # dbndiff
        "dbndiff = bnvar_inv * dbnraw",  # moved here from after dbnbias
        "dbndiff += (2*bndiff) * dbndiff2",
    ],
    "dc3ea34d": [  # dbnmeani, dhprebn: the lecture's order
        "dhprebn = dbndiff.clone()",
        "dbnmeani = (-dbndiff).sum(0)",
        "dhprebn += 1.0/n * (torch.ones_like(hprebn) * dbnmeani)",
    ],
    "09cec0e1": [  # dembcat, dW1, db1
        "dembcat = dhprebn @ W1.T",
        "dW1 = embcat.T @ dhprebn",
        "db1 = dhprebn.sum(0)",
    ],
    "075b6cd8": [  # demb, dC
        "demb = dembcat.view(emb.shape)",
        "dC = torch.zeros_like(C)",
        "for k in range(Xb.shape[0]):",
        "  for j in range(Xb.shape[1]):",
        "    ix = Xb[k,j]",
        "    dC[ix] += demb[k,j]",
    ],
    # ---------------------------------------------------------------- exercise 2
    "62efff3c": [  # dlogits, fused
        "dlogits = F.softmax(logits, 1)",
        "dlogits[range(n), Yb] -= 1",
        "dlogits /= n",
    ],
    # ---------------------------------------------------------------- exercise 3
    "cd16bda0": [  # dhprebn, fused
        "dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))",  # noqa: E501
    ],
    # ---------------------------------------------------------- exercise 4: the body of step()
    "74946a71": [
        "    dlogits = F.softmax(logits, 1)",
        "    dlogits[range(n), Yb] -= 1",
        "    dlogits /= n",
        "    # 2nd layer backprop",
        "    dh = dlogits @ W2.T",
        "    dW2 = h.T @ dlogits",
        "    db2 = dlogits.sum(0)",
        "    # tanh",
        "    dhpreact = (1.0 - h**2) * dh",
        "    # batchnorm backprop",
        "    dbngain = (bnraw * dhpreact).sum(0, keepdim=True)",
        "    dbnbias = dhpreact.sum(0, keepdim=True)",
        "    dhprebn = bngain*bnvar_inv/n * (n*dhpreact - dhpreact.sum(0) - n/(n-1)*bnraw*(dhpreact*bnraw).sum(0))",  # noqa: E501
        "    # 1st layer",
        "    dembcat = dhprebn @ W1.T",
        "    dW1 = embcat.T @ dhprebn",
        "    db1 = dhprebn.sum(0)",
        "    # embedding",
        "    demb = dembcat.view(emb.shape)",
        "    dC = torch.zeros_like(C)",
        "    for k in range(Xb.shape[0]):",
        "      for j in range(Xb.shape[1]):",
        "        ix = Xb[k,j]",
        "        dC[ix] += demb[k,j]",
        # the lecture's next line, grads = [dC, dW1, ...], is in step() already
    ],
}
