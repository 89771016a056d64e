"""Settings for every pytest run, the nbval run over solutions/ included."""

import os

# The training loops run WORKBOOK_STEPS steps: a short run under test (the full runs are longer:
# 200,000 steps in 03, 20,000 in 04, 10,000 in 05). Under nbval a loop's outputs, and what follows
# from them, are not compared (the cells are nbval-ignore-output; the trained network's last check
# keeps its verdicts, its differences masked), so 200 steps run every line a full run runs;
# tests/test_own_steps.py trains the solutions' networks for 300 and 3,000 steps and checks them.
os.environ.setdefault("WORKBOOK_STEPS", "200")
