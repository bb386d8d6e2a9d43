"""Requests are scoped to their client, and admin endpoints to the admin key, on a server with an HTTP port
(--api-key, --admin-api-key) and a ZeroMQ endpoint: two ZeroMQ clients and HTTP each run a request of
the same rid at once (nobody can squat or probe another's rid); HTTP /abort_request by rid ends only
the HTTP one, abort_all needs the admin key and with it ends every client's; the admin endpoints refuse
the API key alone, over ZeroMQ too (`admin_api_key`); a client reuses its own rid once its request ended; /update_weights_from_disk on a
checkpoint whose files are links to /etc/passwd answers with the path and a reason of the server's,
never the bytes it read.
Usage: isolation_test.py PATH/TO/moe-serve"""
import json
import os
import shutil
import tempfile
import threading
import unittest

import msgpack

import http_harness as hh
import serve_process as sp

USER, ADMIN = "user-key", "admin-key"
ZMQ_PORT = sp.free_port()
LONG = {"temperature": 0, "max_new_tokens": 3000, "ignore_eos": True}


def auth(key):
    return {"Authorization": f"Bearer {key}"}


class Isolation(hh.ServerTest):
    extra_flags = ("--api-key", USER, "--admin-api-key", ADMIN, "--zmq-endpoint", f"tcp://127.0.0.1:{ZMQ_PORT}")

    def setUp(self):
        self.sockets = []

    def tearDown(self):
        for sock in self.sockets:
            sock.close()

    def zmq_client(self):
        sock = sp.connect(ZMQ_PORT)
        self.sockets.append(sock)
        return sock

    def post(self, path, body, key=USER):
        return self.server.post(path, body, headers=auth(key) if key else {})

    def expect_silent(self, *socks):
        """No reply yet on any of `socks` (their requests still run)."""
        for sock in socks:
            if sock.poll(300):
                self.fail(f"a reply came: {msgpack.unpackb(sock.recv(), raw=False)}")

    def expect_aborted(self, sock):
        reply = sp.wait_for_reply(self, sock, 30)
        self.assertNotIn("error", reply, reply)
        self.assertEqual(reply["meta_info"]["finish_reason"]["type"], "abort")
        return reply

    def test_rids_are_per_client_and_http_aborts_reach_http_requests_only(self):
        a, b = self.zmq_client(), self.zmq_client()
        for sock in (a, b):  # the same rid from two ZeroMQ clients: each its own
            sock.send(msgpack.packb({"rid": "job", "text": "Once upon a time", "sampling_params": LONG}))
        events, started = [], threading.Event()

        def stream():
            body = {"rid": "job", "text": "Once upon a time", "sampling_params": LONG, "stream": True}
            with hh.requests.post(self.server.url + "/generate", json=body, headers=auth(USER), stream=True,
                                  timeout=300) as reply:
                events.append(reply.status_code)
                for line in reply.iter_lines():
                    if line.startswith(b"data: {"):
                        events.append(json.loads(line[len(b"data: "):]))
                        started.set()

        http = threading.Thread(target=stream)
        http.start()
        self.assertTrue(started.wait(60), f"the HTTP request of the same rid did not start: {events}")
        self.expect_silent(a, b)

        aborted = self.post("/abort_request", {"rid": "job"})
        self.assertEqual((aborted.status_code, aborted.json()), (200, {"aborted": 1}))
        http.join(30)
        self.assertFalse(http.is_alive())
        self.assertEqual(events[-1]["meta_info"]["finish_reason"]["type"], "abort")
        self.expect_silent(a, b)  # the ZeroMQ clients' "job" runs on

        self.assertEqual(self.post("/abort_request", {"rid": "nothing-live"}).json(), {"aborted": 0})
        refused = self.post("/abort_request", {"abort_all": True})
        self.assertEqual(refused.status_code, 401, refused.text)
        self.assertIn("admin key", refused.json()["error"]["message"])
        self.expect_silent(a, b)

        every = self.post("/abort_request", {"abort_all": True}, key=ADMIN)
        self.assertEqual(every.json(), {"aborted": 2})
        for sock in (a, b):
            self.assertEqual(self.expect_aborted(sock)["meta_info"]["id"], "job")

        # A client reuses its own rid once its request ended.
        a.send(msgpack.packb({"rid": "job", "text": "Hello", "sampling_params": {"max_new_tokens": 4}}))
        again = sp.wait_for_reply(self, a, 60)
        self.assertNotIn("error", again, again)
        self.assertEqual(again["meta_info"]["id"], "job")

    def test_admin_endpoints_need_the_admin_key(self):
        for key in (USER, None, "wrong"):
            for path, body in (("/flush_cache", {}), ("/update_weights_from_disk", {"model_path": sp.MODEL})):
                with self.subTest(path=path, key=key):
                    reply = self.post(path, body, key=key)
                    self.assertEqual(reply.status_code, 401, reply.text)
                    self.assertIn("admin key", reply.json()["error"]["message"])
        self.assertEqual(self.post("/flush_cache", {}, key=ADMIN).status_code, 200)
        generated = self.post("/generate", {"text": "Hello", "sampling_params": {"max_new_tokens": 2}}, key=ADMIN)
        self.assertEqual(generated.status_code, 200)  # the admin key passes where the API key does
        info = hh.requests.get(self.server.url + "/get_server_info", headers=auth(USER), timeout=10).json()
        self.assertTrue(info["admin_api_key_required"])
        self.assertNotIn(ADMIN, str(info))

    def test_zeromq_admin_operations_need_the_admin_key(self):
        sock = self.zmq_client()
        operations = ({"op": "pause_generation", "mode": "in_place"}, {"op": "continue_generation"},
                      {"op": "update_weight_version", "new_version": "squatted"},
                      {"op": "update_weights_from_disk", "model_path": sp.MODEL, "weight_version": "squatted"})
        for key in (None, USER, "wrong"):
            for i, operation in enumerate(operations):
                with self.subTest(op=operation["op"], key=key):
                    request = dict(operation, rid=f"op{i}")
                    if key is not None:
                        request["admin_api_key"] = key
                    sock.send(msgpack.packb(request))
                    refused = sp.wait_for_reply(self, sock, 30)
                    self.assertEqual(refused["error"]["code"], 401, refused)
                    self.assertIn("admin", refused["error"]["message"])
                    self.assertEqual(refused["error"]["rid"], f"op{i}")
        # Nothing was paused or relabelled: a generation runs and carries the weights' own version.
        sock.send(msgpack.packb({"rid": "after", "text": "Hello", "sampling_params": {"max_new_tokens": 2}}))
        reply = sp.wait_for_reply(self, sock, 60)
        self.assertNotIn("error", reply, reply)
        self.assertNotEqual(reply["meta_info"]["weight_version"], "squatted")
        sock.send(msgpack.packb({"op": "update_weight_version", "rid": "v", "new_version": "relabelled",
                                 "admin_api_key": ADMIN}))
        relabelled = sp.wait_for_reply(self, sock, 30)
        self.assertTrue(relabelled["success"], relabelled)
        self.assertEqual(relabelled["weight_version"], "relabelled")

    def test_weight_update_errors_never_echo_file_content(self):
        with open("/etc/passwd", "rb") as f:
            secret = f.read(64)
        header_size = str(int.from_bytes(secret[:8], "little"))  # what a safetensors reader takes the bytes for
        directory = tempfile.mkdtemp(prefix="moe-linked-")
        self.addCleanup(shutil.rmtree, directory)
        for name, target in (("config.json", os.path.join(sp.MODEL, "config.json")),
                             ("model.safetensors", "/etc/passwd")):
            os.symlink(target, os.path.join(directory, name))
        config_linked = tempfile.mkdtemp(prefix="moe-linked-config-")
        self.addCleanup(shutil.rmtree, config_linked)
        os.symlink("/etc/passwd", os.path.join(config_linked, "config.json"))
        for checkpoint in (directory, config_linked):
            with self.subTest(checkpoint=checkpoint):
                reply = self.post("/update_weights_from_disk", {"model_path": checkpoint, "weight_version": "x"},
                                  key=ADMIN)
                self.assertEqual(reply.status_code, 400, reply.text)
                message = reply.json()["message"]
                self.assertIn(checkpoint, message)
                self.assertIn("could not be read as a checkpoint", message)
                for leaked in (header_size, secret[:4].decode(), secret[4:12].decode(errors="ignore")):
                    self.assertNotIn(leaked, message)
        answer = self.post("/generate", {"text": "Hello", "sampling_params": {"max_new_tokens": 2}})
        self.assertEqual(answer.json()["meta_info"]["weight_version"], "default")  # the weights at start serve on


if __name__ == "__main__":
    hh.run_tests()
