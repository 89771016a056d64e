"""Grading a class: a pipeline of small stages, one module each, in the order a run takes them.

1. :mod:`~checks.grading.exercise`: load the instructor's solution (an exercise cut into answer
   cells) and read what each submission holds for each answer cell.
2. :mod:`~checks.grading.assemble`: the grading notebook, the instructor's cells with the learner's
   answer cells in place of the solutions and the grader's cells around them.
3. :mod:`~checks.grading.run`: that notebook under pytest and nbval in the sandbox
   (:mod:`~checks.grading.sandbox`); the kernel's side is :mod:`~checks.grading.recorder` (with
   :mod:`~checks.grading.outputs` and :mod:`~checks.grading.facts`), the test runner's the plugin
   :mod:`~checks.grading.plugin`; they share :mod:`~checks.grading.mime`, and the kernel's side and
   the judge :mod:`~checks.grading.novalue` (an answer recorded without a value).
4. :mod:`~checks.grading.judge`: each recorded answer compared with the expected value by
   ``checks``' own comparison, into rows (:mod:`~checks.grading.rows`, their fixed words
   :mod:`checks.words`); :mod:`~checks.grading.review` (with the allowlist,
   :mod:`~checks.grading.allow`) marks what an instructor should look at.
5. :mod:`~checks.grading.reports`, :mod:`~checks.grading.scores`, :mod:`~checks.grading.feedback`
   and :mod:`~checks.grading.export`: the rows out as CSV, points, pages and LMS files.

:mod:`~checks.grading.grader` runs the whole pipeline (locally, or on dask with
:mod:`~checks.grading.cluster`); :mod:`~checks.grading.cli` is its command line
(``backprop-workbook grade``, or ``python -m checks.grade``)."""
