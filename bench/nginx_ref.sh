# The nginx reference every REST/h2c comparison runs against (sourced by bench/run.sh,
# bench/rest_nginx.sh and bench/grpc_nginx.sh): one worker answering `return 200` with a fixed
# body, keep-alive without limit, no access log — so that every script compares the demo with
# the same server.
#
#   nginx_ref_conf DIR REST_PORT REST_BODY [H2_PORT GRPC_BODY]
#
# writes DIR/nginx.conf (logs and temp paths under DIR); with H2_PORT, a second server answers
# h2c there with a gRPC-shaped body and `grpc-status: 0`.
#
#   nginx_ref_json_body BYTES
#
# prints a JSON body of BYTES bytes (`{"x":"aaa…"}`): the REST answer nginx gives in place of the
# demo's, of the same size.
nginx_ref_json_body() {
  /usr/bin/python3 -c 'import sys; n=int(sys.argv[1]); print("{\"x\":\"" + "a" * (n - 8) + "\"}")' "$1"
}

nginx_ref_conf() {
  local dir=$1 rest_port=$2 rest_body=$3 h2_port=${4:-} grpc_body=${5:-} user_line="" h2=""
  [ "$(id -u)" = 0 ] && user_line="user root root;" # as root the worker would switch to nobody
  if [ -n "$h2_port" ]; then
    h2="  server {
    listen 127.0.0.1:$h2_port http2;
    location / { default_type application/grpc; add_trailer grpc-status 0; return 200 '$grpc_body'; }
  }"
  fi
  mkdir -p "$dir/logs"
  cat >"$dir/nginx.conf" <<EOF
$user_line
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/logs/error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  client_body_temp_path $dir/body;
  proxy_temp_path $dir/proxy;
  fastcgi_temp_path $dir/fastcgi;
  uwsgi_temp_path $dir/uwsgi;
  scgi_temp_path $dir/scgi;
  keepalive_requests 100000000;
  keepalive_timeout 300s;
  server {
    listen 127.0.0.1:$rest_port;
    location / { default_type application/json; return 200 '$rest_body'; }
  }
$h2
}
EOF
}
