"""Tensor and expert parallelism over GPUs, one process per GPU, as users start it: `moe-serve --device cuda
--tp-size 2` (and `--ep-size 2`, and on four GPUs `--tp-size 2 --ep-size 2` and `--tp-size 4`) starts its
ranks, each on its own GPU, joined by NCCL. For each fixture in float32, every golden case, alone, then all
at once from the prefix cache, gets the ids and routing rows of one GPU and of the goldens (transformers,
near-ties aside). Then a rank killed mid-stream fails the request in flight with an error (never a wrong
token or row, never a hang). Skips with fewer than two GPUs.
Usage: gpu_ranks_test.py PATH/TO/moe-serve"""
import json
import os
import signal
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_http"))
import http_harness as hh  # noqa: E402

FIXTURES = ["qwen3-moe-tiny", "qwen2-moe-tiny", "mixtral-tiny", "glm4-moe-tiny"]
COMMON = ("--device", "cuda", "--max-total-tokens", "4096", "--chunked-prefill-size", "7")


def gpus():
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return len([g for g in listed.split(",") if g])
    return len(os.listdir("/proc/driver/nvidia/gpus")) if os.path.isdir("/proc/driver/nvidia/gpus") else 0


def splits():
    runs = [("--tp-size", "2"), ("--ep-size", "2")]
    if gpus() >= 4:
        runs += [("--tp-size", "2", "--ep-size", "2"), ("--tp-size", "4")]
    return runs


def moe_rows_reply(server, case, max_new_tokens):
    """A golden case's reply with the MoE layers' rows only, as the goldens hold them (GLM's first layer is dense)."""
    reply = server.post("/generate", hh.golden_generate(case, max_new_tokens, routed_experts_layers="moe"))
    assert reply.status_code == 200, reply.text
    return reply.json()


def answers(test, fixture, flags):
    """Every golden case alone, then all at once (from the prefix cache): [(ids, rows, cached)] per round."""
    model = os.path.join(hh.sp.DATA, fixture)
    with open(os.path.join(model, "golden.json")) as f:
        golden = json.load(f)
    server = hh.Server(model_path=model, extra_flags=(*COMMON, *flags), startup_timeout_s=300)
    try:
        alone = [moe_rows_reply(server, case, golden["max_new_tokens"]) for case in golden["cases"]]
        replies = [None] * len(golden["cases"])

        def ask(i):
            replies[i] = moe_rows_reply(server, golden["cases"][i], golden["max_new_tokens"])
        threads = [threading.Thread(target=ask, args=(i,)) for i in range(len(replies))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        code, log = server.stop()
    test.assertEqual(code, 0, log)
    return golden, [[(r["output_ids"], hh.decode_routed_experts(r["meta_info"]).tolist(),
                      r["meta_info"]["cached_tokens"]) for r in one_round] for one_round in (alone, replies)]


@unittest.skipIf(gpus() < 2, "needs two GPUs")
class GpuRanks(unittest.TestCase):
    def test_every_split_equals_one_gpu_and_the_goldens(self):
        for fixture in FIXTURES:
            golden, one_gpu = answers(self, fixture, ())
            for split in splits():
                with self.subTest(fixture=fixture, split=split):
                    _, got = answers(self, fixture, split)
                    for round_index, (ours, theirs) in enumerate(zip(got, one_gpu)):
                        for i, ((ids, rows, cached), (ids1, rows1, _)) in enumerate(zip(ours, theirs)):
                            self.assertEqual(ids, ids1, f"round {round_index} case {i}")
                            self.assertEqual(rows, rows1, f"round {round_index} case {i}")
                            hh.sp.expect_golden(self, golden["cases"][i], ids, rows, golden["max_new_tokens"])
                            if round_index == 1:
                                self.assertEqual(cached, len(golden["cases"][i]["prompt_ids"]) - 1)

    def test_a_rank_killed_mid_stream_fails_the_request_in_flight(self):
        server = hh.Server(extra_flags=(*COMMON, "--tp-size", "2"), startup_timeout_s=300)
        try:
            with open(f"/proc/{server.process.pid}/task/{server.process.pid}/children") as f:
                ranks = [int(pid) for pid in f.read().split()]
            self.assertEqual(len(ranks), 1, server.log_text())
            body = {"text": "hello", "stream": True,
                    "sampling_params": {"temperature": 0, "max_new_tokens": 3000, "ignore_eos": True}}
            stream = hh.StreamReader(server.url, body)
            self.assertTrue(stream.started.wait(60), server.log_text())
            time.sleep(0.5)
            os.kill(ranks[0], signal.SIGKILL)
            self.assertTrue(stream.join(180), "the request hung after a rank died\n" + server.log_text())
            self.assertIsNone(server.process.poll(), "rank 0 died with its peer\n" + server.log_text())
            self.assertIn("error", str(stream.events[-1:]).lower(), server.log_text())
            health = hh.requests.get(server.url + "/health_generate", timeout=120)
            self.assertNotEqual(health.status_code, 200, server.log_text())
            print(f"after the kill: {stream.events[-1]}; /health_generate {health.status_code}", flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    hh.run_tests()
