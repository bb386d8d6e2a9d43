"""Helpers of the end-to-end tests: start moe-serve processes as a user would, talk to them over
ZeroMQ with the example client, and compare with the golden outputs of transformers."""
import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

import msgpack

try:
    import zmq
except ImportError:  # the GPU machine's Python has no pyzmq: its HTTP-only tests (tests/gpu/) still run
    zmq = None

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(REPO, "tests", "data")
MODEL = os.path.join(DATA, "qwen3-moe-tiny")
TOKENIZER = os.path.join(DATA, "qwen3-tokenizer")
sys.path.insert(0, os.path.join(REPO, "examples"))
zmq_client = None
if zmq is not None:
    import zmq_client  # noqa: E402  (the example client is what these tests exercise)



def internal_key_file():
    """A new deployment key (what moe-serve --make-internal-key writes: a CURVE secret key in Z85),
    readable by its owner only, removed when the test process exits."""
    directory = tempfile.mkdtemp(prefix="moe-e2e-key-")
    path = os.path.join(directory, "deployment.key")
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
        f.write(zmq.curve_keypair()[1].decode() + "\n")
    atexit.register(shutil.rmtree, directory, True)
    return path


# The key every process of a test deployment shares: their tcp:// sockets accept only its holders.
KEY_FILE = internal_key_file() if zmq is not None else None
# Flags both processes of a deployment must agree on: they size the worker's KV cache and batches.
SHARED_FLAGS = ["--model-path", MODEL, "--enable-return-routed-experts", "--max-total-tokens", "4096",
                "--chunked-prefill-size", "512", "--internal-key-file", KEY_FILE,
                "--log-level", os.environ.get("MOE_E2E_LOG_LEVEL", "warn")]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def connect(port):
    """A DEALER socket (what a ZeroMQ client uses) connected to moe-serve's client endpoint on `port`."""
    sock = zmq.Context.instance().socket(zmq.DEALER)
    sock.setsockopt(zmq.LINGER, 0)
    sock.connect(f"tcp://127.0.0.1:{port}")
    return sock


def golden():
    with open(os.path.join(MODEL, "golden.json")) as f:
        return json.load(f)


def start(moe_serve, *flags, log=subprocess.PIPE, model=MODEL):
    # Without --port, moe-serve serves HTTP on SGLang's 30000; these servers speak ZeroMQ only, and
    # several may run at once. `log`: where its output goes (a pipe the caller reads at the end by
    # default; a long run that never reads it passes a file, or the full pipe would block the server).
    # `model`: the --model-path.
    no_http = [] if "--port" in flags else ["--port", "0"]
    shared = [model if flag == MODEL else flag for flag in SHARED_FLAGS]
    return subprocess.Popen([moe_serve, *shared, *no_http, *flags], stdout=log,
                            stderr=subprocess.STDOUT, text=True)


def wait_until_healthy(process, url, timeout_s, log_text):
    """Polls url/health until it answers 200; a RuntimeError with log_text() when the process exits or
    the time runs out."""
    import requests  # only the HTTP tests need it
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"moe-serve exited with {process.returncode} at startup:\n{log_text()}")
        try:
            if requests.get(url + "/health", timeout=2).status_code == 200:
                return
        except requests.ConnectionError:
            pass  # not listening yet
        time.sleep(0.1)
    raise RuntimeError(f"moe-serve did not answer /health within {timeout_s} s:\n{log_text()}")


def start_ids_http(moe_serve, model, *flags):
    """moe-serve over HTTP on a free port, serving token ids (--skip-tokenizer-init) with routed-experts
    capture and a pool of 4,096 slots, once healthy: (process, url)."""
    port = free_port()
    process = subprocess.Popen(
        [moe_serve, "--model-path", model, "--skip-tokenizer-init", "--enable-return-routed-experts",
         "--max-total-tokens", "4096", "--port", str(port), "--log-level",
         os.environ.get("MOE_E2E_LOG_LEVEL", "warn"), *flags],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    wait_until_healthy(process, url, 60, lambda: terminate(process)[1])
    return process, url


def start_ids_fails(moe_serve, model, *flags):
    """start_ids_http's server's exit code and output when it is expected to stop at start."""
    result = subprocess.run([moe_serve, "--model-path", model, "--skip-tokenizer-init", "--max-total-tokens", "4096",
                             *flags], capture_output=True, text=True, timeout=60)
    return result.returncode, result.stdout + result.stderr


def terminate(process, timeout=30):
    """SIGTERM, then the exit code (or -9 after a SIGKILL when it did not stop in time) and the log."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return process.returncode, output


def golden_request(case, max_new_tokens, rid):
    """Asks for the MoE layers' rows only, as the goldens hold them (a dense first layer has none)."""
    return {"rid": rid, "input_ids": case["prompt_ids"], "return_routed_experts": True, "routed_experts_layers": "moe",
            "sampling_params": {"temperature": 0, "max_new_tokens": max_new_tokens, "ignore_eos": True}}


def expect_golden(test, case, output_ids, experts, max_new_tokens):
    """Golden ids, and P+G-1 rows equal to transformers' routing except at near-tie positions."""
    test.assertEqual(output_ids, case["output_ids"])
    rows = len(case["prompt_ids"]) + max_new_tokens - 1
    test.assertEqual(len(experts), rows)
    for position in range(rows):
        if case["router_min_gap"][position] < 1e-3:
            continue  # two experts tie within float noise: either order is right
        test.assertEqual([list(layer) for layer in experts[position]], case["routed_experts"][position],
                         f"row {position}")


def wait_for_reply(test, sock, timeout_s):
    test.assertTrue(sock.poll(int(timeout_s * 1000)), f"no reply within {timeout_s} s")
    return msgpack.unpackb(sock.recv(), raw=False)


def now():
    return time.monotonic()
