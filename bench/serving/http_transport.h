#pragma once
// moe-bench over HTTP: SGLang's /generate or OpenAI's /v1/completions, streamed as server-sent
// events, every request in flight on one Asio event loop (no thread per request), connections
// kept alive and reused.
#include <memory>

#include "serving/bench_transport.h"
#include "serving/http_api.h"
#include "serving/http_url.h"

namespace moe::bench {

// A transport to `url` speaking `api`. The host is resolved here: a name that does not resolve is
// a moe::Error; a server that does not answer fails the requests, not the transport.
std::unique_ptr<StreamingTransport> make_http_transport(const HttpUrl& url, HttpApi api);

}  // namespace moe::bench
