# bench/lib.sh — what the bench scripts share; sourced (`. "$HERE/lib.sh"`), never run.
#
# cpu_ns PID...   CPU time in ns of the given processes, every live thread counted, from the
#                 scheduler's own accounting (/proc/PID/task/*/schedstat: nanoseconds, where
#                 /proc/PID/stat counts 10 ms ticks). Every "µs of CPU per request" in
#                 bench/RESULTS.md is a difference of two of these divided by the requests.
#                 A thread that exits between the two reads takes its time with it: the servers
#                 measured keep theirs (the loop and the worker pool) for their whole life.
# cpu_ticks PID...  "USER SYS": user- and kernel-mode CPU of the given processes (every thread:
#                 /proc/PID/stat's utime and stime, fields 14 and 15) in clock ticks. Ticks are
#                 10 ms: over a 5 s run they give the share of a server's CPU spent in the kernel
#                 to a fraction of a per cent, which is all they are used for — the µs figures
#                 come from cpu_ns.
# free_port       a TCP port nothing listens on at 127.0.0.1 (python3 binds port 0 and closes).
# wait_port PORT  returns once something accepts on 127.0.0.1:PORT, 1 after 10 s.
# quietly CMD...  runs CMD with its output (stdout and stderr) kept aside: nothing shown when it
#                 succeeds; its last 60 lines on stderr when it fails, and its status returned
#                 (meson and ninja write their errors to stdout, apt-get its to either).
# run_timed FILE CMD...  runs CMD (a load generator: wrk, h2load) with its output in FILE, sets
#                 LOAD_CPU_S to the user + kernel CPU seconds it and its children took, and returns
#                 its status. Over a run of D seconds, LOAD_CPU_S / D near 1 says the client's
#                 core, not the server, set the pace: a ratio to nginx measured there is capped.

cpu_ns() {
  local p
  for p in "$@"; do cat /proc/"$p"/task/*/schedstat 2>/dev/null || true; done |
    awk '{s += $1} END {printf "%.0f", s}'
}

cpu_ticks() {
  local p
  for p in "$@"; do cat /proc/"$p"/stat 2>/dev/null || true; done |
    awk '{sub(/^.*\) /, ""); u += $12; s += $13} END {printf "%d %d", u, s}'
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

quietly() {
  local out rc=0
  out=$(mktemp /tmp/isv-quietly.XXXXXX)
  "$@" >"$out" 2>&1 || rc=$?
  [ "$rc" = 0 ] || tail -n 60 "$out" >&2
  rm -f "$out"
  return "$rc"
}

run_timed() {
  local f=$1 rc=0 TIMEFORMAT='%3U %3S'
  shift
  { time "$@" >"$f" 2>&1 || rc=$?; } 2>"$f.cpu"
  LOAD_CPU_S=$(awk 'END {printf "%.3f", $1 + $2}' "$f.cpu")
  return $rc
}
