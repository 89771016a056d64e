"""The MIME type of the grader's record messages: shared by the kernel's side (``recorder``) and
the test runner's side (``nbrecord``), and importable without torch or pytest."""

MIME = "application/vnd.backprop-workbook.record+json"
MAX_CELL_BYTES = 256 * 2**20  # what one grader cell may send; more is dropped (not recorded)
