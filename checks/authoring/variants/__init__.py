"""Per-learner variants of notebooks 03 and 05, their answers: the edits of the lecture's notebook
that make a variant (:mod:`.makemore`, :mod:`.transformer`, bound to its text by :mod:`.edits`), and
its solution, student copy and hint ladders (:mod:`.build`). The variants themselves, which hold no
answer, are :mod:`checks.variants`."""
