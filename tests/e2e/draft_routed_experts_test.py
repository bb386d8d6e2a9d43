"""Starts moe-serve with a STANDALONE MoE draft model and --enable-return-routed-experts, and asks for
return_draft_routed_experts over ZeroMQ, HTTP /generate and /v1/completions: the target's rows stay
the golden ones, the draft's rows come apart (draft_routed_experts, with its own shape and dtype),
one per position of routed_experts; with the target as its own draft they equal the golden rows (also
as examples/zmq_client.py --draft-routed-experts prints them).
Requests the server cannot serve are refused with the field named (400 over HTTP). A remote worker
drafts with the --speculative-draft-model-quantization it and its front agree on (the handshake
refuses one that differs).
Usage: draft_routed_experts_test.py PATH/TO/moe-serve"""
import base64
import json
import os
import subprocess
import sys
import time
import unittest
import urllib.error
import urllib.request

import numpy as np

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
STANDALONE = ["--speculative-algorithm", "STANDALONE", "--speculative-num-steps", "4",
              "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "5"]


def rows(meta, name):
    data = meta[name]
    raw = data if isinstance(data, bytes) else base64.b64decode(data)
    return np.frombuffer(raw, dtype=meta[name + "_dtype"]).reshape(meta[name + "_shape"])


def post(port, path, body):
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as reply:
            return reply.status, json.loads(reply.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


class Serving:
    """One moe-serve with ZeroMQ and HTTP ports, a STANDALONE draft, and routing capture."""

    def __init__(self, *flags):
        self.zmq_port, self.http_port = sp.free_port(), sp.free_port()
        self.process = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, "--zmq-endpoint",
                                f"tcp://127.0.0.1:{self.zmq_port}", "--port", str(self.http_port), *flags)
        deadline = sp.now() + 60
        while sp.now() < deadline and self.process.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.http_port}/health", timeout=2):
                    return
            except OSError:
                time.sleep(0.1)  # not listening, or no worker yet (503)
        raise RuntimeError(f"moe-serve {flags} did not become healthy: {sp.terminate(self.process)[1]}")

    def stop(self, test):
        code, output = sp.terminate(self.process)
        test.assertEqual(code, 0, output)


class DraftRoutedExperts(unittest.TestCase):
    def test_the_target_as_draft_gives_golden_rows_for_both(self):
        g = sp.golden()
        server = Serving(*STANDALONE, "--speculative-draft-model-path", sp.MODEL)
        try:
            sock = sp.connect(server.zmq_port)
            for stream in (False, True):
                for i, case in enumerate(g["cases"]):
                    request = dict(sp.golden_request(case, g["max_new_tokens"], f"z{i}{stream}"),
                                   return_draft_routed_experts=True, stream=stream)
                    reply = sp.zmq_client.generate(sock, request)
                    sp.expect_golden(self, case, reply["output_ids"], reply["routed_experts"], g["max_new_tokens"])
                    sp.expect_golden(self, case, reply["output_ids"], reply["draft_routed_experts"],
                                     g["max_new_tokens"])
            sock.close()
            # examples/zmq_client.py --draft-routed-experts asks for both and prints them apart.
            command = [sys.executable, os.path.join(sp.REPO, "examples", "zmq_client.py"), "--endpoint",
                       f"tcp://127.0.0.1:{server.zmq_port}", "--max-new-tokens", str(g["max_new_tokens"]),
                       "--ignore-eos", "--json"]
            for case in g["cases"]:
                command += ["--input-ids", ",".join(map(str, case["prompt_ids"]))]
            for flag in ("--draft-routed-experts", "--routed-experts"):
                run = subprocess.run(command + [flag], capture_output=True, text=True, timeout=300)
                self.assertEqual(run.returncode, 0, run.stderr)
                results = [json.loads(line) for line in run.stdout.splitlines()]
                self.assertEqual(len(results), len(g["cases"]))
                for case, result in zip(g["cases"], results):
                    sp.expect_golden(self, case, result["output_ids"], result["routed_experts"], g["max_new_tokens"])
                    if flag == "--draft-routed-experts":
                        sp.expect_golden(self, case, result["output_ids"], result["draft_routed_experts"],
                                         g["max_new_tokens"])
                    else:
                        self.assertNotIn("draft_routed_experts", result)
            text = [arg for arg in command if arg != "--json"] + ["--draft-routed-experts"]
            run = subprocess.run(text, capture_output=True, text=True, timeout=300)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertEqual(run.stdout.count("\ndraft routed experts: ("), len(g["cases"]), run.stdout)
            case = g["cases"][0]
            status, body = post(server.http_port, "/generate",
                                dict(sp.golden_request(case, g["max_new_tokens"], "h"), return_draft_routed_experts=True))
            self.assertEqual(status, 200, body)
            sp.expect_golden(self, case, body["output_ids"], rows(body["meta_info"], "routed_experts"),
                             g["max_new_tokens"])
            sp.expect_golden(self, case, body["output_ids"], rows(body["meta_info"], "draft_routed_experts"),
                             g["max_new_tokens"])
            # Refused with the field named: draft rows without the target's.
            status, body = post(server.http_port, "/generate",
                                {"input_ids": case["prompt_ids"], "return_draft_routed_experts": True})
            self.assertEqual(status, 400, body)
            self.assertIn("return_draft_routed_experts", json.dumps(body))
        finally:
            server.stop(self)

    def test_a_smaller_draft_has_its_own_shape_and_the_same_positions(self):
        # mixtral-tiny: another architecture with the same tokenizer, other layers and top-k.
        g = sp.golden()
        draft_dir = os.path.join(sp.DATA, "mixtral-tiny")
        with open(os.path.join(draft_dir, "config.json")) as f:
            draft_config = json.load(f)
        server = Serving(*STANDALONE, "--speculative-draft-model-path", draft_dir)
        try:
            case = g["cases"][1]
            request = dict(sp.golden_request(case, g["max_new_tokens"], "m"), return_draft_routed_experts=True,
                           routed_experts_start_len=2)
            status, body = post(server.http_port, "/generate", request)
            self.assertEqual(status, 200, body)
            target = rows(body["meta_info"], "routed_experts")
            draft = rows(body["meta_info"], "draft_routed_experts")
            self.assertEqual(body["output_ids"], case["output_ids"])
            self.assertEqual(target.shape[0], len(case["prompt_ids"]) + g["max_new_tokens"] - 1 - 2)
            self.assertEqual(draft.shape, (target.shape[0], draft_config["num_hidden_layers"],
                                           draft_config["num_experts_per_tok"]))
            self.assertTrue(((draft >= 0) & (draft < draft_config["num_local_experts"])).all())
            # The same request over ZeroMQ, raw bytes: the same draft rows.
            sock = sp.connect(server.zmq_port)
            reply = sp.zmq_client.generate(sock, dict(request, rid="mz", routed_experts_raw=True))
            np.testing.assert_array_equal(reply["draft_routed_experts"], draft)
            sock.close()
            # OpenAI completions: prompt rows apart from the choice's, for the draft too.
            status, body = post(server.http_port, "/v1/completions",
                                {"model": "default", "prompt": case["prompt_ids"], "max_tokens": g["max_new_tokens"],
                                 "temperature": 0, "ignore_eos": True, "return_routed_experts": True,
                                 "return_draft_routed_experts": True})
            self.assertEqual(status, 200, body)
            prompt_rows = rows(body, "prompt_draft_routed_experts")
            choice_rows = rows(body["choices"][0], "draft_routed_experts")
            self.assertEqual(prompt_rows.shape[0], len(case["prompt_ids"]))
            np.testing.assert_array_equal(np.concatenate([prompt_rows, choice_rows])[2:], draft)
        finally:
            server.stop(self)

    def test_a_remote_worker_quantizes_its_draft_as_the_flags_say(self):
        # The worker loads the draft, so its --speculative-draft-model-quantization int4 decides the
        # draft's weights (the front, given none, reads only the draft's config.json): its draft rows are
        # a one-process int4 draft's, which differ from a float draft's; the target's stay golden.
        g = sp.golden()
        draft = [*STANDALONE, "--speculative-draft-model-path", os.path.join(sp.DATA, "mixtral-tiny")]
        int4 = ["--speculative-draft-model-quantization", "int4"]

        def draft_rows(server):
            sock = sp.connect(server.zmq_port)
            rows = []
            for i, case in enumerate(g["cases"]):
                reply = sp.zmq_client.generate(sock, dict(sp.golden_request(case, g["max_new_tokens"], f"q{i}"),
                                                          return_draft_routed_experts=True))
                sp.expect_golden(self, case, reply["output_ids"], reply["routed_experts"], g["max_new_tokens"])
                rows.append(reply["draft_routed_experts"])
            sock.close()
            return rows

        one_process = {}
        for name, flags in (("int4", int4), ("float", [])):
            server = Serving(*draft, *flags)
            try:
                one_process[name] = draft_rows(server)
            finally:
                server.stop(self)
        self.assertTrue(any(not np.array_equal(a, b) for a, b in zip(one_process["int4"], one_process["float"])))
        links = ["--worker-endpoint", f"tcp://127.0.0.1:{sp.free_port()}",
                 "--scheduler-endpoint", f"tcp://127.0.0.1:{sp.free_port()}"]
        worker = sp.start(MOE_SERVE, "--role", "worker", *links, *draft, *int4)
        try:
            front = Serving(*draft, *int4, *links)
            try:
                for remote, local in zip(draft_rows(front), one_process["int4"]):
                    np.testing.assert_array_equal(remote, local)
            finally:
                front.stop(self)
        finally:
            code, output = sp.terminate(worker)
        self.assertEqual(code, 0, output)

    def test_a_server_without_a_draft_model_refuses_the_field(self):
        case = sp.golden()["cases"][0]
        for flags in ([], ["--speculative-algorithm", "NGRAM"]):
            server = Serving(*flags)
            try:
                status, body = post(server.http_port, "/generate",
                                    dict(sp.golden_request(case, 4, "n"), return_draft_routed_experts=True))
                self.assertEqual(status, 400, body)
                self.assertIn("return_draft_routed_experts", json.dumps(body))
                sock = sp.connect(server.zmq_port)
                sock.send(sp.msgpack.packb(dict(sp.golden_request(case, 4, "nz"), return_draft_routed_experts=True)))
                reply = sp.wait_for_reply(self, sock, 30)
                self.assertIn("return_draft_routed_experts", reply["error"]["message"])
                sock.close()
            finally:
                server.stop(self)


if __name__ == "__main__":
    unittest.main()
