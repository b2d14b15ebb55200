"""The Python API against the installed wheel (run by .ci/wheel-e2e).

Run from the repository root, in a venv where only the wheel is installed:
python -m unittest discover -s python/tests
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import ckptcheck

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "testdata" / "published"
EXPORTED = ROOT / "testdata" / "exported"


class APITest(unittest.TestCase):
    def test_binary_is_the_wheels(self) -> None:
        # The installed package, not this checkout's python/ckptcheck.
        self.assertTrue(Path(ckptcheck.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), ckptcheck.__file__)
        exe = Path(ckptcheck.binary())
        self.assertTrue(exe.is_absolute())
        # The venv's scripts directory, not some other ckptcheck on PATH.
        self.assertEqual(exe.parent, Path(sys.prefix, "Scripts" if os.name == "nt" else "bin").resolve())

    def test_diff_findings(self) -> None:
        r = ckptcheck.diff(PUBLISHED, EXPORTED)
        self.assertFalse(r.ok)
        self.assertEqual(r.exit_code, 1)
        self.assertEqual(r.command, "diff")
        self.assertEqual(r.summary["error"], 1)
        [err] = r.errors()
        self.assertEqual((err.code, err.severity, err.key), ("missing_key", "error", "model.layers.2.self_attn.k_norm.weight"))
        self.assertTrue(err.message)
        self.assertEqual(r.raw["schema"], "ckptcheck.report/v1")

    def test_diff_values_and_fail_on(self) -> None:
        r = ckptcheck.diff(PUBLISHED, EXPORTED, values=True, rtol=1e-2, fail_on="never")
        self.assertTrue(r.ok)
        self.assertEqual(r.exit_code, 0)
        self.assertIn("values", r.raw)

    def test_validate_and_inspect(self) -> None:
        r = ckptcheck.validate(PUBLISHED, EXPORTED)
        self.assertTrue(r.ok, r.findings)
        self.assertEqual(r.exit_code, 0)
        info = ckptcheck.inspect(PUBLISHED)
        self.assertEqual(info["inputs"][0]["tensors"], 46)

    def test_exit_2_raises(self) -> None:
        with self.assertRaises(ckptcheck.Error) as cm:
            ckptcheck.diff(PUBLISHED, ROOT / "no such export")
        self.assertEqual(cm.exception.exit_code, 2)
        self.assertIn("no such export", str(cm.exception))
        with self.assertRaises(ckptcheck.Error):
            ckptcheck.diff(PUBLISHED, EXPORTED, expect="sometimes", values=True)

    def test_paths_that_look_like_flags(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            odd = Path(d, "--html=x")
            shutil.copytree(EXPORTED, odd)
            cwd = os.getcwd()
            os.chdir(d)
            try:
                r = ckptcheck.validate("--html=x")
                self.assertTrue(r.ok)
                self.assertEqual(r.raw["inputs"][0]["path"], "--html=x")
                self.assertFalse(Path(d, "x").exists())
            finally:
                os.chdir(cwd)

    def test_config_file_is_ignored_unless_asked(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            Path(d, ".ckptcheck.yaml").write_text("flags:\n  fail-on: never\n")
            cwd = os.getcwd()
            os.chdir(d)
            try:
                self.assertEqual(ckptcheck.diff(PUBLISHED, EXPORTED).exit_code, 1)
                self.assertEqual(ckptcheck.diff(PUBLISHED, EXPORTED, use_config=True).exit_code, 0)
            finally:
                os.chdir(cwd)

    def test_python_m(self) -> None:
        out = subprocess.run([sys.executable, "-m", "ckptcheck", "--version"], stdout=subprocess.PIPE, check=True)
        self.assertTrue(out.stdout.startswith(b"ckptcheck "))


if __name__ == "__main__":
    unittest.main()
