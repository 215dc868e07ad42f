"""The embedded judge on registries smaller than any it was fitted on (one and two blockers
made from each calibration blocker; ``judge.probes.small_registries``).

    .venv/bin/python bench/judge_small.py [--weights FILE ...] [--data DIR]

Each weights file given (default: the shipped one; e.g. the weights before, from
``git show 33b87adade...:judge/weights/embedded.json``) is measured on the same registries:
its first trigger question matched against the blocker alone (kept, left out), beside one
sibling (left out; the sibling answered), and the wrong answers of the blocker alone. The
test (tests/judge/test_small_registries.py) holds the shipped weights to the figures of the
weights before the information-gap features.
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from judge.embedded import WEIGHTS, EmbeddedJudge, load_weights  # noqa: E402
from judge.encoder import get_encoder  # noqa: E402
from judge.probes import small_registries  # noqa: E402
from judge.training import Featurizer, load_tasks  # noqa: E402

DATA = ROOT.parent / "shared" / "examples" / "hilbench-calibration"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", type=Path, nargs="*", default=[WEIGHTS])
    parser.add_argument("--data", type=Path, default=DATA)
    args = parser.parse_args()
    tasks = load_tasks(args.data)
    embed = Featurizer(embed=get_encoder().encode).embed_cached  # shared by every judge
    for path in args.weights:
        weights = load_weights(path)
        judge = EmbeddedJudge(weights, embed=embed)
        start = time.perf_counter()
        figures = small_registries(judge, tasks)
        seconds = time.perf_counter() - start
        print(f"weights {weights.get('version')} ({path}), {seconds:.1f} s")
        print(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
