"""A remote model worker (`moe-serve --role worker`) is accepted only with the front's weights and the
front's way of computing: one started with --quantization int8 or --kernel-dtype bf16 against a front
without, or on other weights of the same shape and file sizes (another training checkpoint), is refused
with 503 naming what differs and both values; after update_weights_from_disk a worker restarted on its
old --model-path is refused naming the weights serving now, and one started on them is accepted and
its replies carry their weight_version.
Usage: worker_identity_test.py PATH/TO/moe-serve"""
import json
import os
import shutil
import signal
import struct
import sys
import tempfile
import time
import unittest

import msgpack
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")


def copy_with_other_weights(out_dir):
    """sp.MODEL copied to out_dir with the sign of every value of its largest BF16 tensor flipped: the
    same files, names, shapes and sizes, other weights."""
    shutil.copytree(sp.MODEL, out_dir)
    biggest = None
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".safetensors"):
            continue
        with open(os.path.join(out_dir, name), "rb") as f:
            header_bytes = struct.unpack("<Q", f.read(8))[0]
            header = json.loads(f.read(header_bytes))
        for tensor, info in header.items():
            if tensor == "__metadata__" or info["dtype"] != "BF16":
                continue
            begin, end = info["data_offsets"]
            if biggest is None or end - begin > biggest[2] - biggest[1]:
                biggest = (name, 8 + header_bytes + begin, 8 + header_bytes + end)
    name, begin, end = biggest
    with open(os.path.join(out_dir, name), "r+b") as f:
        f.seek(begin)
        data = bytearray(f.read(end - begin))
        for high_byte in range(1, len(data), 2):  # little-endian bf16: the sign is the high byte's top bit
            data[high_byte] ^= 0x80
        f.seek(begin)
        f.write(data)


class WorkerIdentity(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="moe_worker_identity_")
        cls.other = os.path.join(cls.tmp, "other-weights")
        copy_with_other_weights(cls.other)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    def setUp(self):
        worker_port, scheduler_port, client_port = sp.free_port(), sp.free_port(), sp.free_port()
        self.links = ["--worker-endpoint", f"tcp://127.0.0.1:{worker_port}",
                      "--scheduler-endpoint", f"tcp://127.0.0.1:{scheduler_port}"]
        self.worker = None
        self.server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, *self.links,
                               "--zmq-endpoint", f"tcp://127.0.0.1:{client_port}", "--worker-timeout-ms", "2000")
        self.sock = sp.connect(client_port)

    def tearDown(self):
        self.sock.close()
        for process in (self.server, self.worker):
            if process is not None and process.poll() is None:
                process.kill()
            if process is not None:
                process.communicate()

    def start_worker(self, *flags, model=sp.MODEL):
        if self.worker is not None:
            self.worker.send_signal(signal.SIGKILL)
            self.worker.communicate()
        self.worker = sp.start(MOE_SERVE, "--role", "worker", *self.links, *flags, model=model)

    def ask_until(self, rid, done):
        """Sends a short golden request until `done(reply)` (the front hears from a new worker within
        its first heartbeats; until then it answers as it did for the last one); the last reply."""
        g = sp.golden()
        deadline = sp.now() + 60
        while True:
            self.sock.send(msgpack.packb(sp.golden_request(g["cases"][0], 4, f"{rid}{int(sp.now() * 1000)}")))
            reply = sp.wait_for_reply(self, self.sock, 60)
            if done(reply) or sp.now() > deadline:
                return reply
            time.sleep(0.3)

    def answer_once_accepted(self, rid):
        reply = self.ask_until(rid, lambda r: "error" not in r)
        self.assertNotIn("error", reply)
        return reply

    def expect_refused(self, *named):
        def refused(reply):
            self.assertIn("error", reply, "a worker that differs from the front was given work")
            message = reply["error"]["message"]
            return "refused" in message and all(text in message for text in named)
        reply = self.ask_until("refused", refused)
        self.assertEqual(reply["error"]["code"], 503)
        for text in named:
            self.assertIn(text, reply["error"]["message"])

    def test_a_quantized_worker_is_refused_naming_the_flag_and_both_values(self):
        self.start_worker("--quantization", "int8")
        self.expect_refused("--quantization is 'int8', the scheduler's 'none'")
        _, log = sp.terminate(self.server)
        self.assertIn("refusing model worker", log)

    def test_a_worker_with_bf16_products_is_refused_naming_every_difference(self):
        self.start_worker("--kernel-dtype", "bf16", "--enable-return-router-weights")
        self.expect_refused("--kernel-dtype is 'bf16', the scheduler's 'float32'",
                            "(--enable-return-router-weights) is on, the scheduler's off")

    def test_a_worker_on_other_weights_of_equal_sizes_is_refused(self):
        self.start_worker(model=self.other)
        self.expect_refused("other weights", "start the worker with --model-path " + sp.MODEL)

    def test_after_a_weight_update_only_a_worker_on_the_new_weights_is_accepted(self):
        self.start_worker()
        reply = self.answer_once_accepted("before")
        self.assertEqual(reply["meta_info"]["weight_version"], "default")
        self.sock.send(msgpack.packb({"op": "update_weights_from_disk", "rid": "u", "model_path": self.other,
                                      "weight_version": "step-2"}))
        answer = sp.wait_for_reply(self, self.sock, 120)
        self.assertTrue(answer["success"], answer)
        new_weights = self.answer_once_accepted("updated")
        self.assertEqual(new_weights["meta_info"]["weight_version"], "step-2")
        # Restarted on its --model-path: the old weights, which must not answer as step-2.
        self.start_worker()
        self.expect_refused("other weights", f"{self.other}, weight version 'step-2'",
                            "start the worker with --model-path " + self.other)
        # Started on the weights serving now: accepted, and it answers as the worker before it did.
        self.start_worker(model=self.other)
        again = self.answer_once_accepted("restarted")
        self.assertEqual(again["meta_info"]["weight_version"], "step-2")
        self.assertEqual(again["output_ids"], new_weights["output_ids"])
        self.assertEqual(again["meta_info"]["routed_experts"], new_weights["meta_info"]["routed_experts"])


if __name__ == "__main__":
    unittest.main()
