"""Per-learner variants of notebook 03: a :class:`~.spec.Makemore` drawn from a seed
(:mod:`.spec`), the edits of the lecture's notebook that make it (:mod:`.makemore`, by
:mod:`.edits`), and its solution, student copy and hint ladders (:mod:`.build`)."""
