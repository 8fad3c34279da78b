# bench/lib.sh — what the bench scripts share; sourced (`. "$HERE/lib.sh"`), never run.
#
# cpu_ns PID...   CPU time in ns of the given processes, every live thread counted, from the
#                 scheduler's own accounting (/proc/PID/task/*/schedstat: nanoseconds, where
#                 /proc/PID/stat counts 10 ms ticks). Every "µs of CPU per request" in
#                 bench/RESULTS.md is a difference of two of these divided by the requests.
#                 A thread that exits between the two reads takes its time with it: the servers
#                 measured keep theirs (the loop and the worker pool) for their whole life.
# free_port       a TCP port nothing listens on at 127.0.0.1 (python3 binds port 0 and closes).
# wait_port PORT  returns once something accepts on 127.0.0.1:PORT, 1 after 10 s.

cpu_ns() {
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null || true; done |
    awk '{s += $1} END {printf "%.0f", s}'
}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_port() {
  for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.1
  done
  return 1
}
