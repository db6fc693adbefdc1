"""A target for `bisect amplify` tests: its failure rate and duration follow two stress knobs.

AMP_LOAD (1..12) raises the chance that a run fails and its duration; AMP_MODE=storm doubles
the chance; AMP_NOISE is read and ignored. Like a real target it prints a warning after its
result, and with AMP_SLOW set it sleeps long enough for a test to kill the driver mid-search
(only while the file AMP_SLOW_WHILE names exists, when that is set: the resumed search runs fast).
"""

import json
import os
import random
import sys
import time

load = int(os.environ.get("AMP_LOAD", "1"))
storm = os.environ.get("AMP_MODE", "calm") == "storm"
float(os.environ.get("AMP_NOISE", "0.5"))
rng = random.Random(int(os.environ.get("HEISENBISECT_SEED", "0")))
slow_while = os.environ.get("AMP_SLOW_WHILE")
slow = float(os.environ.get("AMP_SLOW", "0")) if slow_while is None or os.path.exists(slow_while) else 0.0
time.sleep(0.01 * load + slow)
failed = rng.random() < min(0.95, 0.05 * load * (2 if storm else 1))
line = json.dumps({"failures": int(failed), "total": 1})
with open(os.environ["HEISENBISECT_RESULT"], "w") as result:
    result.write(line)
print(line)
print("warning: a late line on stderr, after the result", file=sys.stderr)
