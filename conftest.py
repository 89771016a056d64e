"""Settings for every pytest run, the nbval run over solutions/ included."""

import os

# The makemore training loop runs WORKBOOK_STEPS steps: a short run under test (the full run is 200,000 steps).
os.environ.setdefault("WORKBOOK_STEPS", "2000")
