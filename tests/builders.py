"""Small stand-ins that several test files build their inputs from."""

from __future__ import annotations


class Value:
    """micrograd's Value, as little of it as the drawing of a Value graph reads."""

    def __init__(self, data, children=(), op="", label=""):
        self.data, self.grad = data, 0.0
        self._prev, self._op, self.label = tuple(children), op, label

    def __add__(self, other):
        return Value(self.data + other.data, (self, other), "+")

    def __mul__(self, other):
        return Value(self.data * other.data, (self, other), "*")
