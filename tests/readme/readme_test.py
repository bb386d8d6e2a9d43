"""Runs the shell blocks of the README and of the docs/ pages in PAGES as written, against the tiny model
and a built tree.

Each page marks each fenced shell block with a word after the language:
    ```sh test     run by this test, in PAGES order (the README first, whose server later pages'
                   blocks use) and page order, as one shell session (`set -euo pipefail`),
                   from a directory that looks like the checkout (its top-level folders linked, `build`
                   the build directory); servers a block starts in the background keep running for
                   the later blocks and are stopped at the end
    ```sh manual   not run: it installs packages, builds, needs other hosts or runs for minutes
A shell block with neither word fails the test, so none is left out by accident. Every run block
must exit 0, and no reply it prints may be an error ({"error": ...} or {"success": false, ...}).
With unshare available the session runs in a network namespace of its own, so the README's fixed
ports (30000, 30001, ...) cannot collide with anything else on the machine.
Usage: readme_test.py BUILD_DIR"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The pages whose shell blocks are checked, in the order their test blocks run.
PAGES = ["README.md", "docs/serving.md", "docs/routing-capture.md", "docs/parallelism.md", "docs/embedding.md",
         "docs/rl.md", "docs/http-api.md", "docs/gpu.md", "docs/development.md"]
SHELLS = {"sh", "bash", "shell", "console"}
SESSION_TIMEOUT_S = 300

BUILD = os.path.abspath(sys.argv[1])


def shell_blocks(text):
    """(line number of the opening fence, the words after the language, the block's text) per shell block."""
    blocks, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*(.*)$", lines[i])
        if not m:
            i += 1
            continue
        end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
        if m.group(1) in SHELLS:
            blocks.append((i + 1, m.group(2).split(), "\n".join(lines[i + 1:end])))
        i = end + 1
    return blocks


def checkout_lookalike(directory):
    """`directory` with the checkout's top-level folders linked and `build` the build directory; files
    a block writes (chat.json) land there, not in the checkout."""
    for name in os.listdir(SOURCE):
        if name not in ("build", ".git") and os.path.isdir(os.path.join(SOURCE, name)):
            os.symlink(os.path.join(SOURCE, name), os.path.join(directory, name))
    os.symlink(BUILD, os.path.join(directory, "build"))


def isolated(command):
    """`command` in a network namespace of its own (loopback up) where unshare allows it."""
    if shutil.which("unshare") and shutil.which("ip") and \
            subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        return ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"] + command
    return command


def json_values(line):
    """The JSON values `line` is made of (curl prints a reply without a newline, so replies can share
    a line); none when it is not JSON."""
    decoder, values, at = json.JSONDecoder(), [], 0
    line = line.strip()
    while at < len(line):
        try:
            value, at = decoder.raw_decode(line, at)
        except ValueError:
            return []
        values.append(value)
    return values


def error_replies(output):
    """The JSON replies in `output` that say a request failed."""
    return [reply for line in output.splitlines() for reply in json_values(line)
            if isinstance(reply, dict) and ("error" in reply or reply.get("success") is False)]


class Readme(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.blocks = []  # (page, line, words, text)
        for page in PAGES:
            with open(os.path.join(SOURCE, page)) as f:
                cls.blocks += [(page, line, words, text) for line, words, text in shell_blocks(f.read())]

    def test_every_shell_block_is_marked_test_or_manual(self):
        unmarked = [f"{page}:{line}" for page, line, words, _ in self.blocks if not {"test", "manual"} & set(words)]
        self.assertEqual(unmarked, [], "shell blocks at these lines need ```sh test or ```sh manual")

    def test_the_readme_and_the_pages_have_test_blocks(self):
        tested = {page for page, _, words, _ in self.blocks if "test" in words}
        self.assertLessEqual({"README.md", "docs/serving.md", "docs/rl.md"}, tested)

    def test_the_test_blocks_run_as_written(self):
        run = [(f"{page} line {line}", text) for page, line, words, text in self.blocks if "test" in words]
        self.assertGreater(len(run), 0)
        tmp = tempfile.mkdtemp(prefix="moe-readme-")
        try:
            work = os.path.join(tmp, "checkout")
            os.makedirs(work)
            checkout_lookalike(work)
            script = os.path.join(tmp, "readme.sh")
            with open(script, "w") as f:
                f.write("set -euo pipefail\n")
                for line, text in run:
                    f.write(f"echo '::: {line}'\n{text}\necho\n")
                f.write("echo '::: all blocks ran'\n")
            log_path = os.path.join(tmp, "session.log")
            with open(log_path, "w") as log:
                session = subprocess.Popen(isolated(["bash", script]), cwd=work, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True)
                try:
                    code = session.wait(timeout=SESSION_TIMEOUT_S)
                except subprocess.TimeoutExpired:
                    code = "timeout"
                finally:
                    stop_group(session.pid)
            with open(log_path, errors="replace") as f:
                output = f.read()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        print(output)  # what a user would see, in ctest's log
        tail = output[-6000:]
        self.assertEqual(code, 0, f"the README and docs session exited {code}; its output ends:\n{tail}")
        self.assertIn("::: all blocks ran", output, tail)
        self.assertEqual(error_replies(output), [], tail)


def stop_group(pgid):
    """SIGTERM to the session's servers, SIGKILL to what is left after 30 s."""
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        return
    for _ in range(300):
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return
        subprocess.run(["sleep", "0.1"])
    os.killpg(pgid, signal.SIGKILL)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
