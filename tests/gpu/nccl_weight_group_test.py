"""Weights from a trainer over NCCL, on a machine with two GPUs and torch: the trainer (this process,
torch on GPU 0) makes its group as SGLang's init_custom_process_group does (rendezvous over
tcp://127.0.0.1:PORT, a PrefixStore of the group's name, _new_process_group_helper with nccl) while
moe-serve --device cuda on GPU 1, serving checkpoint A, answers /init_weights_update_group as rank 1.
It then broadcasts checkpoint B's tensors (random weights of A's shapes, from moe-make-checkpoint) in
two /update_weights_from_distributed calls, one dist.broadcast per tensor in the order of `names`.
After the second call every reply (ids and routing rows) equals what a fresh server on B answers and
carries B's weight_version; /destroy_weights_update_group leaves the group. Skips without torch or
with fewer than two GPUs.
On one GPU the trainer and moe-serve share GPU 0, which NCCL refuses when the two ranks join: the
rendezvous with real torch, the NCCL id read from its store and the bootstrap still run up to that
refusal (a wrong id or key would hang or fail otherwise), the update fails with NCCL's reason, and the
server keeps serving its own weights.
Usage: nccl_weight_group_test.py PATH/TO/moe-serve PATH/TO/moe-make-checkpoint"""
import datetime
import inspect
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e_http"))
import http_harness as hh  # noqa: E402

try:
    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d
except ImportError:
    torch = None

MAKE_CHECKPOINT = "moe-make-checkpoint"
GROUP = "weight_update_group"
# The safetensors dtype names of the tensors moe-make-checkpoint writes, as torch names them.
TORCH_DTYPES = {"BF16": "bfloat16", "F16": "float16", "F32": "float32"}


def gpus():
    return torch.cuda.device_count() if torch is not None else 0


def use_trainers_nccl():
    """moe-serve loads the libnccl.so.2 torch loads (pip's nvidia-nccl), where there is one: NCCL refuses
    ranks of different versions, and the system's NCCL, which moe-serve was built against, may be older."""
    for root in sys.path:
        folder = os.path.join(root, "nvidia", "nccl", "lib")
        if os.path.isfile(os.path.join(folder, "libnccl.so.2")):
            os.environ["LD_LIBRARY_PATH"] = folder + os.pathsep + os.environ.get("LD_LIBRARY_PATH", "")
            return


def read_checkpoint(directory):
    """Every tensor of a checkpoint directory, in the index's order: (name, torch dtype name, tensor on the CPU)."""
    with open(os.path.join(directory, "model.safetensors.index.json")) as f:
        weight_map = json.load(f)["weight_map"]
    tensors = []
    for shard in sorted(set(weight_map.values())):
        with open(os.path.join(directory, shard), "rb") as f:
            data = f.read()
        header_size = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8:8 + header_size])
        body = data[8 + header_size:]
        for name, entry in header.items():
            if name == "__metadata__":
                continue
            begin, end = entry["data_offsets"]
            dtype = TORCH_DTYPES[entry["dtype"]]
            values = torch.frombuffer(bytearray(body[begin:end]), dtype=getattr(torch, dtype)).reshape(entry["shape"])
            tensors.append((name, dtype, values))
    return tensors


def trainer_group(port, world_size, timeout=datetime.timedelta(minutes=5)):
    """Rank 0 of the group, made the way SGLang's init_custom_process_group makes it (read, not copied)."""
    store, rank, size = next(c10d.rendezvous(f"tcp://127.0.0.1:{port}", 0, world_size, timeout=timeout))
    store.set_timeout(timeout)
    store = c10d.PrefixStore(GROUP, store)
    options = "backend_options" if "backend_options" in inspect.signature(c10d._new_process_group_helper).parameters \
        else "pg_options"
    group, _ = c10d._new_process_group_helper(size, rank, [], c10d.Backend("nccl"), store, group_name=GROUP,
                                              timeout=timeout, **{options: None})
    c10d._world.pg_group_ranks[group] = {i: i for i in range(size)}
    return group


def in_background(call):
    """Runs `call` on a thread; the returned function joins it and gives its result (or raises its error)."""
    out = {}

    def run():
        try:
            out["value"] = call()
        except BaseException as e:  # noqa: BLE001  (re-raised on the caller's thread)
            out["error"] = e
    thread = threading.Thread(target=run)
    thread.start()

    def result():
        thread.join(600)
        if "error" in out:
            raise out["error"]
        return out["value"]
    return result


@unittest.skipIf(gpus() < 1, "needs torch and a GPU")
class NcclWeightGroupOnOneGpu(unittest.TestCase):
    def test_ranks_sharing_a_gpu_fail_the_update_with_nccls_reason_and_keep_the_weights(self):
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        use_trainers_nccl()
        golden = hh.sp.golden()
        case = golden["cases"][0]
        with open(os.path.join(hh.sp.MODEL, "config.json")) as f:
            hidden = json.load(f)["hidden_size"]
        server = hh.Server(extra_flags=("--device", "cuda", "--weight-version", "A"), startup_timeout_s=300)
        try:
            before = hh.golden_reply(server, case, golden["max_new_tokens"])
            port = hh.sp.free_port()
            joined = in_background(lambda: server.post("/init_weights_update_group", {
                "master_address": "127.0.0.1", "master_port": port, "rank_offset": 1, "world_size": 2,
                "group_name": GROUP, "backend": "nccl"}, timeout=120))
            group = trainer_group(port, 2, timeout=datetime.timedelta(seconds=120))
            reply = joined()
            self.assertEqual(reply.status_code, 200, reply.text)  # torch's store and our client agree

            weight = torch.ones(hidden, dtype=torch.bfloat16)
            answer = in_background(lambda: server.post("/update_weights_from_distributed", {
                "names": ["model.norm.weight"], "dtypes": ["bfloat16"], "shapes": [[hidden]], "group_name": GROUP,
                "weight_version": "B"}, timeout=300))
            with self.assertRaises(Exception) as trainer_error:
                dist.broadcast(weight.to("cuda:0"), src=0, group=group)
                torch.cuda.synchronize()
            reply = answer()
            self.assertNotEqual(reply.status_code, 200, reply.text)
            # Both ranks reached NCCL's bootstrap with torch's id: only then is a shared GPU seen.
            self.assertIn("Duplicate GPU", reply.text)
            print("trainer:", str(trainer_error.exception).splitlines()[0], "\nserver:", reply.text, flush=True)

            after = hh.golden_reply(server, case, golden["max_new_tokens"])
            hh.expect_same_reply(self, after, before)
            self.assertEqual(after["meta_info"]["weight_version"], "A")
            left = server.post("/destroy_weights_update_group", {"group_name": GROUP})
            self.assertEqual(left.status_code, 200, left.text)
        finally:
            code, log = server.stop()
        self.assertEqual(code, 0, log)


@unittest.skipIf(gpus() < 2, "needs torch and two GPUs")
class NcclWeightGroup(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.cuda.init()  # GPU 0 is the trainer's; moe-serve sees only GPU 1
        os.environ["CUDA_VISIBLE_DEVICES"] = "1"
        use_trainers_nccl()
        cls.golden = hh.sp.golden()
        cls.cases = cls.golden["cases"][:3]
        cls.tmp = tempfile.mkdtemp(prefix="moe-nccl-")
        cls.checkpoint_b = os.path.join(cls.tmp, "b")
        subprocess.run([MAKE_CHECKPOINT, "--config", os.path.join(hh.sp.MODEL, "config.json"), "--out",
                        cls.checkpoint_b, "--seed", "5"], check=True, capture_output=True, timeout=300)
        fresh = hh.Server(extra_flags=("--device", "cuda", "--weight-version", "B"), model_path=cls.checkpoint_b)
        try:
            cls.fresh_b = [cls.generate(fresh, case) for case in cls.cases]
        finally:
            fresh.stop()

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def generate(cls, server, case):
        return hh.golden_reply(server, case, cls.golden["max_new_tokens"])

    def broadcast(self, server, group, tensors, version):
        """One /update_weights_from_distributed call and its broadcasts, as a trainer sends them."""
        answer = in_background(lambda: server.post("/update_weights_from_distributed", {
            "names": [name for name, _, _ in tensors], "dtypes": [dtype for _, dtype, _ in tensors],
            "shapes": [list(values.shape) for _, _, values in tensors], "group_name": GROUP,
            "weight_version": version, "flush_cache": True}, timeout=600))
        for _, _, values in tensors:
            dist.broadcast(values.to("cuda:0"), src=0, group=group)
        torch.cuda.synchronize()
        reply = answer()
        self.assertEqual(reply.status_code, 200, reply.text)
        self.assertEqual(reply.json()["weight_version"], version)

    def test_broadcast_weights_serve_as_a_fresh_server_on_them(self):
        server = hh.Server(extra_flags=("--device", "cuda", "--weight-version", "A"))
        try:
            port = hh.sp.free_port()
            joined = in_background(lambda: server.post("/init_weights_update_group", {
                "master_address": "127.0.0.1", "master_port": port, "rank_offset": 1, "world_size": 2,
                "group_name": GROUP, "backend": "nccl"}, timeout=600))
            group = trainer_group(port, 2)
            reply = joined()
            self.assertEqual(reply.status_code, 200, reply.text)

            tensors = read_checkpoint(self.checkpoint_b)
            half = len(tensors) // 2
            self.broadcast(server, group, tensors[:half], "B-half")
            self.broadcast(server, group, tensors[half:], "B")

            for case, expected in zip(self.cases, self.fresh_b):
                reply = self.generate(server, case)
                hh.expect_same_reply(self, reply, expected)
                self.assertEqual(reply["meta_info"]["weight_version"], "B")
            self.assertNotEqual(self.fresh_b[0]["output_ids"], self.cases[0]["output_ids"])  # B is not A

            left = server.post("/destroy_weights_update_group", {"group_name": GROUP})
            self.assertEqual(left.status_code, 200, left.text)
            dist.destroy_process_group(group)
        finally:
            code, log = server.stop()
        self.assertEqual(code, 0, log)


if __name__ == "__main__":
    if len(sys.argv) > 2:
        MAKE_CHECKPOINT = sys.argv.pop(2)
    hh.run_tests()
