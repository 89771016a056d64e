"""Authoring the workbook: the student copies and hint ladders generated from the solutions
(:mod:`~checks.authoring.student`), and the class wheel without solutions
(:mod:`~checks.authoring.classwheel`)."""
