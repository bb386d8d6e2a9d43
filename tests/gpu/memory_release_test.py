"""GPU memory given back between rollouts, on a machine with a GPU and torch: moe-serve --device cuda
(its KV pool sized by the default --mem-fraction-static) releases the tag kv_cache, then weights
(/release_memory_occupation); the device's free memory, read by torch in this process (cudaMemGetInfo),
grows by at least most of the pool's bytes and then by at least half the checkpoint's; torch then
allocates and writes most of the free memory, as a colocated trainer would, and frees it; after
/resume_memory_occupation the free memory is taken again and the replies (ids and routing rows) equal
those before the release. Prints the figures. Skips without torch or a GPU.
Usage: memory_release_test.py PATH/TO/moe-serve"""
import os
import sys
import unittest

import requests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_http"))
import http_harness as hh  # noqa: E402

try:
    import torch
except ImportError:
    torch = None

ADMIN_KEY = "admin-secret"
GIB = 1 << 30


def gpus():
    return torch.cuda.device_count() if torch is not None else 0


def free_bytes():
    torch.cuda.synchronize()
    return torch.cuda.mem_get_info()[0]


def checkpoint_bytes():
    return sum(os.path.getsize(os.path.join(hh.sp.MODEL, f)) for f in os.listdir(hh.sp.MODEL)
               if f.endswith(".safetensors"))


@unittest.skipIf(gpus() < 1, "needs torch and a GPU")
class GpuMemoryRelease(unittest.TestCase):
    def change(self, server, op, tags):
        reply = server.post("/" + op, {"tags": tags}, headers={"Authorization": f"Bearer {ADMIN_KEY}"})
        self.assertEqual(reply.status_code, 200, reply.text)

    def test_released_memory_serves_a_colocated_allocation_and_comes_back(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        torch.cuda.init()
        golden = hh.sp.golden()
        cases = golden["cases"][:3]
        server = hh.Server(extra_flags=("--device", "cuda", "--admin-api-key", ADMIN_KEY), startup_timeout_s=300)
        try:
            info = requests.get(server.url + "/get_server_info", timeout=10).json()
            pool_bytes = info["max_total_num_tokens"] * info["kv_bytes_per_token"]
            before = [hh.golden_reply(server, case, golden["max_new_tokens"]) for case in cases]

            serving = free_bytes()
            self.change(server, "release_memory_occupation", ["kv_cache"])
            without_kv = free_bytes()
            self.change(server, "release_memory_occupation", ["weights"])
            without_both = free_bytes()
            print(f"free GiB: serving {serving / GIB:.2f}, kv_cache released {without_kv / GIB:.2f} (pool "
                  f"{pool_bytes / GIB:.2f}), weights released too {without_both / GIB:.2f} (checkpoint "
                  f"{checkpoint_bytes() / GIB:.3f})", flush=True)
            self.assertGreaterEqual(without_kv - serving, 0.9 * pool_bytes)
            self.assertGreaterEqual(without_both - without_kv, 0.5 * checkpoint_bytes())

            # The colocated trainer's turn: most of what is free, written, then given back.
            taken = torch.empty(int(0.9 * without_both), dtype=torch.uint8, device="cuda:0")
            taken.fill_(7)
            torch.cuda.synchronize()
            del taken
            torch.cuda.empty_cache()

            self.change(server, "resume_memory_occupation", ["weights", "kv_cache"])
            resumed = free_bytes()
            print(f"free GiB after the resume {resumed / GIB:.2f}", flush=True)
            self.assertLessEqual(resumed - serving, 0.05 * pool_bytes)
            for case, expected in zip(cases, before):
                hh.expect_same_reply(self, hh.golden_reply(server, case, golden["max_new_tokens"]), expected)
        finally:
            code, log = server.stop()
        self.assertEqual(code, 0, log)


if __name__ == "__main__":
    hh.run_tests()
