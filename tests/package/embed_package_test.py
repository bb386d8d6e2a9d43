"""The installed package as a program outside the tree uses it: `cmake --install` of the build into a
fresh prefix (the headers of moe::Engine and nothing internal, libmoe-engine.a (and the CUDA backend's
libmoe-engine-cuda.a in a build with it), the CMake package,
nothing naming the source or build tree), then a CMake project in a temporary directory that only
knows that prefix builds examples/embed.cpp with find_package(moe_engine) and moe::engine, and the
program, run on the tiny Qwen3-MoE, prints the golden ids and routing rows of each request and an
expert load that is the histogram of those rows. Only embed.cpp compiles: the library is the build's.
Usage: embed_package_test.py BUILD_DIR CMAKE GENERATOR CXX_COMPILER [CXX_COMPILER_LAUNCHER]"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(SOURCE, "tests", "data")
PUBLIC_HEADERS = {"client.h", "engine.h", "engine_options.h", "engine_settings.h", "messages.h"}
# The example's requests, in the order it prints them, and the golden case of each prompt.
REQUESTS = [("callback", "The capital of France is"), ("future", "Explain how mixture of experts models work."),
            ("coroutine", "Hello"), ("stream", "Hello")]
NEW_TOKENS = 12

BUILD, CMAKE, GENERATOR, CXX = sys.argv[1:5]
LAUNCHER = sys.argv[5] if len(sys.argv) > 5 else ""


def run(*command, cwd=None):
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"{' '.join(command)} exited {result.returncode}:\n{result.stdout}\n{result.stderr}")
    return result.stdout


def parse_example_output(text):
    """{request: {"ids": [...], "rows": [[[...]]]}} and the expert load's tokens and per-layer counts."""
    requests, load, current = {}, {"counts": []}, None
    for line in text.splitlines():
        if m := re.match(r"^(\w+): \d+ tokens, text|^(stream): ", line):
            current = requests.setdefault(m.group(1) or m.group(2), {"rows": []})
        elif m := re.match(r"^  output ids (\[.*\])$", line):
            current["ids"] = json.loads(m.group(1))
        elif m := re.match(r"^    token (\d+): (\[.*\])$", line):
            assert int(m.group(1)) == len(current["rows"]), line
            current["rows"].append(json.loads(m.group(2)))
        elif m := re.match(r"^expert load: (\d+) tokens$", line):
            load["tokens"] = int(m.group(1))
        elif m := re.match(r"^  layer (\d+) (\[.*\])$", line):
            load["counts"].append(json.loads(m.group(2)))
    return requests, load


class EmbedPackage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="moe-embed-package-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        run(CMAKE, "--install", BUILD, "--prefix", cls.prefix)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_installs_the_public_headers_one_library_and_a_relocatable_package(self):
        self.assertEqual(set(os.listdir(os.path.join(self.prefix, "include", "moe"))), PUBLIC_HEADERS)
        self.assertEqual(os.listdir(os.path.join(self.prefix, "include")), ["moe"])
        libs = [f for _, _, files in os.walk(self.prefix) for f in files if f.endswith((".a", ".so"))]
        # and the CUDA backend apart, in a build with it (moe::engine_cuda)
        self.assertIn(sorted(libs), (["libmoe-engine.a"], ["libmoe-engine-cuda.a", "libmoe-engine.a"]))
        package_dir = next(root for root, _, files in os.walk(self.prefix) if "moe_engineConfig.cmake" in files)
        self.assertEqual(os.path.basename(package_dir), "moe_engine")
        files = set(os.listdir(package_dir))  # and moe_engineTargets-<build type>.cmake
        self.assertLessEqual({"moe_engineConfig.cmake", "moe_engineConfigVersion.cmake", "moe_engineTargets.cmake"}, files)
        self.assertTrue(all(re.fullmatch(r"moe_engine\w*(-\w+)?\.cmake", name) for name in files), files)
        for name in os.listdir(package_dir):
            with open(os.path.join(package_dir, name)) as f:
                text = f.read()
            for tree in (SOURCE, os.path.abspath(BUILD)):
                self.assertNotIn(tree, text, f"{name} names {tree}: the package would not work elsewhere")

    def test_a_program_outside_the_tree_builds_with_find_package_and_gives_the_goldens(self):
        app = os.path.join(self.tmp, "app")
        os.makedirs(app)
        shutil.copy(os.path.join(HERE, "CMakeLists.txt"), app)
        shutil.copy(os.path.join(SOURCE, "examples", "embed.cpp"), app)
        configure = [CMAKE, "-S", app, "-B", os.path.join(app, "build"), "-G", GENERATOR, "-DCMAKE_BUILD_TYPE=Release",
                     f"-DCMAKE_PREFIX_PATH={self.prefix}", f"-DCMAKE_CXX_COMPILER={CXX}"]
        if LAUNCHER:
            configure.append(f"-DCMAKE_CXX_COMPILER_LAUNCHER={LAUNCHER}")
        run(*configure)
        run(CMAKE, "--build", os.path.join(app, "build"))
        output = run(os.path.join(app, "build", "embed_app"), os.path.join(DATA, "qwen3-moe-tiny"),
                     os.path.join(DATA, "qwen3-tokenizer"))
        requests, load = parse_example_output(output)

        with open(os.path.join(DATA, "qwen3-moe-tiny", "golden.json")) as f:
            golden = json.load(f)
        cases = {case["prompt"]: case for case in golden["cases"]}
        self.assertEqual(list(requests), [name for name, _ in REQUESTS], output)
        expected_counts = [[0] * len(load["counts"][0]) for _ in range(golden["num_moe_layers"])]
        for name, prompt in REQUESTS:
            case, printed = cases[prompt], requests[name]
            self.assertEqual(printed["ids"], case["output_ids"][:NEW_TOKENS], name)
            # The stream prints its ids; its rows are the coroutine's (the same greedy request).
            rows = printed["rows"] if name != "stream" else requests["coroutine"]["rows"]
            if name != "stream":
                self.assertEqual(rows, case["routed_experts"][:len(case["prompt_ids"]) + NEW_TOKENS - 1], name)
            for row in rows:
                for layer, experts in enumerate(row):
                    for expert in experts:
                        expected_counts[layer][expert] += 1
        self.assertEqual(load["counts"], expected_counts)
        self.assertEqual(load["tokens"], sum(len(requests[n]["rows"]) for n, _ in REQUESTS if n != "stream")
                         + len(requests["coroutine"]["rows"]))


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
