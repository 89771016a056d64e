"""Loaded first (``-p tests.startup`` in pytest's ``addopts``, before the plugins that installed
packages register, nbval's among them): the test session's processes skip the optional imports
that the workbook's own processes skip (:mod:`checks.startup`), jsonschema's IRI checker above
all, 1.7 s of CPU in each pytest process that imports nbformat."""

from checks.startup import skip_unused_imports

skip_unused_imports()
