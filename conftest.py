"""Settings for every pytest run, the nbval run over solutions/ included."""

import os

# The training loops run WORKBOOK_STEPS steps: a short run under test (the full runs are longer:
# 200,000 steps in 03, 20,000 in 04, 10,000 in 05).
os.environ.setdefault("WORKBOOK_STEPS", "2000")
