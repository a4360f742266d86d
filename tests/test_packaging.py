"""The built wheel installs into a user's environment; constraints.txt pins our own set.

The wheel declares ranges for torch, torchvision, torchaudio and Flower (no ``==``: a user's
app that pins another torch must still be able to add the library). The exact versions that
reproduce this project's runs live in ``constraints.txt``; the README's install command
(``scripts/main.sh``) and CI install with it.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from email.parser import Parser

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from tests.paths import REPO

#: The dependencies a user's own app is likely to pin (Flower's quickstarts pin torch).
RANGED = ("torch", "torchvision", "torchaudio", "flwr")


@pytest.fixture(scope="module")
def wheel_requirements(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Requirement]:
    out = tmp_path_factory.mktemp("wheel")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, f"pip wheel failed:\n{proc.stderr[-3000:]}"
    (wheel,) = out.glob("fl_r2sp-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        (name,) = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(zf.read(name).decode())
    reqs = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    return {r.name: r for r in reqs if r.marker is None}


def constraints() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"constraints.txt: {line!r} is not an exact pin"
            pins[req.name] = Version(spec.version.rstrip(".*"))
    return pins


def test_the_wheel_declares_ranges_not_pins(wheel_requirements) -> None:
    for name in RANGED:
        req = wheel_requirements[name]
        ops = {s.operator for s in req.specifier}
        assert "==" not in ops and "~=" not in ops, f"{name} is pinned: {req}"
        assert ">=" in ops, f"{name} has no lower bound: {req}"
    # Flower's quickstart pins torch==2.8.0: that torch must satisfy the declared range.
    assert wheel_requirements["torch"].specifier.contains("2.8.0")


def test_constraints_pin_each_ranged_dependency_inside_its_range(wheel_requirements) -> None:
    pins = constraints()
    assert set(RANGED) <= set(pins)
    for name in RANGED:
        spec = wheel_requirements[name].specifier
        assert spec.contains(pins[name]), f"constraints.txt {name}=={pins[name]} outside {spec}"


@pytest.mark.parametrize("script", ["scripts/main.sh", ".ci/run"])
def test_the_install_commands_use_the_constraints(script: str) -> None:
    text = (REPO / script).read_text()
    installs = [ln for ln in text.splitlines() if "pip install" in ln and "-e" in ln]
    assert installs and all("-c constraints.txt" in ln for ln in installs), installs
