"""Rendering, in one place: the HTML helpers (:mod:`~checks.render.html`: colours, escaping,
numbers, code in backticks), the network map (:mod:`~checks.render.draw`) and the heatmap of a
wrong answer (:mod:`~checks.render.heatmap`). Pure Python, inline styles only, and nothing here
imports the checks themselves: a check's data comes in, text comes out."""
