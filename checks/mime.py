"""The MIME type of the grader's record messages: shared by the kernel's side (``recorder``) and
the test runner's side (``nbrecord``), and importable without torch or pytest."""

MIME = "application/vnd.backprop-workbook.record+json"
