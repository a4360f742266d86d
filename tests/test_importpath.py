"""The one import-path resolver of both halves and its one error format."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest

from fl_r2sp.importpath import ImportPathError, check_form, is_import_path, path_of, resolve


def test_a_path_resolves_to_its_callable_dotted_attributes_included() -> None:
    assert resolve("math:sqrt", "loss") is math.sqrt
    assert resolve("pathlib:Path.cwd", "model") == Path.cwd


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("math.sqrt", "not of the form 'package.module:attribute'"),
        ("math:", "not of the form"),
        (":sqrt", "not of the form"),
        ("math:sq rt", "not of the form"),
        ("no_such_module_here:f", "cannot import 'no_such_module_here' (ModuleNotFoundError"),
        ("math:nosuch", "module 'math' has no attribute 'nosuch'"),
        ("pathlib:Path.nosuch", "'pathlib:Path' has no attribute 'nosuch'"),
        ("math:pi", "is a float, not a callable"),
    ],
)
def test_every_failure_names_what_the_path_and_the_problem(spec: str, problem: str) -> None:
    with pytest.raises(ImportPathError) as exc:
        resolve(spec, "dataset")
    assert str(exc.value).startswith(f"dataset {spec!r}: ")
    assert problem in str(exc.value)
    assert (exc.value.what, exc.value.spec) == ("dataset", spec)
    assert isinstance(exc.value, ValueError)  # callers that catch bad input catch it too


def test_an_error_inside_the_users_module_is_reported_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_user_job.py").write_text("raise RuntimeError('no GPU here')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportPathError, match=r"cannot import 'broken_user_job' \(RuntimeError: "
                                              r"no GPU here\)"):  # fmt: skip
        resolve("broken_user_job:net", "model")


def test_form_checks_import_nothing() -> None:
    assert check_form("surely_absent_pkg.job:net", "model") == "surely_absent_pkg.job:net"
    assert "surely_absent_pkg" not in sys.modules
    with pytest.raises(ImportPathError, match="model 'net': not of the form"):
        check_form("net", "model")
    assert is_import_path("a:b") and not is_import_path("resnet32")


def test_path_of_gives_a_module_level_function_its_path_and_refuses_the_rest() -> None:
    assert path_of(math.sqrt, "loss") == "math:sqrt"
    assert path_of(resolve, "model") == "fl_r2sp.importpath:resolve"

    def nested() -> None:
        return None

    with pytest.raises(ImportPathError, match="model 'nested': not importable"):
        path_of(nested, "model")
    with pytest.raises(ImportPathError, match="not importable"):
        path_of(lambda: None, "loss")


def test_path_of_names_a_scripts_function_by_the_scripts_module(tmp_path: Path) -> None:
    script = tmp_path / "user_script.py"
    script.write_text("from fl_r2sp.importpath import path_of, resolve\n"
                      "def net():\n    return 7\n"
                      "if __name__ == '__main__':\n"
                      "    spec = path_of(net, 'model')\n"
                      "    print(spec, resolve(spec, 'model')())\n")  # fmt: skip
    root = str(Path(__file__).resolve().parents[1])
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env={"PYTHONPATH": root}, timeout=60)  # fmt: skip
    assert proc.stdout.strip() == "user_script:net 7", proc.stderr
