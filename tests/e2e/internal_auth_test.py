"""The internal sockets of a split deployment (a front and a `moe-serve --role worker` over tcp://)
accept only peers holding the deployment's key (--internal-key-file, ZeroMQ CURVE). A stranger's
forged heartbeat, which the scheduler would take for a restarted worker (failing every live request
and emptying the prefix cache), is refused at the handshake and logged, whether the stranger speaks
no CURVE, a key pair of its own with the deployment's public key, or a wrong server key; live
requests finish golden and the prefix cache stays. The same frame from a key holder is acted on,
which proves it is one the scheduler would obey. tcp:// endpoints without a key, and a key file
others can read, stop the start naming the flag.
Usage: internal_auth_test.py PATH/TO/moe-serve"""
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import unittest

import msgpack
import zmq

import serve_process as sp

MOE_SERVE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get("MOE_SERVE", "moe-serve")
HEARTBEAT = 13  # msg::MessageKind::Heartbeat


def protocol_version():
    """msg::kProtocolVersion, read where it is defined, so the forged frame follows the protocol."""
    with open(os.path.join(sp.REPO, "include", "moe", "messages.h")) as f:
        return int(re.search(r"kProtocolVersion = (\d+);", f.read()).group(1))



def forged_heartbeat(instance):
    """A Heartbeat frame (docs/zmq-protocol.md, internal messages) from a worker instance nobody started:
    [version, kind, [instance, WorkerSettings]]. The scheduler treats any new instance as a restarted
    worker before it compares the settings, so these need not match."""
    settings = [1, 4096, 512, True, False, 1, 1, 1, 0, 0, 4, 0, "cpu", "grouped", "none", 0, "float32", "", 0, 0, 0, 0,
                ""]
    return msgpack.packb([protocol_version(), HEARTBEAT, [instance, settings]])


def read_secret(path):
    with open(path) as f:
        return f.read().strip().encode()


class InternalAuth(unittest.TestCase):
    def start_deployment(self):
        worker_port, scheduler_port = sp.free_port(), sp.free_port()
        self.scheduler = f"tcp://127.0.0.1:{scheduler_port}"
        self.worker_endpoint = f"tcp://127.0.0.1:{worker_port}"
        links = ["--worker-endpoint", self.worker_endpoint, "--scheduler-endpoint", self.scheduler]
        self.client_port = sp.free_port()
        self.worker = sp.start(MOE_SERVE, "--role", "worker", *links)
        self.server = sp.start(MOE_SERVE, "--tokenizer-path", sp.TOKENIZER, *links,
                               "--zmq-endpoint", f"tcp://127.0.0.1:{self.client_port}", "--worker-timeout-ms", "5000")
        self.sock = sp.connect(self.client_port)
        self.forgers = []

    def tearDown(self):
        for forger in getattr(self, "forgers", []):
            forger.close(linger=0)
        if hasattr(self, "sock"):
            self.sock.close()
        for process in (getattr(self, "server", None), getattr(self, "worker", None)):
            if process is not None and process.poll() is None:
                process.kill()
                process.communicate()

    def forger(self, endpoint, secret=None, server_public=None):
        """A PUSH socket connected to `endpoint`: plain, or CURVE with `secret` (Z85) and `server_public`."""
        sock = zmq.Context.instance().socket(zmq.PUSH)
        sock.setsockopt(zmq.LINGER, 0)
        if secret is not None:
            sock.curve_secretkey = secret
            sock.curve_publickey = zmq.curve_public(secret)
            sock.curve_serverkey = server_public
        sock.connect(endpoint)
        self.forgers.append(sock)
        return sock

    def reply(self, case, rid, max_new_tokens):
        """The reply to a golden request, sent again while the front has no worker yet (503)."""
        deadline = sp.now() + 60
        while True:
            self.sock.send(msgpack.packb(sp.golden_request(case, max_new_tokens, rid)))
            reply = sp.wait_for_reply(self, self.sock, 60)
            if "error" not in reply or reply["error"]["code"] != 503 or sp.now() > deadline:
                return reply
            time.sleep(0.2)

    def expect_golden(self, case, reply, max_new_tokens):
        self.assertNotIn("error", reply)
        sp.expect_golden(self, case, reply["output_ids"], sp.zmq_client.routed_experts(reply["meta_info"]),
                         max_new_tokens)

    def test_forged_heartbeats_from_strangers_are_refused_and_logged_never_acted_on(self):
        self.start_deployment()
        g = sp.golden()
        case, tokens = g["cases"][1], g["max_new_tokens"]
        self.expect_golden(case, self.reply(case, "warm", tokens), tokens)  # its prompt is now cached
        deployment_public = zmq.curve_public(read_secret(sp.KEY_FILE))
        own_secret = zmq.curve_keypair()[1]
        strangers = [self.forger(self.scheduler),  # speaks no CURVE
                     self.forger(self.scheduler, own_secret, deployment_public),  # knows the public key only
                     self.forger(self.scheduler, own_secret, zmq.curve_keypair()[0]),  # a wrong server key
                     self.forger(self.worker_endpoint)]  # the worker's inbox: forged steps
        # Long requests in flight while the forgeries arrive.
        for i in range(2):
            self.sock.send(msgpack.packb(sp.golden_request(case, 400, f"long{i}")))
        time.sleep(0.3)
        for instance in range(1, 4):
            for stranger in strangers:
                try:
                    stranger.send(forged_heartbeat(0xF0F0 + instance), zmq.NOBLOCK)
                except zmq.Again:
                    pass  # refused at the handshake: ZeroMQ never has a peer to queue it for
            time.sleep(0.4)
        for i in range(2):
            reply = sp.wait_for_reply(self, self.sock, 120)
            self.assertNotIn("error", reply, f"a live request failed after the forged heartbeats: {reply}")
            self.assertEqual(reply["output_ids"][:tokens], case["output_ids"])
        again = self.reply(case, "again", tokens)
        self.expect_golden(case, again, tokens)
        self.assertGreater(again["meta_info"]["cached_tokens"], 0, "the prefix cache was emptied")

        # Control: a holder of the key is a member of the deployment, and the same frame from it is obeyed.
        member = self.forger(self.scheduler, read_secret(sp.KEY_FILE), deployment_public)
        self.sock.send(msgpack.packb(sp.golden_request(case, 4000, "victim")))
        time.sleep(0.5)
        member.send(forged_heartbeat(0xF0F0))
        reply = sp.wait_for_reply(self, self.sock, 30)
        self.assertIn("error", reply)
        self.assertIn("restarted", reply["error"]["message"])

        _, front_log = sp.terminate(self.server)
        _, worker_log = sp.terminate(self.worker)
        self.assertIn(f"internal endpoint {self.scheduler}: refused a connection that did not authenticate", front_log)
        self.assertIn("refused a connection from 127.0.0.1: its CURVE key is not this deployment's", front_log)
        self.assertIn(f"internal endpoint {self.worker_endpoint}: refused a connection", worker_log)
        print("front log:", *[line for line in front_log.splitlines() if "refused" in line], sep="\n  ")

    def expect_start_refused(self, flags, *named):
        run = subprocess.run([MOE_SERVE, *flags], capture_output=True, text=True, timeout=120)
        self.assertEqual(run.returncode, 1, run.stdout + run.stderr)
        for text in named:
            self.assertIn(text, run.stdout + run.stderr)

    def test_tcp_endpoints_need_a_key_only_the_owner_can_read(self):
        tcp = ["--worker-endpoint", f"tcp://127.0.0.1:{sp.free_port()}",
               "--scheduler-endpoint", f"tcp://127.0.0.1:{sp.free_port()}"]
        for role in (["--role", "worker"], ["--port", "0", "--zmq-endpoint", f"tcp://127.0.0.1:{sp.free_port()}"]):
            self.expect_start_refused(["--model-path", sp.MODEL, *role, *tcp], "--worker-endpoint tcp://",
                                      "--internal-key-file", "--make-internal-key")
        with tempfile.TemporaryDirectory() as directory:
            key = os.path.join(directory, "deployment.key")
            made = subprocess.run([MOE_SERVE, "--make-internal-key", key], capture_output=True, text=True, timeout=60)
            self.assertEqual(made.returncode, 0, made.stderr)
            self.assertEqual(stat.S_IMODE(os.stat(key).st_mode), 0o600)
            self.assertEqual(len(read_secret(key)), 40)
            zmq.curve_public(read_secret(key))  # a CURVE secret key in Z85
            again = subprocess.run([MOE_SERVE, "--make-internal-key", key], capture_output=True, text=True, timeout=60)
            self.assertNotEqual(again.returncode, 0, "an existing key was overwritten")
            os.chmod(key, 0o644)
            self.expect_start_refused(["--model-path", sp.MODEL, "--role", "worker", *tcp, "--internal-key-file", key],
                                      "can be read by other users: chmod 600")
            os.chmod(key, 0o600)
            with open(key, "w") as f:
                f.write("not a key\n")
            self.expect_start_refused(["--model-path", sp.MODEL, "--role", "worker", *tcp, "--internal-key-file", key],
                                      "does not hold a key")


if __name__ == "__main__":
    unittest.main()
