"""The README's picture: ``docs/pictures/topology-aware-basics.svg``, what ``nrirp simulate
--svg`` draws for step 5 of ``examples/workloads/topology-aware/basics.yaml`` on ``box-16``.

``python tools/readme_picture.py`` writes it; ``--check`` exits 1 when the committed file is
not what the code draws now (``tests/app/pictures/test_readme_picture.py`` runs the check).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PICTURE = ROOT / "docs" / "pictures" / "topology-aware-basics.svg"
WORKLOAD = "examples/workloads/topology-aware/basics.yaml"
CONFIG = "examples/workloads/topology-aware/configs/box16.yaml"
STEP = 5


def render() -> str:
    """The picture, drawn now (paths relative to the checkout, so the file is the same
    wherever it is made)."""
    from nrirp.app.pictures import render_frames
    from nrirp.app.pictures.replay import replay_frames
    from nrirp.app.simulator import build_simulator, load_workload, replay, replay_result

    workload = load_workload(str(ROOT / WORKLOAD))
    container = build_simulator(
        "topology-aware", machine="box-16", config_file=str(ROOT / CONFIG), policy_modules=[]
    )
    container.core.resource_manager().start(container.core.policy_config())
    steps = asyncio.run(replay(container, workload))
    result = replay_result(
        container, workload, steps, hardware="fake machine box-16", config_file=CONFIG
    )
    frames = replay_frames(result, container.core.machine())
    return render_frames(frames[:STEP])[STEP - 1]


def main(argv: list[str]) -> int:
    picture = render()
    if "--check" in argv:
        if not PICTURE.exists() or PICTURE.read_text() != picture:
            print(f"{PICTURE} is not current: run python {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    PICTURE.write_text(picture)
    print(f"wrote {PICTURE}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
