"""Starts moe-serve with --speculative-algorithm NGRAM, and STANDALONE with a draft model, as a user
would and talks to it with examples/zmq_client.py: greedy replies keep the golden ids and routed
experts with speculation and with --no-speculative (and with an int4-quantized draft), /metrics shows
that verifies happened (and none for requests that opted out), a bad "speculative" value fails that
request only, and bad speculative flags stop the server at start with the flag named.
Usage: speculative_test.py PATH/TO/moe-serve"""
import json
import os
import re
import subprocess
import sys
import unittest
import urllib.request

import msgpack
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
SPECULATIVE_FLAGS = ["--speculative-algorithm", "NGRAM", "--speculative-num-steps", "4",
                     "--speculative-eagle-topk", "2", "--speculative-num-draft-tokens", "8"]


def metric(http_port, name):
    with urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30) as reply:
        text = reply.read().decode()
    match = re.search(rf"^{name}{{[^}}]*}} (\S+)$", text, re.MULTILINE)
    if match is None:
        raise AssertionError(f"{name} not in /metrics")
    return float(match.group(1))


class SpeculativeServe(unittest.TestCase):
    def test_golden_with_and_without_speculation_and_metrics(self):
        zmq_port, http_port = sp.free_port(), sp.free_port()
        server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}",
                          "--port", str(http_port), *SPECULATIVE_FLAGS)
        try:
            g = sp.golden()
            command = [sys.executable, os.path.join(sp.REPO, "examples", "zmq_client.py"),
                       "--endpoint", f"tcp://127.0.0.1:{zmq_port}", "--max-new-tokens", str(g["max_new_tokens"]),
                       "--ignore-eos", "--routed-experts", "--json"]
            for case in g["cases"]:
                command += ["--input-ids", ",".join(map(str, case["prompt_ids"]))]
            before = 0.0  # a fresh server has verified nothing (and may not serve HTTP before the first reply)
            for flags in ([], ["--stream"], ["--no-speculative"]):
                run = subprocess.run(command + flags, capture_output=True, text=True, timeout=300)
                self.assertEqual(run.returncode, 0, run.stderr)
                results = [json.loads(line) for line in run.stdout.splitlines()]
                self.assertEqual(len(results), len(g["cases"]))
                for case, result in zip(g["cases"], results):
                    sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
                after = metric(http_port, "moe_spec_verify_passes_total")
                verifies, before = after - before, after
                if flags == ["--no-speculative"]:
                    self.assertEqual(verifies, 0)
                else:
                    self.assertGreater(verifies, 0)
            self.assertGreater(metric(http_port, "moe_spec_accepted_drafts_total"), 0)
            self.assertGreater(metric(http_port, "moe_spec_accepted_tokens_per_verify"), 1.0)

            # A "speculative" that is not a bool fails that request; the next one is served.
            sock = zmq.Context.instance().socket(zmq.DEALER)
            sock.setsockopt(zmq.LINGER, 0)
            sock.connect(f"tcp://127.0.0.1:{zmq_port}")
            case = g["cases"][0]
            sock.send(msgpack.packb(dict(sp.golden_request(case, g["max_new_tokens"], "bad"), speculative="yes")))
            reply = sp.wait_for_reply(self, sock, 30)
            self.assertIn("error", reply)
            self.assertIn("speculative", reply["error"]["message"])
            reply = sp.zmq_client.generate(sock, sp.golden_request(case, g["max_new_tokens"], "good"))
            sp.expect_golden(self, case, reply["output_ids"], reply["routed_experts"], g["max_new_tokens"])
            sock.close()
        finally:
            code, output = sp.terminate(server)
        self.assertEqual(code, 0, output)

    def test_standalone_draft_models_keep_golden_ids_and_rows(self):
        # The target as its own draft (the acceptance ceiling) and mixtral-tiny, another architecture
        # with the same tokenizer, as a smaller draft, also quantized to int4 on its own (the target
        # decides every token, so a draft's precision only changes the acceptance).
        g = sp.golden()
        mixtral = os.path.join(sp.DATA, "mixtral-tiny")
        # The target as draft proposes its own greedy chain: nearly all 4 drafts of a verify are kept.
        for draft, least_tokens_per_verify in (([sp.MODEL], 3.0), ([mixtral], None),
                                               ([mixtral, "--speculative-draft-model-quantization", "int4"], None)):
            zmq_port, http_port = sp.free_port(), sp.free_port()
            server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint",
                              f"tcp://127.0.0.1:{zmq_port}", "--port", str(http_port),
                              "--speculative-algorithm", "STANDALONE", "--speculative-draft-model-path", *draft,
                              "--speculative-num-steps", "4", "--speculative-eagle-topk", "1",
                              "--speculative-num-draft-tokens", "5")
            try:
                command = [sys.executable, os.path.join(sp.REPO, "examples", "zmq_client.py"),
                           "--endpoint", f"tcp://127.0.0.1:{zmq_port}", "--max-new-tokens", str(g["max_new_tokens"]),
                           "--ignore-eos", "--routed-experts", "--json"]
                for case in g["cases"]:
                    command += ["--input-ids", ",".join(map(str, case["prompt_ids"]))]
                run = subprocess.run(command, capture_output=True, text=True, timeout=300)
                self.assertEqual(run.returncode, 0, run.stderr)
                results = [json.loads(line) for line in run.stdout.splitlines()]
                self.assertEqual(len(results), len(g["cases"]))
                for case, result in zip(g["cases"], results):
                    sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
                self.assertGreater(metric(http_port, "moe_spec_verify_passes_total"), 0)
                if least_tokens_per_verify is not None:
                    self.assertGreaterEqual(metric(http_port, "moe_spec_accepted_tokens_per_verify"),
                                            least_tokens_per_verify, draft)
            finally:
                code, output = sp.terminate(server)
            self.assertEqual(code, 0, output)

    def test_bad_speculative_flags_stop_the_server_with_the_flag_named(self):
        standalone = ["--speculative-algorithm", "STANDALONE"]
        for flags, named in ((["--max-tree-experts", "4"], "--speculative-algorithm"),
                             (["--speculative-algorithm", "EAGLE"], "--speculative-algorithm"),
                             (standalone, "--speculative-draft-model-path"),
                             (standalone + ["--speculative-draft-model-path", "/nonexistent/draft"],
                              "--speculative-draft-model-path"),
                             (SPECULATIVE_FLAGS[:2] + ["--speculative-draft-model-path", sp.MODEL],
                              "--speculative-draft-model-path"),
                             (standalone + ["--speculative-draft-model-path", sp.MODEL,
                                            "--speculative-draft-model-quantization", "int2"],
                              "--speculative-draft-model-quantization 'int2'"),
                             (SPECULATIVE_FLAGS[:2] + ["--speculative-draft-model-quantization", "int4"],
                              "--speculative-draft-model-quantization"),
                             (SPECULATIVE_FLAGS[:2] + ["--speculative-num-draft-tokens", "1"],
                              "--speculative-num-draft-tokens"),
                             (SPECULATIVE_FLAGS[:2] + ["--max-tree-experts", "1"], "--max-tree-experts"),
                             (SPECULATIVE_FLAGS[:2] + ["--pp-size", "2"], "--pp-size 2")):
            server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint",
                              f"tcp://127.0.0.1:{sp.free_port()}", *flags)
            try:
                output, _ = server.communicate(timeout=120)
            finally:
                if server.poll() is None:
                    sp.terminate(server)
            self.assertNotEqual(server.returncode, 0, flags)
            self.assertIn(named, output, flags)


if __name__ == "__main__":
    unittest.main()
