# shellcheck shell=bash
# Sourced by the bench scripts that run one server at a time in the background: its pid, stop_server
# (also run on exit), wait_for_health and server_cpu_seconds.
server_pid=
stop_server() {
  [ -n "$server_pid" ] || return 0
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=
}
trap stop_server EXIT

# wait_for_health URL LOG: until URL/health answers; exits with LOG's tail when the server has died.
wait_for_health() {
  until curl -sf "$1/health" >/dev/null; do
    kill -0 "$server_pid" 2>/dev/null || { tail -20 "$2"; exit 1; }
    sleep 0.3
  done
}

# The server's CPU seconds so far (user + system): on a shared machine, steadier than wall time.
server_cpu_seconds() { awk '{printf "%.2f", ($14 + $15) / '"$(getconf CLK_TCK)"'}' "/proc/$server_pid/stat"; }
