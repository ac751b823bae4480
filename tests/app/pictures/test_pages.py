"""A replay's pictures: ``nrirp simulate --svg DIR`` (a file per step) and ``--html FILE``
(one page, nothing fetched from anywhere), and the page in a real browser (slow)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from nrirp.app.cli import main
from nrirp.app.commands.simulate import EXIT_INPUT, EXIT_OK
from tests.app.pictures.support import elements, read
from tests.support.chromium import screenshot
from tests.support.png import read_png

ROOT = Path(__file__).parents[3]
WORKLOADS = ROOT / "examples" / "workloads"
BASICS = [
    "--machine", "box-16", "--policy", "topology-aware",
    "--config", str(WORKLOADS / "topology-aware" / "configs" / "box16.yaml"),
    "--workload", str(WORKLOADS / "topology-aware" / "basics.yaml"),
]  # fmt: skip
BALLOONS = [
    "--machine", "box-16", "--policy", "balloons",
    "--config", str(WORKLOADS / "balloons" / "configs" / "basics.yaml"),
    "--workload", str(WORKLOADS / "balloons" / "basics.yaml"),
]  # fmt: skip
TEMPLATE = [
    "--machine", "box-16", "--policy", "template",
    "--workload", str(WORKLOADS / "template-box16.yaml"),
]  # fmt: skip


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["simulate", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def steps_in(table: str) -> int:
    return len(re.findall(r"^Step \d+: ", table, re.MULTILINE))


@pytest.mark.parametrize(
    "args", [BASICS, BALLOONS, TEMPLATE], ids=["pools", "balloons", "template"]
)
def test_a_picture_per_step_and_one_page(
    args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, table, err = simulate(
        capsys, *args, "--svg", str(tmp_path / "svg"), "--html", str(tmp_path / "all.html")
    )
    assert code == EXIT_OK, err
    steps = steps_in(table)
    files = sorted((tmp_path / "svg").iterdir())
    assert [f.name for f in files] == [f"step-{n:03d}.svg" for n in range(1, steps + 1)]
    pictures = [read(f.read_text()) for f in files]
    for n, picture in enumerate(pictures, start=1):
        assert sorted(picture.drawn()) == list(range(16))
        title = next(elements(picture.root, "text", "title")).text or ""
        assert title.startswith(f"Step {n}: ")
    page = (tmp_path / "all.html").read_text()
    assert page.count('<figure class="frame"') == steps and page.count("<svg ") == steps
    assert f'max="{steps}"' in page  # the slider
    assert len(re.findall(r'<li[^>]*><a href="#step-\d+">Step \d+: ', page)) == steps
    # self-contained: no script, style, image or font is fetched
    assert not re.search(
        r"\s(src|srcset)=|<link|@import|url\((?!#)|https?://(?!www\.w3\.org/2000/svg)", page
    )
    ids = re.findall(r'\sid="([^"]+)"', page)
    assert len(ids) == len(set(ids))  # every picture's pattern has an id of its own


def test_colours_follow_containers_through_the_steps(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = simulate(capsys, *BASICS, "--svg", str(tmp_path))
    assert code == EXIT_OK, err
    seen: dict[str, str] = {}
    for path in sorted(tmp_path.iterdir()):
        for label, (_, colour) in read(path.read_text()).legend.items():
            assert seen.setdefault(label, colour) == colour, (path.name, label)
    assert len(seen) >= 5 and len(set(seen.values())) == len(seen)


def test_a_shorter_replay_into_the_same_directory_leaves_only_its_own_pictures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Frames of an earlier, longer series are removed (they would read as this replay's
    later steps); other files in the directory are left alone."""
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "step-1.svg").write_text("not a frame name of ours")
    code, _, err = simulate(capsys, *BASICS, "--svg", str(tmp_path))
    assert code == EXIT_OK, err
    assert len(list(tmp_path.glob("step-0*.svg"))) == 10
    code, table, err = simulate(capsys, *TEMPLATE, "--svg", str(tmp_path))
    assert code == EXIT_OK, err
    frames = [f"step-{n:03d}.svg" for n in range(1, steps_in(table) + 1)]
    assert sorted(f.name for f in tmp_path.iterdir()) == sorted(
        [*frames, "notes.txt", "step-1.svg"]
    )
    assert "template" in (tmp_path / frames[-1]).read_text()


def test_pictures_that_cannot_be_written_fail_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    taken = tmp_path / "a-file"
    taken.write_text("")
    code, _, err = simulate(capsys, *TEMPLATE, "--svg", str(taken))
    assert code == EXIT_INPUT and "nrirp simulate: cannot write the pictures:" in err
    code, _, err = simulate(capsys, *TEMPLATE, "--html", str(tmp_path / "no" / "dir" / "x.html"))
    assert code == EXIT_INPUT and "cannot write the pictures" in err


@pytest.mark.slow
def test_the_page_in_headless_chromium(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "basics.html"
    code, _, err = simulate(capsys, *BASICS, "--html", str(page))
    assert code == EXIT_OK, err
    html = page.read_text()
    step = 5  # two pools in use, an exclusive container, a reserved CPU
    svg = html.split(f'id="step-{step}"', 1)[1].split("</figure>", 1)[0]
    picture = read(svg[svg.index("<svg") :])
    image = read_png(screenshot(f"{page.as_uri()}#step-{step}", tmp_path / "shot.png"))
    assert (image.width, image.height) == (1200, 900)
    colours = image.colours()
    solid = {c for c, n in colours.items() if n >= 40}  # flat areas, not anti-aliasing
    assert len(solid) >= 8, sorted(colours.items(), key=lambda kv: -kv[1])[:20]
    # the step asked for is the one shown (the script ran), with its containers' colours
    shown = {tuple(int(v[i : i + 2], 16) for i in (1, 3, 5)) for _, v in picture.legend.values()}
    assert len(shown & solid) >= 3, (shown, sorted(solid))
    white = colours.get((255, 255, 255), 0)
    assert white < image.width * image.height * 0.9  # not a blank page
