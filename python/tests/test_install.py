"""`cmake --install` installs the package where Debian's python3 finds it, and the installed
module finds the uvmsim binary installed beside it."""

import os
import subprocess
import sys

import pytest

BUILD_DIR = os.environ.get("UVMSIM_BUILD_DIR")
CMAKE = os.environ.get("UVMSIM_CMAKE", "cmake")


@pytest.mark.skipif(not BUILD_DIR, reason="run through CTest (UVMSIM_BUILD_DIR names the build)")
def test_installed_package_imports_and_finds_the_installed_binary(tmp_path, binary, traces):
    prefix = tmp_path / "prefix"
    subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", prefix, "--component", "python"],
                   check=True, capture_output=True)
    site = prefix / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "dist-packages"
    assert sorted(p.name for p in (site / "uvmsim").iterdir()) == sorted(
        p for p in os.listdir(os.path.dirname(__import__("uvmsim").__file__)) if p.endswith(".py"))
    (prefix / "bin").mkdir()
    (prefix / "bin" / "uvmsim").symlink_to(binary)
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "PYTHONDONTWRITEBYTECODE": "1"}
    code = ("import uvmsim, sys; print(uvmsim.__file__); print(uvmsim.find_binary()); "
            "print(uvmsim.run(sys.argv[1], gpu='gtx1080ti')['records'])")
    out = subprocess.run([sys.executable, "-c", code, str(traces["touch"][0])], env=env,
                         check=True, capture_output=True, text=True).stdout.split()
    assert out == [str(site / "uvmsim" / "__init__.py"), str(prefix / "bin" / "uvmsim"), "4"]
