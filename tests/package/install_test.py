"""`cmake --install` of the build into a fresh prefix puts the programs in bin/ beside the library and
headers (moe-serve, moe-cli and, built with the benchmarks, moe-bench), each of which runs from
there; and a CPU-only embedding program (examples/embed.cpp linking moe::engine) links no CUDA
library, also in a build with the CUDA backend, whose moe-serve does link it.
Usage: install_test.py BUILD_DIR CMAKE EMBED_EXAMPLE MOE_CUDA(ON|OFF) PROGRAM..."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

BUILD, CMAKE, EMBED_EXAMPLE, CUDA = sys.argv[1:5]
PROGRAMS = sys.argv[5:]
CUDA_LIBRARIES = ("libcudart", "libcublas", "libcuda.")


def cuda_libraries(program):
    """The CUDA libraries `ldd` lists for `program`."""
    listed = subprocess.run(["ldd", program], capture_output=True, text=True, check=True).stdout
    return [line.split()[0] for line in listed.splitlines() if line.split() and line.split()[0].startswith(CUDA_LIBRARIES)]


class Install(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="moe-install-")
        result = subprocess.run([CMAKE, "--install", BUILD, "--prefix", cls.tmp], capture_output=True, text=True)
        if result.returncode != 0:
            raise AssertionError(f"cmake --install exited {result.returncode}:\n{result.stdout}\n{result.stderr}")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_programs_are_in_bin_and_run(self):
        self.assertGreaterEqual(len(PROGRAMS), 2, "moe-serve and moe-cli at least")
        self.assertEqual(sorted(os.listdir(os.path.join(self.tmp, "bin"))), sorted(PROGRAMS))
        for program in PROGRAMS:
            with self.subTest(program=program):
                result = subprocess.run([os.path.join(self.tmp, "bin", program), "--help"], capture_output=True,
                                        text=True, timeout=60)
                self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
                self.assertIn("--help", result.stdout + result.stderr)

    def test_a_cpu_only_embedding_links_no_cuda_library(self):
        self.assertEqual(cuda_libraries(EMBED_EXAMPLE), [])
        if CUDA == "ON":  # ldd sees them where they are linked
            self.assertTrue(any(name.startswith("libcudart") for name in
                                cuda_libraries(os.path.join(self.tmp, "bin", "moe-serve"))))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
