"""What an RL framework's SGLang client sends besides /generate, against a real moe-serve:
/get_weight_version and /update_weight_version (HTTP and ZeroMQ) relabel the weights and every later
reply carries the label; sampling_params.sampling_seed (SGLang's name) makes sampling reproducible
like `seed`; OpenAI's `"model": "default"` is SGLang's and answered with the served name; the
weight-group endpoints (HTTP and ZeroMQ) refuse bad fields naming them and, on the CPU, answer 400
saying NCCL weight groups need --device cuda in a build with NCCL; SGLang's launch flags --dp-size (refused
above 1, saying what to run instead), --trust-remote-code (accepted) and --served-model-name
(defaulting to the model directory's name) are in --help; a field no endpoint knows is refused
naming it (HTTP and ZeroMQ), common no-op ones accepted.
Usage: rl_fields_test.py PATH/TO/moe-serve"""
import os
import subprocess
import time

import msgpack
import requests

import http_harness as h
import serve_process as sp


def sampled(server, **sampling):
    body = {"text": "The capital of France is",
            "sampling_params": dict({"temperature": 1.0, "max_new_tokens": 12, "ignore_eos": True}, **sampling)}
    reply = server.post("/generate", body)
    return reply


class RlFields(h.ServerTest):
    zmq_port = sp.free_port()
    extra_flags = ("--zmq-endpoint", f"tcp://127.0.0.1:{zmq_port}", "--weight-version", "v1")

    def zmq(self, request):
        sock = sp.connect(self.zmq_port)
        try:
            sock.send(msgpack.packb(request))
            return sp.wait_for_reply(self, sock, 60)
        finally:
            sock.close()

    def version_of_a_reply(self):
        reply = self.server.post("/generate", {"text": "Hi", "sampling_params": {"max_new_tokens": 2}})
        return reply.json()["meta_info"]["weight_version"]

    def test_weight_version_endpoints(self):
        self.assertEqual(requests.get(self.server.url + "/get_weight_version", timeout=30).json(), {"weight_version": "v1"})
        reply = self.server.post("/update_weight_version", {"new_version": "step-2"})
        self.assertEqual(reply.json(), {"success": True, "message": "Weight version updated to step-2",
                                        "new_version": "step-2"})
        self.assertEqual(requests.get(self.server.url + "/get_weight_version", timeout=30).json()["weight_version"], "step-2")
        self.assertEqual(requests.get(self.server.url + "/get_model_info", timeout=30).json()["weight_version"], "step-2")
        self.assertEqual(self.version_of_a_reply(), "step-2")

        over_zmq = self.zmq({"op": "update_weight_version", "rid": "w1", "new_version": "step-3"})
        self.assertEqual((over_zmq["success"], over_zmq["weight_version"], over_zmq["meta_info"]["id"]),
                         (True, "step-3", "w1"))
        self.assertEqual(self.zmq({"op": "get_weight_version"})["weight_version"], "step-3")
        self.assertEqual(self.version_of_a_reply(), "step-3")

        missing = self.server.post("/update_weight_version", {"abort_all_requests": True})
        self.assertEqual(missing.status_code, 400)
        self.assertIn("new_version", missing.text)
        self.assertEqual(self.zmq({"op": "update_weight_version"})["error"]["code"], 400)
        self.server.post("/update_weight_version", {"new_version": "v1"})

    def test_sampling_seed_is_sglangs_name_for_the_seed(self):
        first, again, other = (sampled(self.server, sampling_seed=s).json()["output_ids"] for s in (7, 7, 8))
        self.assertEqual(first, again)
        self.assertNotEqual(first, other)
        self.assertEqual(sampled(self.server, seed=7).json()["output_ids"], first)
        clash = sampled(self.server, seed=7, sampling_seed=8)
        self.assertEqual(clash.status_code, 400)
        self.assertIn("sampling_params.sampling_seed", clash.text)
        over_zmq = self.zmq({"text": "The capital of France is", "sampling_params": {
            "temperature": 1.0, "max_new_tokens": 12, "ignore_eos": True, "sampling_seed": 7}})
        self.assertEqual(over_zmq["output_ids"], first)

    def test_model_default_is_the_served_model(self):
        reply = self.server.post("/v1/completions", {"model": "default", "prompt": "Hi", "max_tokens": 2})
        self.assertEqual(reply.status_code, 200, reply.text)
        self.assertEqual(reply.json()["model"], h.MODEL_NAME)
        self.assertEqual(self.server.post("/v1/completions", {"model": "other", "prompt": "Hi"}).status_code, 404)

    def test_unknown_fields_are_refused_naming_them_and_common_ones_accepted(self):
        chat = {"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
        for path, body, field in (
                ("/generate", {"text": "Hi", "regex": "a+"}, "regex"),
                ("/generate", {"text": "Hi", "sampling_params": {"json_schema": "{}"}}, "sampling_params.json_schema"),
                ("/generate", {"text": "Hi", "return_hidden_states": True}, "return_hidden_states"),
                ("/v1/completions", {"prompt": "Hi", "max_tokens": 2, "guided_regex": "a+"}, "guided_regex"),
                ("/v1/chat/completions", dict(chat, top_a=0.5), "top_a")):
            reply = self.server.post(path, body)
            self.assertEqual(reply.status_code, 400, (path, reply.text))
            self.assertEqual(reply.json()["error"]["param"], field, reply.text)
        for path, body in (("/generate", {"text": "Hi", "log_metrics": False, "return_hidden_states": False,
                                          "sampling_params": {"max_new_tokens": 2, "no_stop_trim": False}}),
                           ("/v1/completions", {"prompt": "Hi", "max_tokens": 2, "user": "u1"}),
                           ("/v1/chat/completions", dict(chat, user="u1", parallel_tool_calls=True))):
            reply = self.server.post(path, body)
            self.assertEqual(reply.status_code, 200, (path, reply.text))
        refused = self.zmq({"text": "Hi", "sampling_params": {"max_new_tokens": 2}, "regex": "a+"})
        self.assertEqual(refused["error"]["code"], 400)
        self.assertIn("request.regex", refused["error"]["message"])

    def test_weight_groups_need_cuda_and_nccl_and_refuse_bad_fields(self):
        join = {"master_address": "127.0.0.1", "master_port": 29500, "rank_offset": 1, "world_size": 2,
                "group_name": "g", "backend": "nccl"}
        receive = {"names": ["model.embed_tokens.weight"], "dtypes": ["bfloat16"], "shapes": [[8, 4]],
                   "group_name": "g", "weight_version": "step-9", "flush_cache": True}
        for path, body in (("/init_weights_update_group", join), ("/update_weights_from_distributed", receive),
                           ("/destroy_weights_update_group", {"group_name": "g"})):
            reply = self.server.post(path, body)
            self.assertEqual(reply.status_code, 400, (path, reply.text))
            answer = reply.json()
            self.assertFalse(answer["success"])
            self.assertIn("need --device cuda in a build with NCCL", answer["message"])
            self.assertEqual(answer["weight_version"], "v1")
        for path, body, field in (("/init_weights_update_group", dict(join, rank_offset=0), "rank_offset"),
                                  ("/init_weights_update_group", dict(join, backend="gloo"), "backend"),
                                  ("/update_weights_from_distributed", dict(receive, dtypes=["int8"]), "dtypes[0]"),
                                  ("/update_weights_from_distributed", dict(receive, shapes=[]), "shapes"),
                                  ("/destroy_weights_update_group", {"group": "g"}, "group")):
            reply = self.server.post(path, body)
            self.assertEqual(reply.status_code, 400, (path, reply.text))
            self.assertEqual(reply.json()["error"]["param"], field, reply.text)

        over_zmq = self.zmq(dict(join, op="init_weights_update_group", rid="j1"))
        self.assertEqual((over_zmq["success"], over_zmq["meta_info"]["id"]), (False, "j1"))
        self.assertIn("need --device cuda in a build with NCCL", over_zmq["message"])
        refused = self.zmq(dict(receive, op="update_weights_from_distributed", rid="u1", names=["a", "b"]))
        self.assertEqual(refused["error"]["code"], 400)
        self.assertIn("request.dtypes: must give one dtype per name", refused["error"]["message"])
        self.assertEqual(self.version_of_a_reply(), "v1")  # still serving the same weights


class LaunchFlags(h.unittest.TestCase):
    def test_help_lists_sglangs_flags(self):
        usage = " ".join(subprocess.run([h.MOE_SERVE, "--help"], capture_output=True, text=True).stdout.split())
        for flag in ("--dp-size", "--trust-remote-code", "--served-model-name"):
            self.assertIn(flag, usage)
        self.assertIn("runs no code from the model directory", usage)

    def test_dp_size_above_one_says_what_to_run(self):
        run = subprocess.run([h.MOE_SERVE, "--model-path", sp.MODEL, "--dp-size", "2"], capture_output=True, text=True,
                             timeout=60)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("--dp-size 2", run.stderr + run.stdout)
        self.assertIn("load balancer", run.stderr + run.stdout)

    def test_the_served_name_defaults_to_the_directory_and_trust_remote_code_is_accepted(self):
        port = sp.free_port()
        server = subprocess.Popen([h.MOE_SERVE, "--model-path", sp.MODEL + os.sep, "--tokenizer-path", sp.TOKENIZER,
                                   "--port", str(port), "--trust-remote-code", "--dp-size", "1", "--log-level", "warn"],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        try:
            models = None
            for _ in range(300):
                try:
                    models = requests.get(f"http://127.0.0.1:{port}/v1/models", timeout=2).json()
                    break
                except requests.ConnectionError:
                    self.assertIsNone(server.poll(), "moe-serve exited")
                    time.sleep(0.1)
            self.assertEqual(models["data"][0]["id"], "qwen3-moe-tiny")
        finally:
            code, log = sp.terminate(server)
        self.assertEqual(code, 0, log)


if __name__ == "__main__":
    h.run_tests()
