"""One wrong answer, then the solution's own lines after it (issue 22, item 1): every later right
answer is a pass or ``upstream``, never ``wrong`` and never the first mistake's own word. Walked at
every checked answer of notebooks 03 and 05, with several kinds of slip at each."""

from __future__ import annotations

import pytest

from tests.cascade import Walk, spoils

pytestmark = pytest.mark.slow  # the notebooks walked answer by answer

# A wrong operand where the rule's other factor belongs, written for answers where a learner
# plausibly makes it (the forward input replaced by a gradient or by a neighbouring tensor).
OPERANDS = {
    "03-makemore-backprop": {
        "dcounts_sum_inv": "dcounts_sum_inv = (probs * dprobs).sum(1, keepdim=True)",
        "dW2": "dW2 = dh.T @ dlogits",
        "dbngain": "dbngain = (bndiff * dhpreact).sum(0, keepdim=True)",
        "dbnraw": "dbnraw = bnbias * dhpreact",
        "dbnvar_inv": "dbnvar_inv = (bnraw * dbnraw).sum(0, keepdim=True)",
        "dW1": "dW1 = dembcat.T @ dhprebn",
    },
    "05-transformer-backprop": {
        "dW_head": "dW_head = dlnf.reshape(-1, C).T @ dlogits.reshape(-1, vocab_size)",
        "dlnf_hat": "dlnf_hat = lnf_b * dlnf",
        "dW_fc": "dW_fc = dln2.reshape(-1, C).T @ dh_pre.reshape(-1, 4 * C)",
        "dv": "dv = datt_probs.transpose(-2, -1) @ dy",
        "dq": "dq = (datt * scale) @ q",
    },
}
LAST = {"03-makemore-backprop": "hprebn (fused)", "05-transformer-backprop": "v (fused)"}


@pytest.mark.parametrize("notebook", sorted(LAST))
def test_a_right_answer_after_a_wrong_one_is_never_called_wrong(notebook):
    walk = Walk(notebook, LAST[notebook])
    assert all(o.ok for o in walk.run()), "the solution itself must pass every check"
    said, seen = [], set()
    for answer, (check, tensor, n_uses) in walk.answers().items():
        extra = {"operand": OPERANDS[notebook][answer]} if answer in OPERANDS[notebook] else {}
        for spoil in spoils(answer, tensor, n_uses, extra):
            got = walk.run(spoil)
            own = next(o for o in got if o.name == check)
            seen.add(spoil.kind)
            if own.ok:  # a slip on a gradient that is all but zero (03's db1): nothing to trace
                continue
            said += [
                f"{spoil} ({own.mistake}): {o.name} said {o.mistake}: {o.hint}"
                for o in got
                if o is not own and not o.ok and o.mistake != "upstream"
            ]
    assert seen == {"sign", "factor", "missing-path", "operand"}
    assert said == []


def test_upstream_names_the_first_wrong_answer():
    walk = Walk("03-makemore-backprop", "hprebn (fused)")
    (spoil,) = [s for s in spoils("dcounts", "counts", 2) if s.kind == "missing-path"]
    got = {o.name: o for o in walk.run(spoil)}
    assert got["counts"].mistake == "missing-path"
    assert got["norm_logits"].hint.startswith("your step is right given your `dcounts`, which is")
    for name in ("h", "W2", "bngain", "bnraw", "bnvar", "bndiff2", "hprebn", "W1", "C"):
        assert got[name].mistake == "upstream", (name, got[name].hint)
        assert "because of your `dcounts`: fix `dcounts` first" in got[name].hint, got[name].hint
    assert got["hprebn (fused)"].mistake == "upstream"
